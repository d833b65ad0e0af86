"""Triton device helpers shared by every domain's kernels (imports Triton: backends only).

Reached as ``from sgl_diffusion_core import triton_math`` (a lazy attribute of the core
package, so that importing core never imports Triton).

Exact contracts reproduce eager PyTorch bit for bit, which computes every bf16/fp16 op in
fp32 and rounds the result to the storage dtype (round to nearest, ties to even) before
the next op. :func:`round_to` does that rounding explicitly. For bf16 it works on the fp32
bit pattern, because the Triton interpreter truncates fp32 -> bf16 casts (DESIGN.md,
"two traps"); on the GPU the integer form costs nothing measurable against memory time. :func:`widen` is
the exact bf16/fp16 -> fp32 conversion (the interpreter turns bf16 subnormals into wrong
values; the GPU's conversion is the same bit shift).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def round_to(x, DTYPE: tl.constexpr):
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
def widen(x):
    """``x`` (bf16, fp16 or fp32) as fp32, exactly; bf16 through its bit pattern."""
    if x.dtype == tl.bfloat16:
        return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def narrow(x, DTYPE: tl.constexpr):
    """fp32 ``x`` converted to ``DTYPE`` with ties to even (bf16 through the bit pattern, so the
    interpreter's broken bf16 subnormal conversion is never used)."""
    if DTYPE == tl.bfloat16:
        hi = round_to(x, DTYPE).to(tl.uint32, bitcast=True) >> 16
        hi = tl.where(x != x, 0x7FC0, hi)  # any NaN -> the quiet NaN (a payload could read as inf)
        return hi.to(tl.uint16).to(tl.bfloat16, bitcast=True)
    else:
        return x.to(DTYPE)
