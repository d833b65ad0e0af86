# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "channel_rms_norm": "channel_rms_norm",
    "can_use_channel_rms_norm": "channel_rms_norm",
    "channel_rms_norm_reference": "channel_rms_norm",
    "gated_residual_norm_modulate": "gated_residual_norm_modulate",
    "can_use_gated_residual_norm_modulate": "gated_residual_norm_modulate",
    "gated_residual_norm_modulate_reference": "gated_residual_norm_modulate",
    "group_norm_silu": "group_norm_silu",
    "can_use_group_norm_silu": "group_norm_silu",
    "group_norm_silu_reference": "group_norm_silu",
    "layer_norm": "layer_norm",
    "can_use_layer_norm": "layer_norm",
    "layer_norm_reference": "layer_norm",
    "exact_gate": "layer_norm",
    "ln_modulate": "ln_modulate",
    "can_use_ln_modulate": "ln_modulate",
    "ln_modulate_reference": "ln_modulate",
    "qk_norm": "qk_norm",
    "can_use_qk_norm": "qk_norm",
    "qk_norm_reference": "qk_norm",
    "rms_modulate": "rms_modulate",
    "can_use_rms_modulate": "rms_modulate",
    "rms_modulate_reference": "rms_modulate",
    "rms_norm": "rms_norm",
    "can_use_rms_norm": "rms_norm",
    "rms_norm_reference": "rms_norm",
}

OPS: dict[str, str] = {
    "norm.channel_rms_norm": "channel_rms_norm",
    "norm.gated_residual_norm_modulate": "gated_residual_norm_modulate",
    "norm.group_norm_silu": "group_norm_silu",
    "norm.layer_norm": "layer_norm",
    "norm.ln_modulate": "ln_modulate",
    "norm.qk_norm": "qk_norm",
    "norm.rms_modulate": "rms_modulate",
    "norm.rms_norm": "rms_norm",
}
