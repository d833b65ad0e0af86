"""Registry entries of sgl-diffusion-modulate: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from dataclasses import replace

from sgl_diffusion_core import (
    MODULATION_LAYOUTS,
    Capabilities,
    Contract,
    KernelSpec,
    OpDef,
    register,
    register_op,
)

DISTRIBUTION = "sgl-diffusion-modulate"
PKG = "sgl_diffusion_modulate"

_TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    layouts=MODULATION_LAYOUTS,
    interpretable=True,
    requires=("triton",),
)
_TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=MODULATION_LAYOUTS)
# indexed ops: the table is per sample [B, K, D] or shared [K, D] (index: per sample or shared)
INDEXED_LAYOUTS = ("table-per-sample", "table-shared")
_INDEXED_TRITON_CAPS = replace(_TRITON_CAPS, layouts=INDEXED_LAYOUTS)
_INDEXED_TORCH_CAPS = replace(_TORCH_CAPS, layouts=INDEXED_LAYOUTS)
_INDEX_NOTE = "; an out-of-range index is checked in eager calls, and gives a NaN row under compile/graph capture"

# (op family, module family of its backends, api module, summary)
_FAMILIES = (
    ("scale_shift", "scale_shift", "scale_shift_api",
     "x * (scale_offset + scale) + shift, bit-exact to the eager chain"),
    ("gated_residual", "gated_residual", "gated_residual_api",
     "residual + gate * update (or in place into residual), bit-exact to the eager chain"),
    ("indexed_scale_shift", "scale_shift", "indexed_api",
     "x * (scale_offset + scale_table[b, index]) + shift_table[b, index] (a table row per token), bit-exact"),
    ("indexed_gated_residual", "gated_residual", "indexed_api",
     "residual + gate_table[b, index] * update (or in place), a table row per token, bit-exact"),
)

for family, backend_family, api, summary in _FAMILIES:
    op = f"modulate.{family}"
    indexed = family.startswith("indexed_")
    aot = "indexed_aot_variants" if indexed else "aot_variants"
    register_op(
        OpDef(
            op=op,
            distribution=DISTRIBUTION,
            describe=f"{PKG}.{api}:describe_{family}",
            public=f"{PKG}.{api}:{family}",
            summary=summary,
            default_exact=True,
            bench=f"{PKG}.modulate_bench:{family}_cases",
        )
    )
    register(
        KernelSpec(
            op=op,
            backend="triton",
            target=f"{PKG}.{backend_family}_triton:{family}",
            capabilities=_INDEXED_TRITON_CAPS if indexed else _TRITON_CAPS,
            contract=Contract.exact(),
            priority=10,
            notes="one program per (row, column tile); every intermediate rounded to its eager dtype, no FMA"
            + (_INDEX_NOTE if indexed else ""),
            aot=f"{PKG}.{backend_family}_triton:{aot}",
            executed_on=("sm_90", "cpu-interpreter"),
        )
    )
    register(
        KernelSpec(
            op=op,
            backend="torch",
            target=f"{PKG}.{backend_family}_torch:{family}",
            capabilities=_INDEXED_TORCH_CAPS if indexed else _TORCH_CAPS,
            contract=Contract.exact(),
            priority=0,
            notes="the eager chain itself (the definition of the exact contract)"
            + ("; out-of-range tokens give NaN rows (index clamped, rows filled), valid ones the same bits"
               if indexed else ""),
            executed_on=("sm_90", "cpu"),
        )
    )
