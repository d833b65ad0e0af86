"""``ln_modulate``: LayerNorm + adaLN modulation in one pass. Public entry points.

Validation, the predicate, backend selection (through ``sgl_diffusion_core.select_impl``)
and the custom-op registration live here; kernels live in ``ln_modulate_triton.py``, the
executable spec in ``ln_modulate_torch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    InputDesc,
    PlanCache,
    UnsupportedInputError,
    device_arch,
    dtype_name,
    is_compiling,
    register_custom_op,
    resolve_target,
    select_impl,
    tensor_platform,
    tensor_sig,
)

OP = "norm.ln_modulate"


@dataclass(frozen=True)
class ModLayout:
    """Where row ``(b, s)`` finds its modulation vector: ``base + b*sb + (s // L)*ss``."""

    tag: str  # per-channel | per-sample | per-token | per-frame
    sb: int
    ss: int
    L: int


@dataclass(frozen=True)
class Geometry:
    """Everything a backend needs beyond the tensors, computed once per call signature."""

    B: int
    S: int
    D: int
    x_sb: int
    x_ss: int
    out_shape: tuple[int, ...]
    scale: ModLayout
    shift: ModLayout | None


def _mod_layout(name: str, t: torch.Tensor, B: int, S: int, D: int, x2d: bool, problems: list[str]) -> ModLayout | None:
    shape = tuple(t.shape)
    want = "[N, D] or [D] / [1, D]" if x2d else "[D], [B, D], [B, 1, D], [B, S, D] or [B, F, 1, D]"
    if t.dim() == 0 or shape[-1] != D:
        problems.append(f"{name} of shape {list(shape)} does not broadcast against x (D={D}); expected {want}")
        return None
    if D > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got stride {t.stride(-1)}")
        return None

    def bstride(size: int, stride: int) -> int | None:
        if size == B:
            return stride if B > 1 else 0
        return 0 if size == 1 else None

    lay: ModLayout | None = None
    if t.dim() == 1:
        lay = ModLayout("per-channel", 0, 0, 1)
    elif x2d and t.dim() == 2:
        if shape[0] == S and S != 1:
            lay = ModLayout("per-token", 0, t.stride(0), 1)
        elif shape[0] == 1:
            lay = ModLayout("per-sample", 0, 0, 1)
    elif not x2d and t.dim() == 2:
        sb = bstride(shape[0], t.stride(0))
        if sb is not None:
            lay = ModLayout("per-sample", sb, 0, 1)
    elif not x2d and t.dim() == 3:
        sb = bstride(shape[0], t.stride(0))
        if sb is not None and shape[1] == 1:
            lay = ModLayout("per-sample", sb, 0, 1)
        elif sb is not None and shape[1] == S:
            lay = ModLayout("per-token", sb, t.stride(1), 1)
    elif not x2d and t.dim() == 4 and shape[2] == 1:
        sb = bstride(shape[0], t.stride(0))
        F = shape[1]
        if sb is not None and F > 0 and S % F == 0:
            lay = ModLayout("per-frame", sb, t.stride(1), max(S // F, 1))
        elif sb is not None:
            problems.append(f"{name}: per-frame layout [B, F, 1, D] needs S divisible by F, got S={S}, F={F}")
            return None
    if lay is None:
        problems.append(f"{name} of shape {list(shape)} does not broadcast against x of shape "
                        f"{[B, S, D] if not x2d else [S, D]}; expected {want}")
    return lay


def describe_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> InputDesc:
    """Validate the arguments of ``ln_modulate`` and describe them for backend selection."""
    problems: list[str] = []
    tensors = {"x": x, "scale": scale, "shift": shift, "weight": weight, "bias": bias}
    for name, t in tensors.items():
        if t is not None and not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if problems or not isinstance(x, torch.Tensor) or not isinstance(scale, torch.Tensor):
        if not isinstance(scale, torch.Tensor) and "scale" not in " ".join(problems):
            problems.append("scale must be a torch.Tensor")
        return InputDesc(platform=None, problems=problems)
    platform = tensor_platform(x.device)
    arch = device_arch(platform, x.device.index) if platform in ("cuda", "hip") else None
    dtypes = []
    for name, t in tensors.items():
        if t is None:
            continue
        if t.device != x.device:
            problems.append(f"{name} is on {t.device}, x is on {x.device}: all tensors must be on one device")
        if not t.dtype.is_floating_point:
            problems.append(f"{name} has dtype {t.dtype}; expected bfloat16, float16 or float32")
        else:
            dtypes.append(dtype_name(t.dtype))
    if x.dim() not in (2, 3):
        problems.append(f"x must be [B, S, D] or [N, D], got shape {list(x.shape)}")
        return InputDesc(platform, arch, tuple(dict.fromkeys(dtypes)), None, (), problems)
    x2d = x.dim() == 2
    B, S, D = (1, *x.shape) if x2d else tuple(x.shape)
    if D > 1 and x.stride(-1) != 1:
        problems.append(f"x: last dim must be contiguous (stride 1), got strides {list(x.stride())}")
    x_sb = 0 if x2d else x.stride(0)
    x_ss = x.stride(0) if x2d else x.stride(1)
    for name in ("weight", "bias"):
        t = tensors[name]
        if t is not None and (tuple(t.shape) != (D,) or (D > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [D] = [{D}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")
    sc = _mod_layout("scale", scale, B, S, D, x2d, problems)
    sh = _mod_layout("shift", shift, B, S, D, x2d, problems) if shift is not None else None
    layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    geom = None
    if not problems:
        geom = Geometry(B, S, D, x_sb, x_ss, tuple(x.shape), sc, sh)
    return InputDesc(platform, arch, tuple(dict.fromkeys(dtypes)), D, layouts, problems, {"geom": geom})


_PLANS = PlanCache()


def _empty_plan(geom: Geometry):
    def run(x, scale, shift, weight, bias, eps, scale_offset, _shape=geom.out_shape):
        return torch.empty(_shape, dtype=x.dtype, device=x.device)

    return run


def _plan(x, scale, shift, weight, bias, backend):
    """The runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` for this call signature."""
    try:
        key = (tensor_sig(x), tensor_sig(scale), tensor_sig(shift), tensor_sig(weight), tensor_sig(bias), backend)
    except AttributeError:  # a non-tensor argument: let describe() name it
        key = None
    plan = _PLANS.get(key) if key is not None else None
    if plan is None:
        desc = describe_ln_modulate(x, scale, shift, weight=weight, bias=bias)
        spec = select_impl(OP, desc, backend=backend)
        geom: Geometry = desc.info["geom"]
        if x.numel() == 0:
            plan = _empty_plan(geom)
        else:
            fn = spec.load()
            prepare = getattr(fn, "prepare", None)  # a backend may precompute its launch per signature
            if prepare is not None:
                plan = prepare(geom, x, scale, shift, weight, bias)
            else:

                def plan(x, scale, shift, weight, bias, eps, scale_offset, _fn=fn, _geom=geom):
                    return _fn(x, scale, shift, weight=weight, bias=bias, eps=eps, scale_offset=scale_offset,
                               geom=_geom)

        if key is not None:
            _PLANS.put(key, plan)
    return plan


def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> torch.Tensor:
    """``LayerNorm(x)[* weight + bias] * (scale_offset + scale) + shift`` in one pass.

    The norm runs over the last dim with fp32 statistics; the result is rounded once to
    ``x.dtype`` (contract ``close``, tolerances in the registry spec).

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale, shift: broadcast per channel ``[D]``; per sample ``[B, D]`` or ``[B, 1, D]``
        (B may be 1); per token ``[B, S, D]`` (``[N, D]`` for 2-D x), strided views allowed
        (e.g. a chunk of a ``[B, S, 6*D]`` projection); per frame ``[B, F, 1, D]`` with
        ``S = F * L``: frame ``f`` covers tokens ``f*L .. (f+1)*L - 1``. Last dim contiguous;
        any float dtype (math in fp32). ``shift=None`` means 0.
    weight, bias: optional LayerNorm affine, contiguous ``[D]``.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``; an explicit backend
        that cannot serve raises.

    Returns a new contiguous tensor shaped like x. Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _custom_op(x, scale, shift, weight, bias, float(eps), float(scale_offset), backend)
    return _plan(x, scale, shift, weight, bias, backend)(x, scale, shift, weight, bias, eps, scale_offset)


def can_use_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool:
    """Whether ``ln_modulate`` can serve these arguments (never raises, never allocates)."""
    try:
        desc = describe_ln_modulate(x, scale, shift, weight=weight, bias=bias)
        select_impl(OP, desc, backend=backend)
        return True
    except Exception:
        return False


def ln_modulate_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> torch.Tensor:
    """The executable spec (the ``torch`` backend), for tests and benchmarks: fp32 eager PyTorch."""
    fn = resolve_target("sgl_diffusion_norm.ln_modulate_torch:ln_modulate")
    return fn(x, scale, shift, weight=weight, bias=bias, eps=eps, scale_offset=scale_offset)


# --- custom op: the path torch.compile traces -------------------------------------------------

def _op_impl(x, scale, shift, weight, bias, eps, scale_offset, backend):
    return _plan(x, scale, shift, weight, bias, backend)(x, scale, shift, weight, bias, eps, scale_offset)


def _op_fake(x, scale, shift, weight, bias, eps, scale_offset, backend):
    if all(isinstance(d, int) for d in x.shape):
        desc = describe_ln_modulate(x, scale, shift, weight=weight, bias=bias)
        if desc.problems:
            raise UnsupportedInputError(f"{OP}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems))
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


_custom_op = register_custom_op(
    "ln_modulate",
    _op_impl,
    _op_fake,
    schema="(Tensor x, Tensor scale, Tensor? shift, Tensor? weight, Tensor? bias, float eps, "
    "float scale_offset, str? backend) -> Tensor",
)
