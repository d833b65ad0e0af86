# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "gated_residual": "gated_residual",
    "gated_residual_": "gated_residual",
    "can_use_gated_residual": "gated_residual",
    "gated_residual_reference": "gated_residual",
    "indexed_gated_residual": "indexed_gated_residual",
    "indexed_gated_residual_": "indexed_gated_residual",
    "can_use_indexed_gated_residual": "indexed_gated_residual",
    "indexed_gated_residual_reference": "indexed_gated_residual",
    "indexed_scale_shift": "indexed_scale_shift",
    "can_use_indexed_scale_shift": "indexed_scale_shift",
    "indexed_scale_shift_reference": "indexed_scale_shift",
    "IndexOutOfRangeError": "indexed_scale_shift",
    "scale_shift": "scale_shift",
    "can_use_scale_shift": "scale_shift",
    "scale_shift_reference": "scale_shift",
}

OPS: dict[str, str] = {
    "modulate.gated_residual": "gated_residual",
    "modulate.indexed_gated_residual": "indexed_gated_residual",
    "modulate.indexed_scale_shift": "indexed_scale_shift",
    "modulate.scale_shift": "scale_shift",
}
