"""``BitExactFusionGate``: trust a fused kernel for a call signature only after it matched eager.

A fused path whose exactness depends on reproducing an eager reduction order (an exact
norm, a mounted model site) starts ``pending`` for every call signature (shapes, strides,
dtypes, device, scalars such as eps). On the first eager call with that signature the gate
runs both the fused and the reference computation and compares them with ``torch.equal``
(NaNs in the same places count as equal): the signature becomes ``verified`` (fused from
then on) or ``fallback`` (reference forever, one warning naming the gate and the
signature).

Never verifies while ``torch.compile`` traces or a CUDA graph is being captured (the
comparison needs a host sync): there a pending signature runs the reference, and only
already verified signatures run fused. Thread-safe; states are inspectable.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Hashable
from typing import Any, Literal

import torch

State = Literal["pending", "verified", "fallback"]


class FusionFallbackWarning(UserWarning):
    """A fused path did not reproduce its reference for a call signature; eager is used for it."""


def call_signature(*args: Any) -> tuple:
    """A hashable signature of tensors (shape, strides, dtype, device) and plain values."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(("T", tuple(a.shape), a.stride(), a.dtype, a.device))
        elif isinstance(a, (list, tuple)):
            out.append(call_signature(*a))
        else:
            out.append(a)
    return tuple(out)


def _in_capture_or_trace() -> bool:
    if torch.compiler.is_compiling():
        return True
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def results_equal(a: Any, b: Any) -> bool:
    """``torch.equal`` over (nested tuples of) tensors; NaNs in the same positions are equal."""
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(results_equal, a, b))
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return a == b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):
        return True
    if not a.dtype.is_floating_point:
        return False
    both_nan = a.isnan() & b.isnan()
    return bool(both_nan.any()) and torch.equal(a.masked_fill(both_nan, 0), b.masked_fill(both_nan, 0))


class SignatureKey:
    """An interned stand-in for a static call signature (:meth:`BitExactFusionGate.key`): hashed
    and compared by identity, so a per-call signature built on it costs no nested-tuple hash."""

    __slots__ = ("signature",)

    def __init__(self, signature: tuple) -> None:
        self.signature = signature

    def __repr__(self) -> str:
        return repr(self.signature)


class BitExactFusionGate:
    """Per-signature verification of one fused path against its eager reference."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._states: dict[Hashable, State] = {}
        self._keys: dict[tuple, SignatureKey] = {}
        self._lock = threading.Lock()

    def key(self, signature: tuple) -> SignatureKey:
        """The one :class:`SignatureKey` of this static signature (a runner builds it once, then
        puts it in each call's ``sig`` beside the per-call values: alignment, scalars)."""
        with self._lock:
            return self._keys.setdefault(signature, SignatureKey(signature))

    def is_verified(self, sig: Hashable) -> bool:
        """Whether ``sig`` is verified (a runner's fast path: the fused call, nothing else)."""
        return self._states.get(sig) == "verified"

    def state(self, sig: Hashable) -> State:
        return self._states.get(sig, "pending")

    def states(self) -> dict[Hashable, State]:
        """A snapshot of every signature seen and its state."""
        return dict(self._states)

    def reset(self, sig: Hashable | None = None) -> None:
        """Forget one signature (or all): it is verified again on its next eager call."""
        with self._lock:
            if sig is None:
                self._states.clear()
            else:
                self._states.pop(sig, None)

    def run(self, fused: Callable[[], Any], reference: Callable[[], Any], *, sig: Hashable) -> Any:
        """``fused()`` once ``sig`` is verified, ``reference()`` on fallback; verify a pending ``sig``.

        Both callables must be free of side effects on their inputs (verification calls both).
        """
        st = self._states.get(sig)
        if st == "verified":
            return fused()
        if st == "fallback" or _in_capture_or_trace():
            return reference()
        with self._lock:
            st = self._states.get(sig)
            if st is None:
                out = fused()
                ref = reference()
                ok = results_equal(out, ref)
                self._states[sig] = "verified" if ok else "fallback"
                if not ok:
                    warnings.warn(
                        f"{self.name}: the fused path is not bit-exact to its reference for signature {sig}; "
                        "using the reference (eager) for this signature from now on",
                        FusionFallbackWarning,
                        stacklevel=2,
                    )
                return out if ok else ref
        return fused() if st == "verified" else reference()
