"""Triton device helpers for FP8 storage (imports Triton: backends only).

:func:`to_fp8_bits` is the fp32 -> E4M3 conversion as integer arithmetic on the fp32 bit
pattern, round to nearest, ties to even, returning the 8-bit code. The Triton interpreter (3.9)
converts fp32 -> fp8 wrongly (ties away from zero, and a rounding carry that does not reach the
exponent: 127.7 -> 64), so under the interpreter the kernels store these codes through a uint8
view of the output; on the GPU they use the hardware conversion (``cvt.rn.satfinite`` on NVIDIA).
The interpreter's fp8 -> fp32 conversion is right for every finite code, so FP8 loads and
``tl.dot`` on FP8 operands run as they are.
"""

from __future__ import annotations

import triton
import triton.language as tl

from sgl_diffusion_core import triton_interpret

# the triton element type of each FP8 format the ops store
TL_FP8 = {"float8_e4m3fn": tl.float8e4nv, "float8_e4m3fnuz": tl.float8e4b8}
# ... and its name in an AOT signature
AOT_FP8 = {"float8_e4m3fn": "fp8e4nv", "float8_e4m3fnuz": "fp8e4b8"}


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


INTERPRETED = triton_interpret()
