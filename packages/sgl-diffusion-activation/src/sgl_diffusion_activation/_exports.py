# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "silu": "activation",
    "can_use_silu": "activation",
    "silu_reference": "activation",
    "gelu_tanh": "activation",
    "can_use_gelu_tanh": "activation",
    "gelu_tanh_reference": "activation",
    "gelu": "activation",
    "can_use_gelu": "activation",
    "gelu_reference": "activation",
    "silu_and_mul": "glu",
    "can_use_silu_and_mul": "glu",
    "silu_and_mul_reference": "glu",
    "gelu_tanh_and_mul": "glu",
    "can_use_gelu_tanh_and_mul": "glu",
    "gelu_tanh_and_mul_reference": "glu",
    "gelu_and_mul": "glu",
    "can_use_gelu_and_mul": "glu",
    "gelu_and_mul_reference": "glu",
    "silu_mul": "glu",
    "can_use_silu_mul": "glu",
    "silu_mul_reference": "glu",
    "gelu_tanh_mul": "glu",
    "can_use_gelu_tanh_mul": "glu",
    "gelu_tanh_mul_reference": "glu",
    "gelu_mul": "glu",
    "can_use_gelu_mul": "glu",
    "gelu_mul_reference": "glu",
}

OPS: dict[str, str] = {
    "activation.silu": "activation",
    "activation.gelu_tanh": "activation",
    "activation.gelu": "activation",
    "activation.silu_and_mul": "glu",
    "activation.gelu_tanh_and_mul": "glu",
    "activation.gelu_and_mul": "glu",
    "activation.silu_mul": "glu",
    "activation.gelu_tanh_mul": "glu",
    "activation.gelu_mul": "glu",
}
