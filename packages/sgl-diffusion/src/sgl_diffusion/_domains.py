# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""Names the umbrella re-exports from each domain built on op definitions."""

GROUPS: dict[str, tuple[str, ...]] = {
    "sgl-diffusion-modulate": (
        "gated_residual",
        "gated_residual_",
        "can_use_gated_residual",
        "gated_residual_reference",
        "indexed_gated_residual",
        "indexed_gated_residual_",
        "can_use_indexed_gated_residual",
        "indexed_gated_residual_reference",
        "indexed_scale_shift",
        "can_use_indexed_scale_shift",
        "indexed_scale_shift_reference",
        "scale_shift",
        "can_use_scale_shift",
        "scale_shift_reference",
    ),
}
