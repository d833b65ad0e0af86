"""``quantize_fp8``: row-wise or tensor-wise FP8 quantization with fp32 scales.

Backends: ``quantize_fp8_triton`` (``triton``: one program per row, in the device's FP8 format) and
``quantize_fp8_torch`` (the eager reference, any device, both formats). Contract ``close``: one FP8
ulp on the codes (see ``_specs.QUANT_CLOSE``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op, device_arch, is_compiling, tensor_platform, vendor

from . import _specs as S
from ._geometry import fp8_name, row_stride

GRANULARITIES = ("row", "tensor")


@dataclass(frozen=True)
class QuantGeometry:
    """What the backends of ``quantize_fp8`` get as ``geom``."""

    shape: tuple[int, ...]
    D: int
    rows: int
    row_stride: int | None
    granularity: str
    dtype: torch.dtype
    fp8_max: float

    @property
    def scale_shape(self) -> tuple[int, ...]:
        return (*self.shape[:-1], 1) if self.granularity == "row" else ()


def describe_quantize_fp8(x: torch.Tensor, granularity: str = "row",
                          dtype: torch.dtype = torch.float8_e4m3fn, **_: object) -> InputDesc:
    """Validate the arguments of ``quantize_fp8`` and describe them for backend selection."""
    problems: list[str] = []
    if not isinstance(x, torch.Tensor):
        return InputDesc(platform=None, problems=[f"x must be a torch.Tensor, got {type(x).__name__}"])
    if granularity not in GRANULARITIES:
        problems.append(f"granularity is {granularity!r}; expected 'row' or 'tensor'")
    fmt = fp8_name(dtype, problems)
    src = str(x.dtype).removeprefix("torch.")
    if src not in S.HIGH:
        problems.append(f"x has dtype {x.dtype}; expected bfloat16, float16 or float32")
    if x.dim() == 0:
        problems.append("x is a 0-d tensor; expected [..., D]")
    elif x.shape[-1] == 0:
        problems.append(f"x has an empty last dim (shape {list(x.shape)}); expected D >= 1")
    elif x.stride(-1) != 1 and x.shape[-1] != 1:
        problems.append(f"x's last dim has stride {x.stride(-1)}; expected 1 (contiguous rows)")
    platform = tensor_platform(x.device)
    arch = device_arch(platform, x.device.index) if platform in ("cuda", "hip") else None
    if problems:
        return InputDesc(platform, arch, problems=problems)
    stride = row_stride(x)
    layout = S.LAYOUT_ROWS if stride is not None else S.LAYOUT_IRREGULAR
    native = S.LAYOUT_NATIVE if vendor.fp8_native(platform, arch, fmt) else S.LAYOUT_FOREIGN
    D = x.shape[-1]
    geom = QuantGeometry(tuple(x.shape), D, x.numel() // D, stride, granularity, dtype, S.FP8_MAX[fmt])
    return InputDesc(platform, arch, (src, fmt), D, (layout, native), problems,
                     info={"geom": geom, "empty": x.numel() == 0})


def _empty(geom: QuantGeometry):
    def run(x, *_):
        q = torch.empty(geom.shape, dtype=geom.dtype, device=x.device)
        return q, torch.full(geom.scale_shape, S.MIN_AMAX / geom.fp8_max, device=x.device)

    return run


QUANTIZE_FP8 = Op(
    "quant.quantize_fp8",
    distribution=S.DISTRIBUTION,
    summary="x -> (clamp(x / scale, +-fp8_max).to(fp8), scale), scale = max(amax, 1e-12) / fp8_max per row or tensor",
    describe=describe_quantize_fp8,
    n_tensors=1,
    reference=".quantize_fp8_torch:quantize_fp8",
    backends=[
        Backend("triton", ".quantize_fp8_triton", S.QUANT_TRITON_CAPS, S.QUANT_CLOSE, priority=10,
                notes=S.QUANT_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".quantize_fp8_torch", S.QUANT_TORCH_CAPS, S.QUANT_CLOSE, notes=S.QUANT_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=_empty,
    bench=f"{S.BENCH}:quantize_fp8_cases",
)


@QUANTIZE_FP8.entry
def quantize_fp8(x: torch.Tensor, *, granularity: str = "row", dtype: torch.dtype = torch.float8_e4m3fn,
                 backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``scale = max(amax(|x|), 1e-12) / fp8_max``; ``x_fp8 = clamp(x / scale, -fp8_max, fp8_max).to(dtype)``.

    ``amax`` is taken in fp32 over each row (``granularity="row"``) or over the whole tensor
    (``"tensor"``); ``x ~= x_fp8.float() * scale``. The division is IEEE fp32, the conversion
    rounds to nearest, ties to even. Saturation: ``|x / scale|`` exceeds ``fp8_max`` only by the
    rounding of the scale, and is clamped to it; no finite input becomes NaN. An all-zero row gets
    ``scale = 1e-12 / fp8_max`` and zero codes. A row (or tensor) holding inf or NaN gets a
    non-finite scale.

    x: ``[..., D]`` bf16 | fp16 | fp32, D >= 1, last dim contiguous, any leading strides.
    dtype: ``torch.float8_e4m3fn`` (fp8_max 448; NVIDIA sm_89+, AMD gfx950) or
        ``torch.float8_e4m3fnuz`` (fp8_max 240; AMD gfx942).
    Returns ``(x_fp8, scale)``: ``x_fp8`` ``[..., D]`` of ``dtype``, contiguous; ``scale`` fp32,
        ``[..., 1]`` (row) or ``[]`` (tensor).
    backend: ``None`` (best for the inputs), ``"triton"`` (the device's own format; both under the
        interpreter) or ``"torch"`` (the reference, both formats anywhere). Contract ``close``: one
        FP8 ulp on the codes.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    options = (("granularity", granularity), ("dtype", dtype))
    if is_compiling():
        return _quantize_fp8_op(x, granularity, dtype, backend)
    return QUANTIZE_FP8.plan((x,), backend, None, options)(x)


def _fake(x, granularity, dtype, backend):
    geom = QUANTIZE_FP8.checked(x, options=(("granularity", granularity), ("dtype", dtype))).info["geom"]
    return x.new_empty(x.shape, dtype=dtype), x.new_empty(geom.scale_shape, dtype=torch.float32)


can_use_quantize_fp8 = QUANTIZE_FP8.can_use
quantize_fp8_reference = QUANTIZE_FP8.reference
_quantize_fp8_op = QUANTIZE_FP8.custom_op(
    "quantize_fp8", fake=_fake, keyed=("granularity", "dtype"),
    schema="(Tensor x, str granularity, ScalarType dtype, str? backend) -> (Tensor, Tensor)",
)
