"""``qk_norm``: per-head RMSNorm or LayerNorm of q and k in one launch. Public entry points.

Validation, the predicate, backend selection (through ``sgl_diffusion_core.select_impl``)
and the custom-op registration live here; the kernel lives in ``qk_norm_triton.py``, the
executable spec (the eager chain) in ``qk_norm_torch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    check_tensors,
    device_arch,
    is_compiling,
    register_custom_op,
    resolve_target,
    same_memory,
    select_impl,
    tensor_platform,
    writable_problem,
)

OP = "norm.qk_norm"
NORMS = ("rms", "layer")


@dataclass(frozen=True)
class HeadGeometry:
    """One of q / k seen as rows ``(b, s, h)`` of ``D`` contiguous values."""

    B: int
    S: int
    H: int
    sb: int
    ss: int
    sh: int
    shape: tuple[int, ...]

    @property
    def rows(self) -> int:
        return self.B * self.S * self.H


@dataclass(frozen=True)
class Geometry:
    q: HeadGeometry
    k: HeadGeometry
    D: int
    norm: str
    inplace: bool


def _heads(name: str, t: torch.Tensor, problems: list[str]) -> HeadGeometry | None:
    if t.dim() != 4:
        problems.append(f"{name} must be [B, S, H, Dh], got shape {list(t.shape)}")
        return None
    B, S, H, D = t.shape
    if D > 1 and t.stride(3) != 1:
        problems.append(f"{name}: last dim (Dh) must be contiguous (stride 1), got strides {list(t.stride())}")
        return None
    return HeadGeometry(B, S, H, t.stride(0), t.stride(1), t.stride(2), tuple(t.shape))


def describe_qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
) -> InputDesc:
    """Validate the arguments of ``qk_norm`` and describe them for backend selection."""
    problems: list[str] = []
    if norm not in NORMS:
        problems.append(f"norm must be 'rms' or 'layer', got {norm!r}")
    tensors = {"q": q, "k": k}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if problems and not all(isinstance(t, torch.Tensor) for t in tensors.values()):
        check_tensors({"q_weight": q_weight, "k_weight": k_weight}, None, problems)
        return InputDesc(platform=None, problems=problems)
    platform = tensor_platform(q.device)
    arch = device_arch(platform, q.device.index) if platform in ("cuda", "hip") else None
    dtypes = check_tensors({"q": q, "k": k, "q_weight": q_weight, "k_weight": k_weight}, q.device, problems)
    desc = InputDesc(platform, arch, tuple(dtypes), q.shape[-1] if q.dim() else None, (), problems)
    desc.info = {"geom": None, "empty": False}
    if problems:
        return desc
    gq = _heads("q", q, problems)
    gk = _heads("k", k, problems)
    if gq is None or gk is None:
        return desc
    D = q.shape[-1]
    if k.shape[-1] != D:
        problems.append(f"q and k must have the same head size: q has Dh={D}, k has Dh={k.shape[-1]}")
    for name, w in (("q_weight", q_weight), ("k_weight", k_weight)):
        if w is not None and (tuple(w.shape) != (D,) or (D > 1 and w.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [Dh] = [{D}] tensor, got shape {list(w.shape)} "
                            f"strides {list(w.stride())}")
    if inplace:
        for name, t in tensors.items():
            why = writable_problem(name, t)
            if why:
                problems.append(f"inplace=True: {why}; pass inplace=False")
        why = _aliasing(q, k)
        if why:
            problems.append(why)
    desc.info = {"geom": None if problems else Geometry(gq, gk, D, norm, bool(inplace)),
                 "empty": q.numel() == 0 and k.numel() == 0}
    return desc


def _empty_runner(geom: Geometry):
    if geom.inplace:
        def run(q, k, q_weight, k_weight, eps):
            return q, k
    else:
        def run(q, k, q_weight, k_weight, eps):
            return (torch.empty(geom.q.shape, dtype=q.dtype, device=q.device),
                    torch.empty(geom.k.shape, dtype=k.dtype, device=k.device))
    return run


def _bind(fn, geom: Geometry):
    def run(q, k, q_weight, k_weight, eps):
        return fn(q, k, q_weight, k_weight, norm=geom.norm, eps=eps, inplace=geom.inplace, geom=geom)

    return run


def _aliasing(q: torch.Tensor, k: torch.Tensor, *_: object) -> str | None:
    """In place, q and k must not start at the same address: checked on every call (the plan
    cache keys on shapes and strides, not addresses) through the Dispatcher's ``per_call``."""
    if same_memory(q, k):
        return "inplace=True: q and k start at the same address; they must be distinct tensors"
    return None


def _make_dispatcher(norm: str, inplace: bool) -> Dispatcher:
    return Dispatcher(
        OP,
        lambda q, k, qw, kw: describe_qk_norm(q, k, qw, kw, norm=norm, inplace=inplace),
        bind=_bind,
        empty=_empty_runner,
        per_call=_aliasing if inplace else None,
    )


# one plan cache per (norm, inplace): both change the kernel, neither is a tensor
_DISPATCH = {(n, ip): _make_dispatcher(n, ip) for n in NORMS for ip in (False, True)}


def _plan(q, k, q_weight, k_weight, norm, inplace, backend, exact):
    d = _DISPATCH.get((norm, bool(inplace))) if isinstance(norm, str) else None
    if d is None:  # an invalid norm: select_impl raises with the problem spelled out
        select_impl(OP, describe_qk_norm(q, k, q_weight, k_weight, norm=norm, inplace=inplace),
                    backend=backend, exact=exact)
    return d.plan((q, k, q_weight, k_weight), backend, exact)


def qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head ``RMSNorm`` (``norm="rms"``) or ``LayerNorm`` (``norm="layer"``) of q and k over
    the head dim, both in one launch.

    rms:   ``y = x * rsqrt(mean(x.float()**2, -1) + eps) * weight``
    layer: ``y = F.layer_norm(x, (Dh,), weight, None, eps)``

    q: ``[B, S, Hq, Dh]``, k: ``[B', S', Hk, Dh]``, bf16 | fp16 | fp32; last dim contiguous, any
        other strides (e.g. ``qkv.view(B, S, 3, H, Dh)[:, :, 0]``); q and k may differ in every
        dim but Dh (GQA: Hk != Hq) and in dtype.
    q_weight, k_weight: contiguous ``[Dh]`` or None (no affine); any float dtype.
    inplace: write into q and k and return them (q and k must not overlap themselves).
    exact: ``True`` asks for a backend whose result is ``torch.equal`` to the eager chain of
        ``qk_norm_reference`` (the ``torch`` backend); ``None``/``False`` also accept ``close``
        (Triton: fp32 statistics and one rounding, tolerances in the registry spec).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``; an explicit backend that
        cannot serve raises.

    Returns ``(q_out, k_out)``: new contiguous tensors shaped and typed like q and k, or q and k
    themselves when ``inplace``. Raises ``UnsupportedInputError`` naming every reason when no
    backend can serve the inputs.
    """
    if is_compiling():
        if inplace:
            _custom_op_inplace(q, k, q_weight, k_weight, norm, float(eps), exact, backend)
            return q, k
        return _custom_op(q, k, q_weight, k_weight, norm, float(eps), exact, backend)
    return _plan(q, k, q_weight, k_weight, norm, inplace, backend, exact)(q, k, q_weight, k_weight, eps)


def can_use_qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool:
    """Whether ``qk_norm`` can serve these arguments (never raises, never allocates)."""
    try:
        desc = describe_qk_norm(q, k, q_weight, k_weight, norm=norm, inplace=inplace)
        select_impl(OP, desc, backend=backend, exact=exact)
        return True
    except Exception:
        return False


def qk_norm_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The eager chain itself (the ``torch`` backend): the definition of the exact contract."""
    fn = resolve_target("sgl_diffusion_norm.qk_norm_torch:qk_norm")
    return fn(q, k, q_weight, k_weight, norm=norm, eps=eps, inplace=inplace)


# --- custom ops: the path torch.compile traces ------------------------------------------------

def _op_impl(q, k, q_weight, k_weight, norm, eps, exact, backend):
    return _plan(q, k, q_weight, k_weight, norm, False, backend, exact)(q, k, q_weight, k_weight, eps)


def _op_fake(q, k, q_weight, k_weight, norm, eps, exact, backend):
    d = _DISPATCH.get((norm, False))
    if d is None:
        raise ValueError(f"qk_norm: norm must be 'rms' or 'layer', got {norm!r}")
    d.validate(q, k, q_weight, k_weight)
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(k.shape, dtype=k.dtype, device=k.device))


def _op_impl_inplace(q, k, q_weight, k_weight, norm, eps, exact, backend):
    _plan(q, k, q_weight, k_weight, norm, True, backend, exact)(q, k, q_weight, k_weight, eps)


def _op_fake_inplace(q, k, q_weight, k_weight, norm, eps, exact, backend):
    d = _DISPATCH.get((norm, True))
    if d is None:
        raise ValueError(f"qk_norm: norm must be 'rms' or 'layer', got {norm!r}")
    d.validate(q, k, q_weight, k_weight)


_custom_op = register_custom_op(
    "qk_norm",
    _op_impl,
    _op_fake,
    schema="(Tensor q, Tensor k, Tensor? q_weight, Tensor? k_weight, str norm, float eps, bool? exact, "
    "str? backend) -> (Tensor, Tensor)",
)
_custom_op_inplace = register_custom_op(
    "qk_norm_",
    _op_impl_inplace,
    _op_fake_inplace,
    schema="(Tensor(a!) q, Tensor(b!) k, Tensor? q_weight, Tensor? k_weight, str norm, float eps, bool? exact, "
    "str? backend) -> ()",
    mutates_args=("q", "k"),
)
