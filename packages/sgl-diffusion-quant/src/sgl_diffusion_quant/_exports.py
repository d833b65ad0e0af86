# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

"""The lazy surface of this package: public name -> module, op id -> module."""

EXPORTS: dict[str, str] = {
    "FP8Linear": "fp8_layer",
    "InputCodes": "fp8_layer",
    "fp8_linear": "fp8_linear",
    "can_use_fp8_linear": "fp8_linear",
    "fp8_linear_reference": "fp8_linear",
    "quantize_fp8": "quantize_fp8",
    "can_use_quantize_fp8": "quantize_fp8",
    "quantize_fp8_reference": "quantize_fp8",
}

OPS: dict[str, str] = {
    "quant.fp8_linear": "fp8_linear",
    "quant.quantize_fp8": "quantize_fp8",
}
