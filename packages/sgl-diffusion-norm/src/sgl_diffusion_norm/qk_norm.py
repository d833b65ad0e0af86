"""``qk_norm``: per-head RMSNorm or LayerNorm of q and k over the head dim, in one launch.

Backends: ``qk_norm_triton`` (one launch for q and k, contract ``close``) and ``qk_norm_torch``
(the eager chain, the definition of the exact contract).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Backend,
    Capabilities,
    Contract,
    InputDesc,
    Op,
    check_tensors,
    device_arch,
    is_compiling,
    same_memory,
    tensor_platform,
    writable_problem,
)

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
        why = _aliasing(q, k, inplace=True)
        if why:
            problems.append(why)
    desc.info = {"geom": None if problems else Geometry(gq, gk, D, norm, bool(inplace)),
                 "empty": q.numel() == 0 and k.numel() == 0}
    return desc


def _aliasing(q: torch.Tensor, k: torch.Tensor, *_: object, inplace: bool = False, **__: object) -> str | None:
    """In place, q and k must not start at the same address: checked on every call (the plan
    cache keys on shapes and strides, not addresses)."""
    if inplace and same_memory(q, k):
        return "inplace=True: q and k start at the same address; they must be distinct tensors"
    return None


def empty_result(geom: Geometry):
    """The runner of empty q and k: q and k themselves in place, else new empty tensors."""
    if geom.inplace:
        def run(q, k, *_):
            return q, k
    else:
        def run(q, k, *_):
            return (torch.empty(geom.q.shape, dtype=q.dtype, device=q.device),
                    torch.empty(geom.k.shape, dtype=k.dtype, device=k.device))
    return run


_GPU = dict(platforms=("cuda", "hip"), min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
            interpretable=True, requires=("triton",))

QK_NORM = Op(
    "norm.qk_norm",
    distribution="sgl-diffusion-norm",
    summary="per-head RMSNorm / LayerNorm of q and k over head_dim (one launch, optional in place)",
    describe=describe_qk_norm,
    n_tensors=4,
    reference=".qk_norm_torch:qk_norm",
    backends=[
        Backend("triton", ".qk_norm_triton", Capabilities(**_GPU, max_last_dim=4096), Contract.close(), priority=10,
                notes="one launch for q and k; 2-D tiles of ~4 KB (heads x Dh) per program, fp32 statistics",
                aot="aot_variants", executed_on=("sm_90", "cpu-interpreter")),
        Backend("torch", ".qk_norm_torch", Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu")),
                Contract.exact(),
                notes="the eager chain (diffusers RMSNorm / F.layer_norm) op by op: the definition of exact",
                executed_on=("cpu",)),
    ],
    default_exact=False,
    empty=empty_result,
    per_call=_aliasing,
    bench="benchmarks/qk_norm_bench.py:qk_norm_cases",
)


@QK_NORM.entry
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
    opts = (("inplace", True), ("norm", norm)) if inplace else (("norm", norm),)
    return QK_NORM.plan((q, k, q_weight, k_weight), backend, exact, opts)(q, k, q_weight, k_weight, norm, eps)


can_use_qk_norm = QK_NORM.can_use
qk_norm_reference = QK_NORM.reference


def _fake(q, k, q_weight, k_weight, norm, eps, exact, backend):
    QK_NORM.validate(q, k, q_weight, k_weight, options=(("norm", norm),))
    return (torch.empty(q.shape, dtype=q.dtype, device=q.device),
            torch.empty(k.shape, dtype=k.dtype, device=k.device))


def _fake_inplace(q, k, q_weight, k_weight, norm, eps, exact, backend):
    QK_NORM.validate(q, k, q_weight, k_weight, options=(("inplace", True), ("norm", norm)))


_custom_op = QK_NORM.custom_op(
    "qk_norm", fake=_fake, keyed=("norm",),
    schema="(Tensor q, Tensor k, Tensor? q_weight, Tensor? k_weight, str norm, float eps, bool? exact, "
    "str? backend) -> (Tensor, Tensor)",
)
_custom_op_inplace = QK_NORM.custom_op(
    "qk_norm_", fake=_fake_inplace, keyed=("norm",), options={"inplace": True}, mutates_args=("q", "k"),
    schema="(Tensor(a!) q, Tensor(b!) k, Tensor? q_weight, Tensor? k_weight, str norm, float eps, bool? exact, "
    "str? backend) -> ()",
)
