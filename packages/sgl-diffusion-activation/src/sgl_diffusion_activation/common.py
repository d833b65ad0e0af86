"""Plumbing shared by every activation op: the plan cache, the custom ops, the predicate.

Every op takes two operands and an optional ``out`` (unary: ``(x, bias)``; packed GLU:
``(x, bias)``; split GLU: ``(a, b)``), so one :class:`ElementwiseOp` serves them all: the
public functions in ``act_api`` / ``glu_api`` are thin, documented wrappers around it.

Eager calls go straight to a plan cached per call signature (``Dispatcher``). While
``torch.compile`` traces, calls go through two registered custom ops,
``torch.ops.sgl_diffusion.<name>`` (returns a new tensor) and ``<name>_out`` (writes into
``out``, declared as mutated, so that functionalization handles a preallocated ``out`` and
views of a bigger buffer), each with a fake implementation.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sgl_diffusion_core import Dispatcher, InputDesc, is_compiling, register_custom_op, resolve_target, select_impl

PKG = "sgl_diffusion_activation"


def _bind(fn, geom):
    def run(first, second, out):
        return fn(first, second, out, geom=geom)

    return run


def _empty(geom):
    def run(first, second, out):
        return torch.empty(geom.shape, dtype=geom.dtype, device=first.device) if out is None else out

    return run


class ElementwiseOp:
    """One activation op: id ``activation.<name>``, its describe function and its backends' entry name."""

    def __init__(self, name: str, describe: Callable[..., InputDesc], *, second: str, torch_module: str) -> None:
        self.name = name
        self.op_id = f"activation.{name}"
        self._describe = describe  # (first, second, out) -> InputDesc
        self._reference = f"{PKG}.{torch_module}:{name}"
        self.dispatch = Dispatcher(self.op_id, describe, bind=_bind, empty=_empty)
        first = "a" if second == "b" else "x"
        opt = "?" if second == "bias" else ""
        self.custom_op = register_custom_op(
            name, self._impl, self._fake,
            schema=f"(Tensor {first}, Tensor{opt} {second}, str? backend, bool? exact) -> Tensor",
        )
        self.custom_op_out = register_custom_op(
            f"{name}_out", self._impl_out, self._fake_out,
            schema=f"(Tensor {first}, Tensor{opt} {second}, Tensor(a!) out, str? backend, bool? exact) -> ()",
            mutates_args=("out",),
        )

    def __call__(self, first, second, out, backend, exact):
        if is_compiling():
            if out is None:
                return self.custom_op(first, second, backend, exact)
            self.custom_op_out(first, second, out, backend, exact)
            return out
        return self.dispatch.plan((first, second, out), backend, exact)(first, second, out)

    def can_use(self, first, second, out, backend, exact) -> bool:
        try:
            select_impl(self.op_id, self._describe(first, second, out), backend=backend, exact=exact)
            return True
        except Exception:
            return False

    def reference(self, first, second):
        return resolve_target(self._reference)(first, second)

    # --- custom ops ------------------------------------------------------------------------------

    def _impl(self, first, second, backend, exact):
        return self.dispatch.plan((first, second, None), backend, exact)(first, second, None)

    def _fake(self, first, second, backend, exact):
        self.dispatch.validate(first, second, None)
        shape = list(first.shape)
        dtype = first.dtype if second is None else torch.promote_types(first.dtype, second.dtype)
        if self.name.endswith("_and_mul"):
            shape[-1] = shape[-1] // 2
        return first.new_empty(shape, dtype=dtype)

    def _impl_out(self, first, second, out, backend, exact):
        self.dispatch.plan((first, second, out), backend, exact)(first, second, out)

    def _fake_out(self, first, second, out, backend, exact):
        self.dispatch.validate(first, second, out)
