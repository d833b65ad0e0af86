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
  per element reached 58-64% of copy bandwidth (docs/benchmarks, session 2 tile sweep);
* under the interpreter, integer arithmetic on the fp32 bit pattern, because the
  interpreter truncates fp32 -> bf16 casts and turns bf16 subnormals into wrong values
  (DESIGN.md, "two traps"); the CPU lane then sees the same bits as the GPU.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .platform import triton_interpret


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


if triton_interpret():
    round_to, widen, narrow = _round_to_bits, _widen_bits, _narrow_bits
else:
    round_to, widen, narrow = _round_to_hw, _widen_hw, _narrow_hw
