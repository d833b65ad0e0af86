"""Triton device helpers shared by every domain's kernels (imports Triton: backends only).

Reached as ``from sgl_diffusion_core import triton_math`` (a lazy attribute of the core
package, so that importing core never imports Triton).

Exact contracts reproduce eager PyTorch bit for bit, which computes every bf16/fp16 op in
fp32 and rounds the result to the storage dtype (round to nearest, ties to even) before
the next op. :func:`round_to` does that rounding, :func:`widen` is the exact bf16/fp16 ->
fp32 conversion and :func:`narrow` the final conversion to the storage dtype.

Two implementations, chosen when this module is imported (Triton itself decides at
``@triton.jit`` time whether kernels are interpreted, from the same ``TRITON_INTERPRET``):

* on the GPU, the hardware conversions (``cvt.rn.bf16.f32`` on NVIDIA: one instruction,
  ties to even). An integer form of the rounding (~10 integer ops per value) made the
  elementwise exact kernels compute-bound on the H200: ``scale_shift`` with three roundings
  per element reached 58-64% of copy bandwidth (H200, bf16);
* under the interpreter, integer arithmetic on the fp32 bit pattern, because the
  interpreter truncates fp32 -> bf16 casts and turns bf16 subnormals into wrong values
  (docs/design.md, "two traps"); the CPU lane then sees the same bits as the GPU.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import vendor
from .platform import triton_interpret

# torch storage dtype -> Triton element type, for the dtype constexprs of every kernel
TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}


@triton.jit
def _round_to_bits(x, DTYPE: tl.constexpr):
    """fp32 ``x`` rounded to ``DTYPE`` (bf16, fp16 or fp32) with ties to even, returned as fp32."""
    if DTYPE == tl.bfloat16:
        bits = x.to(tl.uint32, bitcast=True)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        # NaN stays NaN (the rounding bias could carry a NaN payload into the infinity pattern)
        return tl.where(x != x, x, rounded.to(tl.float32, bitcast=True))
    elif DTYPE == tl.float16:
        return x.to(tl.float16).to(tl.float32)
    else:
        return x


@triton.jit
def _widen_bits(x):
    """``x`` (bf16, fp16 or fp32) as fp32, exactly; bf16 through its bit pattern."""
    if x.dtype == tl.bfloat16:
        return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def _narrow_bits(x, DTYPE: tl.constexpr):
    """fp32 ``x`` converted to ``DTYPE`` with ties to even (bf16 through the bit pattern, so the
    interpreter's broken bf16 subnormal conversion is never used)."""
    if DTYPE == tl.bfloat16:
        hi = _round_to_bits(x, DTYPE).to(tl.uint32, bitcast=True) >> 16
        hi = tl.where(x != x, 0x7FC0, hi)  # any NaN -> the quiet NaN (a payload could read as inf)
        return hi.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        return x.to(DTYPE)


@triton.jit
def _round_to_hw(x, DTYPE: tl.constexpr):
    """fp32 ``x`` rounded to ``DTYPE`` by the hardware conversion (ties to even), as fp32."""
    if DTYPE == tl.float32:
        return x
    else:
        return x.to(DTYPE).to(tl.float32)


@triton.jit
def _widen_hw(x):
    return x.to(tl.float32)


@triton.jit
def _narrow_hw(x, DTYPE: tl.constexpr):
    return x.to(DTYPE)


# ``FAST`` levels of the fast-math helpers below (a constexpr of the kernels that call them):
# 0 the precise forms (fp32 outputs), 1 portable approximations (16-bit outputs on ROCm and under
# the interpreter), 2 PTX's one-instruction approximate forms (16-bit outputs on CUDA).
FAST_PRECISE, FAST_PORTABLE, FAST_PTX = 0, 1, 2


def fast_level(dtype, platform: str, fast: bool | None = None) -> int:
    """The ``FAST`` constexpr for outputs of ``dtype`` (a ``torch.dtype``) launched on ``platform``
    (``tensor_platform`` of the launch's device): precise for fp32 outputs, the approximate forms
    for 16-bit ones, whose error (a few 2**-22 relative) is far below their one rounding (2**-8 /
    2**-11); PTX only on CUDA and never under the interpreter, which cannot run inline assembly.
    ``fast`` overrides the dtype's choice (tuning and tests)."""
    import torch

    on = dtype != torch.float32 if fast is None else bool(fast)
    if not on:
        return FAST_PRECISE
    return FAST_PTX if platform == "cuda" and not triton_interpret() else FAST_PORTABLE


@triton.jit
def fast_rcp(d, FAST: tl.constexpr):
    """``1 / d`` in fp32: ``rcp.approx.ftz.f32`` (one sm_90 instruction) when ``FAST == 2``, else
    Triton's division (8 sm_90 instructions with its range and subnormal handling)."""
    if FAST == 2:
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=f,f", [d], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return 1.0 / d


@triton.jit
def fast_exp2(x, FAST: tl.constexpr):
    """``2 ** x`` in fp32: ``ex2.approx.ftz.f32`` (one instruction; results below 2**-126 flush to
    zero) when ``FAST == 2``, else ``tl.exp2`` (4 sm_90 instructions, subnormal results kept)."""
    if FAST == 2:
        return tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:
        return tl.exp2(x)


@triton.jit
def silu(y, FAST: tl.constexpr):
    """``y * sigmoid(y)`` for fp32 ``y``. ``FAST == 0``: eager's form ``y / (1 + exp(-y))`` with
    the IEEE division (about 14 sm_90 instructions with the ``exp``). Otherwise
    ``y * (1 / (1 + 2 ** (-y * log2(e))))`` through :func:`fast_exp2` and :func:`fast_rcp` (4
    sm_90 instructions with PTX's forms and no select; a form that splits on the sign of ``y`` to
    keep ``2 ** x`` in ``(0, 1]`` costs 2 instructions more per value). Large
    negative ``y``: ``2 ** x`` grows to inf and ``1 / inf`` is 0, so the result goes to -0 with the
    true value; where ``sigmoid(y) < 2**-126`` (y below about -87.3) PTX's flushing reciprocal gives
    -0 where the precise chain gives a value of about 1e-36 or less (as the old form did).
    ``y = -inf`` is NaN, as in eager."""
    if FAST == 0:
        return y / (1.0 + tl.exp(-y))
    else:
        return y * fast_rcp(1.0 + fast_exp2(y * -1.4426950408889634, FAST), FAST)



@triton.jit
def widen_held(x):
    """Held raw values (bf16, fp16, or fp32 as they are) as fp32, exactly, by integer operations on
    their bits, for an output pass that widens them a second time: the compiler does not merge this
    form with the statistics pass's ``.to(tl.float32)`` and hold an fp32 copy of every value. bf16 as
    :func:`widen_bits` (a shift); fp16 by moving its exponent and mantissa into place and scaling by
    2**112 (exact for normal and subnormal values), infinities and NaN by their bit pattern (about six
    integer operations and one multiply: use it where registers, not instructions, are short;
    ``channel_rms_norm``'s held fp16 slab at C = 384: 171 -> 128 sm_90 registers)."""
    if x.dtype == tl.float16:
        h = x.to(tl.uint16, bitcast=True).to(tl.uint32)
        em = h & 0x7FFF
        sign = (h & 0x8000) << 16
        mag = (em << 13).to(tl.float32, bitcast=True) * 5.192296858534828e33  # 2**112
        special = ((em << 13) | 0x7F800000).to(tl.float32, bitcast=True)
        v = tl.where(em >= 0x7C00, special, mag)
        return (v.to(tl.uint32, bitcast=True) | sign).to(tl.float32, bitcast=True)
    else:
        return _widen_bits(x)


if triton_interpret():
    round_to, widen, narrow = _round_to_bits, _widen_bits, _narrow_bits
else:
    round_to, widen, narrow = _round_to_hw, _widen_hw, _narrow_hw

# the bit-pattern widening on every platform: a kernel that holds raw 16-bit values and widens
# them twice (statistics, then output) keeps them packed, because the compiler does not merge
# this form with a ``.to(tl.float32)`` of the same value into one held fp32 copy
widen_bits = _widen_bits


@triton.jit
def round_to_packed(x, DTYPE: tl.constexpr, PTX: tl.constexpr):
    """:func:`round_to`; with ``PTX`` (NVIDIA hardware) bf16 rounds two values per conversion
    (``cvt.rn.bf16x2.f32``, then a shift and a mask to widen them back: 1.5 instructions per value
    where the scalar conversion and its widening take 2, half of them on the conversion unit).
    Same values (ties to even)."""
    if PTX and DTYPE == tl.bfloat16:
        return tl.inline_asm_elementwise(
            "{ .reg .b32 t; cvt.rn.bf16x2.f32 t, $3, $2; shl.b32 $0, t, 16; and.b32 $1, t, 0xFFFF0000; }",
            "=r,=r,r,r", [x], dtype=tl.float32, is_pure=True, pack=2)
    else:
        return round_to(x, DTYPE)


@triton.jit
def program_tile(n_tiles):
    """(row, column tile) of this program on a 1-D grid of ``rows * n_tiles`` programs with a
    row's tiles adjacent (``TileConfig.grid``); int32, one division per program."""
    pid = tl.program_id(0)
    r = pid // n_tiles
    return r, pid - r * n_tiles


# --- FP8 storage (the formats' facts: sgl_diffusion_core.vendor) ------------------------------------
# The Triton interpreter converts fp32 -> fp8 wrongly (ties away from zero, and a rounding carry
# that does not reach the exponent: 127.7 -> 64), so under the interpreter kernels store the codes of
# :func:`to_fp8_bits` through a uint8 view of the output (``FP8_BITS``); on the GPU they use the
# hardware conversion (``cvt.rn.satfinite`` on NVIDIA). The interpreter's fp8 -> fp32 conversion is
# right for every finite code, so FP8 loads and ``tl.dot`` on FP8 operands run as they are.

# the Triton element type of each FP8 format, and its name in an AOT signature
TL_FP8 = {"float8_e4m3fn": tl.float8e4nv, "float8_e4m3fnuz": tl.float8e4b8}
AOT_FP8 = {"float8_e4m3fn": "fp8e4nv", "float8_e4m3fnuz": "fp8e4b8"}
FP8_BITS = triton_interpret()  # store FP8 as integer codes (a uint8 view of the output)
_MIN_AMAX = tl.constexpr(vendor.FP8_MIN_AMAX)


@triton.jit
def to_fp8_bits(q, FNUZ: tl.constexpr):
    """fp32 ``q`` (``|q| <=`` the format's largest finite value, or NaN) as the E4M3 code (uint8),
    ties to even. ``FNUZ``: exponent bias 8, no negative zero, NaN 0x80; else bias 7, NaN 0x7F."""
    if FNUZ:
        BIAS: tl.constexpr = 8
        SUB: tl.constexpr = 1024.0  # 2**(BIAS + 2): one subnormal step is 1
        MIN_NORMAL: tl.constexpr = 0.0078125  # 2**-7
        NAN: tl.constexpr = 0x80
    else:
        BIAS: tl.constexpr = 7
        SUB: tl.constexpr = 512.0
        MIN_NORMAL: tl.constexpr = 0.015625  # 2**-6
        NAN: tl.constexpr = 0x7F
    bits = q.to(tl.uint32, bitcast=True)
    sign = (bits >> 24) & 0x80
    mag = bits & 0x7FFFFFFF
    a = mag.to(tl.float32, bitcast=True)
    # normal: keep 3 mantissa bits, ties to even; a carry moves into the exponent
    r = mag + 0x7FFFF + ((mag >> 20) & 1)
    normal = ((((r >> 23).to(tl.int32) - (127 - BIAS)) << 3) | ((r >> 20) & 7).to(tl.int32))
    # subnormal: the count of subnormal steps, rounded to nearest even by the 2**23 trick
    sub = ((a * SUB + 8388608.0) - 8388608.0).to(tl.int32)
    code = tl.where(a < MIN_NORMAL, sub, normal)
    if FNUZ:
        sign = tl.where(code == 0, 0, sign)
    code = code | sign.to(tl.int32)
    code = tl.where(q != q, NAN, code)
    return code.to(tl.uint8)



@triton.jit
def round_to_e4m3(x):
    """Non-negative fp32 ``x`` (at most 448) rounded to e4m3fn, ties to even, as fp32 values: the rounding
    of :func:`to_fp8_bits` without the encoding (3 mantissa bits for normals, steps of 2**-9 below 2**-6),
    for the interpreter, whose own fp32 -> fp8 conversion is wrong (above)."""
    bits = x.to(tl.uint32, bitcast=True)
    normal = ((bits + 0x7FFFF + ((bits >> 20) & 1)) & 0xFFF00000).to(tl.float32, bitcast=True)
    sub = ((x * 512.0 + 8388608.0) - 8388608.0) * 0.001953125
    return tl.where(x < 0.015625, sub, normal)


@triton.jit
def max_nan(a, b):
    """``max(a, b)`` with NaN propagated (an amax that saw a NaN is NaN)."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def fp8_scale(amax, FP8_MAX: tl.constexpr, MIN_AMAX: tl.constexpr):
    """The scale of a row (or tensor) of this amax: ``max(amax, MIN_AMAX) / FP8_MAX``, IEEE division."""
    return tl.math.div_rn(max_nan(amax, MIN_AMAX), FP8_MAX)


@triton.jit
def store_row_scale(QS, row, a, FP8_MAX: tl.constexpr):
    """The FP8 scale of one row from its ``|y|`` values ``a`` (a NaN propagates): stored to ``QS[row]``
    and returned."""
    qs = fp8_scale(tl.reduce(a, 0, max_nan), FP8_MAX, _MIN_AMAX)
    tl.store(QS + row, qs)
    return qs


@triton.jit
def store_row_scale2(QS, row, a, b, FP8_MAX: tl.constexpr):
    """:func:`store_row_scale` of a row held as two tiles, ``|y|`` values ``a`` and ``b``."""
    qs = fp8_scale(max_nan(tl.reduce(a, 0, max_nan), tl.reduce(b, 0, max_nan)), FP8_MAX, _MIN_AMAX)
    tl.store(QS + row, qs)
    return qs


@triton.jit
def store_fp8(x, Y, offs, mask, scale, FP8_MAX: tl.constexpr, OUT: tl.constexpr, BITS: tl.constexpr,
              FNUZ: tl.constexpr):
    """Store fp32 ``x / scale`` (IEEE division) saturated to ``+-FP8_MAX`` as FP8 ``OUT``, ties to even;
    ``BITS``: as the codes of :func:`to_fp8_bits` (``Y`` a uint8 view)."""
    _store_codes(tl.math.div_rn(x, scale), Y, offs, mask, FP8_MAX, OUT, BITS, FNUZ)


@triton.jit
def store_fp8_rcp(x, Y, offs, mask, scale, FP8_MAX: tl.constexpr, OUT: tl.constexpr, BITS: tl.constexpr,
                  FNUZ: tl.constexpr, PTX: tl.constexpr = False):
    """:func:`store_fp8` with ``x * (1 / scale)`` (the reciprocal an IEEE division, once per call) for the
    per-element division: one multiply instead of a division sequence per element, for kernels bound by
    instructions. ``x * (1 / scale)`` is within one fp32 ulp of ``x / scale``, so a code differs from the
    divided one only where the quotient lies within an ulp of an FP8 rounding boundary (by one code).
    ``PTX`` (NVIDIA hardware, not ``BITS``): no clamp before the conversion, which saturates itself (same
    codes, two instructions fewer per value)."""
    _store_codes(x * tl.math.div_rn(1.0, scale), Y, offs, mask, FP8_MAX, OUT, BITS, FNUZ, PTX)


@triton.jit
def _store_codes(v, Y, offs, mask, FP8_MAX: tl.constexpr, OUT: tl.constexpr, BITS: tl.constexpr,
                 FNUZ: tl.constexpr, PTX: tl.constexpr = False):
    if not PTX:  # NVIDIA's conversion saturates itself (``cvt.rn.satfinite``: +-inf -> +-448, NaN stays NaN)
        v = tl.minimum(max_nan(v, -FP8_MAX), FP8_MAX, propagate_nan=tl.PropagateNan.ALL)
    if BITS:
        tl.store(Y + offs, to_fp8_bits(v, FNUZ), mask=mask)
    else:
        tl.store(Y + offs, v.to(OUT, fp_downcast_rounding="rtne"), mask=mask)
