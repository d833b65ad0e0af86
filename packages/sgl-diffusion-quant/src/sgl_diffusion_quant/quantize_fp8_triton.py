"""Triton kernels of ``quantize_fp8``, backend ``triton`` (CUDA sm_89+ and ROCm gfx942 / gfx950, each
in its own FP8 format; CPU under ``TRITON_INTERPRET=1``, both formats).

Row-wise: one program per row; the row's amax in fp32 (NaN propagates), ``scale = max(amax,
1e-12) / fp8_max`` and ``x / scale`` with IEEE division (``div_rn``), saturated to
``+-fp8_max``, converted with ties to even. A row that fits one block (``QuantConfig.single``)
is held in registers and read once; a longer row is read twice, the second time from cache.
Tensor-wise: a first kernel takes each row's amax and combines them with ``atomic_max`` (a max
is order-free, so the result does not depend on the order the programs run in); the same
row kernel then quantizes with the tensor's scale.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, triton_math

from . import _specs as S

AOT_FP8, TL_FP8, INTERPRETED = triton_math.AOT_FP8, triton_math.TL_FP8, triton_math.FP8_BITS


@triton.jit
def _load(X, offs, mask):
    return triton_math.widen(tl.load(X + offs, mask=mask, other=0.0))


@triton.jit
def _chunked_amax(X, row, D, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, D, BLOCK):
        c = start + cols
        acc = triton_math.max_nan(acc, tl.abs(_load(X, row + c, c < D)))
    return tl.reduce(acc, 0, triton_math.max_nan)


@triton.jit
def _store_scale(S, pid, amax, FP8_MAX: tl.constexpr, MIN_AMAX_: tl.constexpr, TENSOR: tl.constexpr):
    """The row's (or the tensor's) scale, written once: by its row, or by program 0."""
    scale = triton_math.fp8_scale(amax, FP8_MAX, MIN_AMAX_)
    if TENSOR:
        if pid == 0:
            tl.store(S, scale)
    else:
        tl.store(S + pid, scale)
    return scale


@triton.jit
def _amax_kernel(X, AMAX, D, x_stride, BLOCK: tl.constexpr, SINGLE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * x_stride
    if SINGLE:
        cols = tl.arange(0, BLOCK)
        amax = tl.reduce(tl.abs(_load(X, row + cols, cols < D)), 0, triton_math.max_nan)
    else:
        amax = _chunked_amax(X, row, D, BLOCK)
    # inf stands for NaN: atomic_max does not order NaN, inf makes the tensor's scale non-finite too
    tl.atomic_max(AMAX, tl.where(amax != amax, float("inf"), amax))


@triton.jit
def _quant_kernel(X, Y, S, AMAX, D, x_stride,
                  FP8_MAX: tl.constexpr, MIN_AMAX_: tl.constexpr, TENSOR: tl.constexpr, BLOCK: tl.constexpr,
                  SINGLE: tl.constexpr, OUT: tl.constexpr, BITS: tl.constexpr, FNUZ: tl.constexpr):
    pid = tl.program_id(0)
    row = pid.to(tl.int64) * x_stride
    out_row = pid.to(tl.int64) * D
    cols = tl.arange(0, BLOCK)
    if SINGLE:  # the row in registers: one read for the amax and the codes
        mask = cols < D
        x = _load(X, row + cols, mask)
        if TENSOR:
            amax = tl.load(AMAX)
        else:
            amax = tl.reduce(tl.abs(x), 0, triton_math.max_nan)
        scale = _store_scale(S, pid, amax, FP8_MAX, MIN_AMAX_, TENSOR)
        triton_math.store_fp8(x, Y, out_row + cols, mask, scale, FP8_MAX, OUT, BITS, FNUZ)
    else:
        if TENSOR:
            amax = tl.load(AMAX)
        else:
            amax = _chunked_amax(X, row, D, BLOCK)
        scale = _store_scale(S, pid, amax, FP8_MAX, MIN_AMAX_, TENSOR)
        for start in range(0, D, BLOCK):
            c = start + cols
            mask = c < D
            triton_math.store_fp8(_load(X, row + c, mask), Y, out_row + c, mask, scale, FP8_MAX, OUT, BITS, FNUZ)


@dataclass(frozen=True)
class QuantConfig:
    """Launch configuration of the quantize kernels: ``block`` columns per step, ``single`` when
    the whole row fits one block (held in registers, read once)."""

    block: int
    single: bool
    num_warps: int

    @classmethod
    def from_heuristic(cls, D: int) -> QuantConfig:
        """A row of up to 8192 columns in one block (at most 32 fp32 values per thread with 8 warps),
        longer rows in 4096-column steps; 4 warps up to 2048 columns. Not yet tuned on a GPU."""
        if D <= 8192:
            block = triton.next_power_of_2(D)
            return cls(block, True, 4 if block <= 2048 else 8)
        return cls(4096, False, 8)


def prepare(geom, x):
    """The runner ``(x) -> (x_fp8, scale)`` of one call signature."""
    cfg = QuantConfig.from_heuristic(geom.D)
    fmt = S.FP8_NAMES[geom.dtype]
    fnuz = geom.dtype == torch.float8_e4m3fnuz
    tensor = geom.granularity == "tensor"
    device = x.device
    opts = {"num_warps": cfg.num_warps, "num_stages": 1}
    quant = PreparedLaunch(
        _quant_kernel, (geom.rows,),
        {"FP8_MAX": geom.fp8_max, "MIN_AMAX_": S.MIN_AMAX, "TENSOR": tensor, "BLOCK": cfg.block, "SINGLE": cfg.single,
         "OUT": TL_FP8[fmt], "BITS": INTERPRETED, "FNUZ": fnuz},
        n_ptrs=4, options=opts, device=device,
    )
    amax_launch = PreparedLaunch(_amax_kernel, (geom.rows,), {"BLOCK": cfg.block, "SINGLE": cfg.single}, n_ptrs=2,
                                 options=opts, device=device) if tensor else None
    shape, scale_shape, dtype, D, stride = geom.shape, geom.scale_shape, geom.dtype, geom.D, geom.row_stride

    def run(x, *_):
        q = torch.empty(shape, dtype=dtype, device=device)
        scale = torch.empty(scale_shape, dtype=torch.float32, device=device)
        amax = scale
        if amax_launch is not None:
            amax = torch.zeros((), dtype=torch.float32, device=device)
            amax_launch(x, amax, D, stride)
        quant(x, q.view(torch.uint8) if INTERPRETED else q, scale, amax, D, stride)
        return q, scale

    return run


def _variants(fmt: str, platform: str) -> list:
    from sgl_diffusion_core import AotVariant

    out = []
    fp8 = AOT_FP8[fmt]
    for src, D, tensor in (("bf16", 3072, False), ("bf16", 12288, False), ("bf16", 5120, True),
                           ("fp16", 13824, False), ("fp32", 3072, False)):
        cfg = QuantConfig.from_heuristic(D)
        sig = {"X": f"*{src}", "Y": f"*{fp8}", "S": "*fp32", "AMAX": "*fp32", "D": "i32", "x_stride": "i64"}
        sig.update({n: "constexpr" for n in ("FP8_MAX", "MIN_AMAX_", "TENSOR", "BLOCK", "SINGLE", "OUT", "BITS",
                                             "FNUZ")})
        const = {"FP8_MAX": S.FP8_MAX[fmt], "MIN_AMAX_": S.MIN_AMAX, "TENSOR": tensor,
                 "BLOCK": cfg.block, "SINGLE": cfg.single, "OUT": TL_FP8[fmt], "BITS": False,
                 "FNUZ": fmt.endswith("fnuz")}
        out.append(AotVariant(
            name=f"quantize_fp8[{src}->{fmt},D={D},{'tensor' if tensor else 'row'},block={cfg.block}]",
            kernel=_quant_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
            divisible_by_16=("X", "Y", "D", "x_stride"), min_cuda_arch=89, amd_targets=S.AMD_TARGETS[fmt],
            options={"enable_fp_fusion": True},
        ))
        if tensor and fmt == "float8_e4m3fn":  # the amax kernel does not depend on the format
            out.append(AotVariant(
                name=f"quantize_fp8_amax[{src},D={D},block={cfg.block}]", kernel=_amax_kernel,
                signature={"X": f"*{src}", "AMAX": "*fp32", "D": "i32", "x_stride": "i64", "BLOCK": "constexpr",
                           "SINGLE": "constexpr"},
                constexprs={"BLOCK": cfg.block, "SINGLE": cfg.single}, num_warps=cfg.num_warps,
                divisible_by_16=("X", "D", "x_stride"), min_cuda_arch=89, options={"enable_fp_fusion": True},
            ))
    return out


def aot_variants(platform: str = "cuda") -> list:
    """The builds the compile lanes make: FLUX / Wan widths, row and tensor-wise; ``float8_e4m3fn``
    (CUDA, gfx950) and ``float8_e4m3fnuz`` (gfx942)."""
    fnuz = _variants("float8_e4m3fnuz", platform) if platform == "hip" else []
    return _variants("float8_e4m3fn", platform) + fnuz

