"""Registry entries of sgl-diffusion-modulate: plain data, imported with the package (no backend import)."""

from __future__ import annotations

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

for family, summary in (
    ("scale_shift", "x * (scale_offset + scale) + shift, bit-exact to the eager chain"),
    ("gated_residual", "residual + gate * update (or in place into residual), bit-exact to the eager chain"),
):
    op = f"modulate.{family}"
    register_op(
        OpDef(
            op=op,
            distribution=DISTRIBUTION,
            describe=f"{PKG}.{family}_api:describe_{family}",
            public=f"{PKG}.{family}_api:{family}",
            summary=summary,
            default_exact=True,
            bench=f"{PKG}.modulate_bench:{family}_cases",
        )
    )
    register(
        KernelSpec(
            op=op,
            backend="triton",
            target=f"{PKG}.{family}_triton:{family}",
            capabilities=_TRITON_CAPS,
            contract=Contract.exact(),
            priority=10,
            notes="one program per (row, column tile); every intermediate rounded to its eager dtype, no FMA",
            aot=f"{PKG}.{family}_triton:aot_variants",
            executed_on=("cpu-interpreter",),
        )
    )
    register(
        KernelSpec(
            op=op,
            backend="torch",
            target=f"{PKG}.{family}_torch:{family}",
            capabilities=_TORCH_CAPS,
            contract=Contract.exact(),
            priority=0,
            notes="the eager chain itself (the definition of the exact contract)",
            executed_on=("cpu",),
        )
    )
