"""``fp8_linear``: a row-wise scaled FP8 linear layer with fused epilogues.

Backends: ``fp8_linear_triton`` (``triton``: a tiled FP8 GEMM with the scales, bias and epilogue
fused), ``fp8_linear_torch:prepare_scaled_mm`` (``scaled_mm``: ``torch._scaled_mm``, CUDA sm_90+, bf16,
the product without an epilogue) and ``fp8_linear_torch`` (the reference, any device).
``backend=None`` (``_SIZE_CHOOSER``): ``scaled_mm`` for a plain product (no epilogue) of at least
``SCALED_MM_MIN_FLOPS``, the Triton GEMM otherwise. Measured on one H100
(docs/benchmarks/fp8_linear_bench_h100.json): a plain product through cuBLAS with fp32 accumulation ran
at 1.40-1.43x bf16 ``F.linear`` at FLUX.1's and Wan2.1-14B's projections, the Triton GEMM with the same
accumulation at 1.04x; but one ``torch._scaled_mm`` call costs about 63 us of host time against
31 us for the Triton launch, which in eager mode outweighs cuBLAS's GPU saving on products of less
than about 2e11 FLOPs (FLUX.1's 4608 x 3072 x 3072 projection: 67 against 82 us on the GPU with fast
sums). An epilogue fused in the Triton GEMM saves its separate passes over the output (and the gated
residual must be fused: its sum cancels below a bf16 product's rounding).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op, RuleChooser, device_arch, is_compiling, tensor_platform

from . import _specs as S
from ._geometry import fp8_name, linear_device_problem, row_stride


@dataclass(frozen=True)
class LinearGeometry:
    """What the backends of ``fp8_linear`` get as ``geom``."""

    lead: tuple[int, ...]
    M: int
    N: int
    K: int
    x_stride: int
    res_stride: int
    x_rowwise: bool
    w_rowwise: bool
    has_bias: bool
    epilogue: str | None
    gate_rows: int  # rows per gate row: S of a per-sample [B, 1, N] gate, 0 for a [N] gate
    out_dtype: torch.dtype
    fast_accum: bool = False  # accumulate="fast"


def _rows_problem(name: str, t: torch.Tensor, problems: list[str]) -> int:
    if t.dim() == 0 or (t.stride(-1) != 1 and t.shape[-1] != 1):
        problems.append(f"{name} (shape {list(t.shape)}, strides {list(t.stride())}) needs a contiguous last dim")
        return 0
    stride = row_stride(t)
    if stride is None:
        problems.append(f"{name}'s leading dims (strides {list(t.stride())}) do not collapse into one row stride")
        return 0
    return stride


def _scale_kind(name: str, s: object, rows: tuple[int, ...], what: str, problems: list[str]) -> bool:
    """True for a per-row scale ``[*rows, 1]`` (or ``[rows]`` for a weight), False for one value."""
    if not isinstance(s, torch.Tensor) or s.dtype != torch.float32:
        got = s.dtype if isinstance(s, torch.Tensor) else type(s).__name__
        problems.append(f"{name} is {got}; expected a float32 tensor")
        return False
    if s.numel() == 1 and s.dim() <= 1:
        return False
    shapes = [(*rows, 1)] + ([rows] if what == "weight" else [])
    if tuple(s.shape) not in shapes or not s.is_contiguous():
        want = " or ".join(str(list(sh)) for sh in shapes)
        problems.append(f"{name} has shape {list(s.shape)}{'' if s.is_contiguous() else ' (not contiguous)'}; "
                        f"expected {want} (one scale per {what} row, contiguous) or a single value")
    return True


def _epilogue_tensors(x, N, epilogue, residual, gate, out_dtype, problems) -> tuple[int, int]:
    """``(residual row stride, gate_rows)``; problems for the epilogue's tensors."""
    if epilogue not in S.EPILOGUES:
        problems.append(f"epilogue is {epilogue!r}; expected None, 'gelu_tanh' or 'gated_residual'")
        return 0, 0
    if epilogue != "gated_residual":
        if residual is not None or gate is not None:
            problems.append(f"residual and gate belong to epilogue='gated_residual' (epilogue is {epilogue!r})")
        return 0, 0
    if not isinstance(residual, torch.Tensor) or not isinstance(gate, torch.Tensor):
        problems.append("epilogue='gated_residual' needs residual and gate tensors")
        return 0, 0
    out_shape = (*x.shape[:-1], N)
    if tuple(residual.shape) != out_shape or residual.dtype != out_dtype:
        problems.append(f"residual is {list(residual.shape)} {residual.dtype}; expected {list(out_shape)} {out_dtype}")
    res_stride = _rows_problem("residual", residual, problems)
    if not gate.dtype.is_floating_point or gate.dtype.itemsize < 2 or not gate.is_contiguous():
        problems.append(f"gate has dtype {gate.dtype}; expected a contiguous bf16, fp16 or fp32 tensor")
    if tuple(gate.shape) == (N,):
        return res_stride, 0
    if x.dim() == 3 and tuple(gate.shape) == (x.shape[0], 1, N):
        return res_stride, x.shape[1]
    problems.append(f"gate has shape {list(gate.shape)}; expected [{N}] or, for x_fp8 [B, S, K], [B, 1, {N}]")
    return res_stride, 0


def describe_fp8_linear(x_fp8, x_scale, w_fp8, w_scale, bias=None, residual=None, gate=None, *,
                        out_dtype=torch.bfloat16, epilogue=None, accumulate="fp32", **_: object) -> InputDesc:
    """Validate the arguments of ``fp8_linear`` and describe them for backend selection."""
    problems: list[str] = []
    if accumulate not in S.ACCUMULATE:
        problems.append(f"accumulate is {accumulate!r}; expected one of {', '.join(map(repr, S.ACCUMULATE))}")
    for name, t in (("x_fp8", x_fp8), ("w_fp8", w_fp8)):
        if not isinstance(t, torch.Tensor):
            return InputDesc(platform=None, problems=[f"{name} must be a torch.Tensor, got {type(t).__name__}"])
    fmt = fp8_name(x_fp8.dtype, problems, "x_fp8's dtype")
    if w_fp8.dtype != x_fp8.dtype:
        problems.append(f"w_fp8 has dtype {w_fp8.dtype}; expected x_fp8's FP8 dtype {x_fp8.dtype} "
                        "(quantize the weight with quantize_fp8(w, dtype=...))")
    if x_fp8.dim() == 0 or w_fp8.dim() != 2:
        problems.append(f"x_fp8 is {list(x_fp8.shape)}, w_fp8 is {list(w_fp8.shape)}; expected [..., K] and [N, K]")
        return InputDesc(platform=None, problems=problems)
    N, K = w_fp8.shape
    if x_fp8.shape[-1] != K or K == 0 or N == 0:
        problems.append(f"x_fp8 is {list(x_fp8.shape)}, w_fp8 is {list(w_fp8.shape)}; expected [..., K] and [N, K], "
                        "K, N >= 1")
    if w_fp8.stride(1) != 1 and K != 1:
        problems.append(f"w_fp8 has strides {list(w_fp8.stride())}; expected K contiguous (nn.Linear's [N, K])")
    x_stride = _rows_problem("x_fp8", x_fp8, problems)
    lead = tuple(x_fp8.shape[:-1])
    x_rowwise = _scale_kind("x_scale", x_scale, lead, "x_fp8", problems)
    w_rowwise = _scale_kind("w_scale", w_scale, (N,), "weight", problems)
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (N,)
                             or not bias.dtype.is_floating_point or not bias.is_contiguous()):
        problems.append(f"bias must be a contiguous float tensor of shape [{N}], got "
                        f"{list(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__}")
    out_name = str(out_dtype).removeprefix("torch.")
    if out_name not in S.OUT_DTYPES:
        problems.append(f"out_dtype is {out_dtype}; expected torch.bfloat16, torch.float16 or torch.float32")
    res_stride, gate_rows = _epilogue_tensors(x_fp8, N, epilogue, residual, gate, out_dtype, problems)
    device = x_fp8.device
    for name, t in (("x_scale", x_scale), ("w_fp8", w_fp8), ("w_scale", w_scale), ("bias", bias),
                    ("residual", residual), ("gate", gate)):
        if isinstance(t, torch.Tensor) and t.device != device:
            problems.append(f"{name} is on {t.device}, x_fp8 is on {device}: all tensors must be on one device")
    platform = tensor_platform(device)
    arch = device_arch(platform, device.index) if platform in ("cuda", "hip") else None
    if fmt is not None:
        why = linear_device_problem(platform, arch, fmt)
        if why:
            problems.append(why)
    if problems:
        return InputDesc(platform, arch, problems=problems)
    if epilogue is not None:
        aligned = S.LAYOUT_EPILOGUE
    else:
        aligned = S.LAYOUT_ALIGNED if K % 16 == 0 and N % 16 == 0 else S.LAYOUT_UNALIGNED
    M = x_fp8.numel() // K
    geom = LinearGeometry(lead, M, N, K, x_stride, res_stride, x_rowwise, w_rowwise, bias is not None, epilogue,
                          gate_rows, out_dtype, accumulate == "fast")
    return InputDesc(platform, arch, (out_name, fmt), K, (aligned,), problems,
                     info={"geom": geom, "empty": M == 0})


def _empty(geom: LinearGeometry):
    def run(x_fp8, *_):
        return torch.empty((*geom.lead, geom.N), dtype=geom.out_dtype, device=x_fp8.device)

    return run


SCALED_MM_MIN_FLOPS = 2e11


# ``backend=None``: the static priority (``scaled_mm`` first) for products of at least
# ``SCALED_MM_MIN_FLOPS``; below, the Triton GEMM where it can serve (host time dominates there), else the
# static priority again (never the fp32 reference in place of cuBLAS)
_SIZE_CHOOSER = RuleChooser(
    "scaled_mm", "triton",
    rule=lambda desc: (desc.info.get("geom") is not None
                       and 2 * desc.info["geom"].M * desc.info["geom"].N * desc.info["geom"].K < SCALED_MM_MIN_FLOPS),
    note=lambda desc: (f"a product of less than {SCALED_MM_MIN_FLOPS:.0e} FLOPs: 'triton' (its launch costs less "
                       "host time than torch._scaled_mm's, which decides such sizes in eager mode)"),
)


FP8_LINEAR = Op(
    "quant.fp8_linear",
    distribution=S.DISTRIBUTION,
    summary="epilogue((x_fp8 @ w_fp8.T) * x_scale * w_scale + bias), fp32 or fast accumulation, one rounding",
    describe=describe_fp8_linear,
    n_tensors=7,
    reference=".fp8_linear_torch:fp8_linear",
    backends=[
        Backend("triton", ".fp8_linear_triton", S.LINEAR_TRITON_CAPS, S.LINEAR_CLOSE, priority=10,
                notes=S.LINEAR_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("scaled_mm", ".fp8_linear_torch:prepare_scaled_mm", S.LINEAR_SCALED_MM_CAPS,
                S.LINEAR_SCALED_MM_CLOSE, priority=20, notes=S.LINEAR_SCALED_MM_NOTE,
                executed_on=S.EXECUTED_SCALED_MM),
        Backend("torch", ".fp8_linear_torch", S.LINEAR_TORCH_CAPS, S.LINEAR_CLOSE, notes=S.LINEAR_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=_empty,
    bench=f"{S.BENCH}:fp8_linear_cases",
    chooser=_SIZE_CHOOSER,
)


@FP8_LINEAR.entry
def fp8_linear(x_fp8: torch.Tensor, x_scale: torch.Tensor, w_fp8: torch.Tensor, w_scale: torch.Tensor,
               bias: torch.Tensor | None = None, *, out_dtype: torch.dtype = torch.bfloat16,
               epilogue: str | None = None, residual: torch.Tensor | None = None, gate: torch.Tensor | None = None,
               accumulate: str = "fp32", backend: str | None = None) -> torch.Tensor:
    """``y = (x_fp8.float() @ w_fp8.float().T) * x_scale * w_scale.T + bias``, then the epilogue, rounded once:

    - ``None``: ``y``;
    - ``"gelu_tanh"``: ``gelu(y, approximate="tanh")`` (the MLP of a DiT block);
    - ``"gated_residual"``: ``residual + gate * y`` (a DiT block's gated residual add).

    Every FP8 x FP8 product is exact in fp32; the sum, the scales, the bias and the epilogue are
    fp32, and the result is rounded to ``out_dtype`` once.

    accumulate: ``"fp32"`` (default): the sum in fp32 (the Triton GEMM adds the tensor cores' partial sum
        into an fp32 accumulator after every 128-deep K step; cuBLAS does the same). ``"fast"``: on
        sm_90 the FP8 tensor cores keep their own partial sum (fewer mantissa bits than fp32) over the
        whole K loop, as ``torch._scaled_mm(use_fast_accum=True)`` and torchao's float8 inference
        default do: faster (on one H100 the Triton GEMM 1.42-1.78x bf16 ``F.linear`` against
        1.17-1.40x), with a sum error that grows with K: single elements moved by up to 7.3% of the
        output's RMS at K = 12288 on that H100, and the contract is on the layer's result (its mean
        distance to the bf16 layer at most 2% above the fp32 sum's, checked by the GPU lane at FLUX.1
        and Wan shapes). AMD's MFMA and the reference sum in fp32 either way.
    x_fp8: ``[..., K]`` ``float8_e4m3fn`` | ``float8_e4m3fnuz``, last dim contiguous, leading dims
        collapsing into one row stride (``quantize_fp8``'s output).
    x_scale: fp32 ``[..., 1]`` (one per row of ``x_fp8``, contiguous) or one value.
    w_fp8: ``[N, K]`` (``nn.Linear``'s layout), ``x_fp8``'s FP8 dtype, K contiguous.
    w_scale: fp32 ``[N, 1]`` or ``[N]`` (one per output channel, contiguous) or one value.
    bias: optional ``[N]``, contiguous, any float dtype.
    out_dtype: bf16 | fp16 | fp32 (``scaled_mm``: bf16).
    residual: ``[..., N]`` of ``out_dtype``, last dim contiguous (``"gated_residual"`` only).
    gate: ``[N]`` or, for ``x_fp8`` ``[B, S, K]``, per sample ``[B, 1, N]``; contiguous
        (``"gated_residual"`` only).
    Returns ``[..., N]`` of ``out_dtype``.
    backend: ``None`` (``scaled_mm`` for a plain product of at least 2e11 FLOPs on CUDA sm_90+, else the
        fused Triton GEMM where it serves, else the reference), ``"triton"``, ``"scaled_mm"`` (no epilogue, bf16) or
        ``"torch"`` (the reference). Contract ``close`` (tolerances in the registry).

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs:
    operands that are not FP8 (or not both of one format), scales whose shape matches neither a
    row-wise nor a tensor-wise scale, a GPU that does not compute in the format.
    """
    options = (("epilogue", epilogue), ("out_dtype", out_dtype), ("accumulate", accumulate))
    tensors = (x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate)
    if is_compiling():
        return _fp8_linear_op(*tensors, epilogue, out_dtype, accumulate, backend)
    return FP8_LINEAR.plan(tensors, backend, None, options)(*tensors)


def _fake(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate, epilogue, out_dtype, accumulate, backend):
    FP8_LINEAR.validate(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate,
                        options=(("epilogue", epilogue), ("out_dtype", out_dtype), ("accumulate", accumulate)))
    return x_fp8.new_empty((*x_fp8.shape[:-1], w_fp8.shape[0]), dtype=out_dtype)


can_use_fp8_linear = FP8_LINEAR.can_use
fp8_linear_reference = FP8_LINEAR.reference
_fp8_linear_op = FP8_LINEAR.custom_op(
    "fp8_linear", fake=_fake, keyed=("epilogue", "out_dtype", "accumulate"),
    schema="(Tensor x_fp8, Tensor x_scale, Tensor w_fp8, Tensor w_scale, Tensor? bias, Tensor? residual, "
           "Tensor? gate, str? epilogue, ScalarType out_dtype, str accumulate, str? backend) -> Tensor",
)
