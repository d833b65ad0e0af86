"""Capabilities shared by the rope ops' backends (data; imported by ``rope.py``)."""

from __future__ import annotations

from sgl_diffusion_core import Capabilities

DISTRIBUTION = "sgl-diffusion-rope"

# Layout tags (``_geometry.describe_rope``): x layout (or "bshd->bhsd"), angle source, pair convention.
TABLE_LAYOUTS = ("bshd", "bhsd", "table-half", "table-full", "rotate-half", "interleaved")
_ARCH = (("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950"))


def _triton(layouts: tuple[str, ...]) -> Capabilities:
    return Capabilities(platforms=("cuda", "hip"), min_arch=_ARCH, layouts=layouts, interpretable=True,
                        requires=("triton",))


APPLY_ROPE_TRITON_CAPS = _triton(TABLE_LAYOUTS + ("complex",))
ROPE_3D_TRITON_CAPS = _triton(("bshd", "bhsd", "grid-angles", "pos-angles", "rotate-half", "interleaved"))
QK_NORM_ROPE_TRITON_CAPS = _triton(TABLE_LAYOUTS + ("complex", "bshd->bhsd", "bhsd->bshd"))
EXACT_CAPS = _triton(TABLE_LAYOUTS)  # real tables only: a complex freqs_cis is served exactly by torch
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"))

# qk_norm_rope's eager chain (diffusers' RMSNorm) rounds the normalized value and its weighted
# product to the storage dtype before the rotation: two more roundings than the fused fp32 path,
# each up to half an ulp of an intermediate of magnitude up to |normalized x * weight| (~4-8 for
# RMS-normalized rows), mixed by cos/sin. Where the rotation cancels, the output is much smaller
# than those intermediates, so the eager chain's error is absolute, not relative to the output:
# measured on the H200 at Wan (387M values) 0.025 at outputs of 0.4. The declared bound is
# therefore absolute (bf16 6e-2: 2 ulps at magnitude 4-8, as norm's modulated ops declare); the
# tests also hold the fused path to one ulp of an fp64 evaluation, so no formula error hides there.
QK_NORM_ROPE_TOLERANCE = {"bfloat16": (6e-2, 2**-6), "float16": (8e-3, 2**-9)}

TRITON_NOTE = "one program per (token, block of heads); angles read or computed once per token; fp32 math"
EXACT_NOTE = "the same kernel, every product and sum rounded to the eager dtype, no FMA (real tables)"
TORCH_NOTE = "the eager chain (the definition of the contracts)"
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
BENCH = "benchmarks/rope_bench.py"
