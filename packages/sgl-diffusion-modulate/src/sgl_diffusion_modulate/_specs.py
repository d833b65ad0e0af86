"""Capabilities shared by the modulate ops' backends (data; imported by each ``<op>.py``)."""

from __future__ import annotations

from dataclasses import replace

from sgl_diffusion_core import MODULATION_LAYOUTS, Capabilities

DISTRIBUTION = "sgl-diffusion-modulate"

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    layouts=MODULATION_LAYOUTS,
    interpretable=True,
    requires=("triton",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=MODULATION_LAYOUTS)
# indexed ops: the table is per sample [B, K, D] or shared [K, D] (index: per sample or shared)
INDEXED_LAYOUTS = ("table-per-sample", "table-shared")
INDEXED_TRITON_CAPS = replace(TRITON_CAPS, layouts=INDEXED_LAYOUTS)
INDEXED_TORCH_CAPS = replace(TORCH_CAPS, layouts=INDEXED_LAYOUTS)

TRITON_NOTE = "one program per (row, column tile); every intermediate rounded to its eager dtype, no FMA"
TORCH_NOTE = "the eager chain itself (the definition of the exact contract)"
INDEX_NOTE = "; an out-of-range index is checked in eager calls, and gives a NaN row under compile/graph capture"
TORCH_INDEX_NOTE = "; out-of-range tokens give NaN rows (index clamped, rows filled), valid ones the same bits"
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
BENCH = "benchmarks/modulate_bench.py"
