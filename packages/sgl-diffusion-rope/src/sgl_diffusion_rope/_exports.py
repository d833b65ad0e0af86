# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "apply_rope": "rope",
    "can_use_apply_rope": "rope",
    "apply_rope_reference": "rope",
    "apply_rope_qk": "rope",
    "can_use_apply_rope_qk": "rope",
    "apply_rope_qk_reference": "rope",
    "rope_3d": "rope",
    "can_use_rope_3d": "rope",
    "rope_3d_reference": "rope",
    "qk_norm_rope": "rope",
    "can_use_qk_norm_rope": "rope",
    "qk_norm_rope_reference": "rope",
}

OPS: dict[str, str] = {
    "rope.apply_rope": "rope",
    "rope.apply_rope_qk": "rope",
    "rope.rope_3d": "rope",
    "rope.qk_norm_rope": "rope",
}
