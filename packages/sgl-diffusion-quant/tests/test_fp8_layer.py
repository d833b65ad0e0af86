"""FP8Linear: built from an nn.Linear (weight per output channel in the device's FP8 format), its
forward against fp8_linear of the quantized input, its FP8-input form, reversal, and refusals."""

import pytest
import torch
import torch.nn.functional as F

from sgl_diffusion_core import UnsupportedInputError, testing
from sgl_diffusion_quant import FP8Linear, fp8_linear_reference, quantize_fp8_reference


def _linear(K=64, N=48, bias=True):
    torch.manual_seed(0)
    return torch.nn.Linear(K, N, bias=bias).to(torch.bfloat16)


@pytest.mark.parametrize("epilogue", [None, "gelu_tanh"])
@pytest.mark.parametrize("bias", [True, False])
def test_forward_is_fp8_linear_of_the_quantized_input(epilogue, bias):
    lin = _linear(bias=bias)
    layer = FP8Linear.from_linear(lin, epilogue=epilogue)
    wq, ws = quantize_fp8_reference(lin.weight.detach(), dtype=torch.float8_e4m3fn)
    assert torch.equal(layer.weight_fp8.view(torch.uint8), wq.view(torch.uint8)) and torch.equal(layer.weight_scale, ws)
    x = torch.randn(2, 7, 64).to(torch.bfloat16)
    xq, xs = quantize_fp8_reference(x, dtype=torch.float8_e4m3fn)
    want = fp8_linear_reference(xq, xs, wq, ws, lin.bias, out_dtype=torch.bfloat16, epilogue=epilogue)
    testing.assert_exact(layer(x), want)  # the CPU runs the references themselves
    ref = lin(x).float()
    ref = F.gelu(ref, approximate="tanh") if epilogue else ref
    assert F.cosine_similarity(layer(x).float().flatten(), ref.flatten(), dim=0) > 0.998


@pytest.mark.parametrize("epilogue", [None, "gelu_tanh"])
def test_compiled_forward_traces_the_quantization(epilogue):
    """Under torch.compile the input quantization is traced as its torch definition (no quantize_fp8
    custom op in the graph) and the layer still equals fp8_linear of the quantized input."""
    lin = _linear()
    layer = FP8Linear.from_linear(lin, epilogue=epilogue)
    x = torch.randn(2, 7, 64).to(torch.bfloat16)
    xq, xs = quantize_fp8_reference(x, dtype=torch.float8_e4m3fn)
    want = fp8_linear_reference(xq, xs, layer.weight_fp8, layer.weight_scale, lin.bias, out_dtype=torch.bfloat16,
                                epilogue=epilogue)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    testing.assert_exact(torch.compile(layer, fullgraph=True, backend=backend)(x), want)
    code = "".join(gm.code for gm in graphs)
    assert "quantize_fp8" not in code and "fp8_linear" in code


def test_fp8_input_and_gated_residual():
    lin = _linear()
    layer = FP8Linear.from_linear(lin)
    x = torch.randn(1, 5, 64).to(torch.bfloat16)
    xq, xs = quantize_fp8_reference(x, dtype=torch.float8_e4m3fn)
    res, gate = torch.randn(1, 5, 48).to(torch.bfloat16), torch.randn(1, 1, 48).to(torch.bfloat16)
    got = layer.forward_fp8(xq, xs, out_dtype=torch.bfloat16, residual=res, gate=gate)
    want = fp8_linear_reference(xq, xs, layer.weight_fp8, layer.weight_scale, lin.bias, out_dtype=torch.bfloat16,
                                epilogue="gated_residual", residual=res, gate=gate)
    testing.assert_exact(got, want)
    with pytest.raises(ValueError, match="takes no residual"):
        FP8Linear.from_linear(lin, epilogue="gelu_tanh").forward_fp8(xq, xs, out_dtype=torch.bfloat16, residual=res,
                                                                     gate=gate)


def test_to_linear_and_refusals():
    lin = _linear()
    layer = FP8Linear.from_linear(lin)
    back = layer.to_linear()
    assert back.weight.dtype == torch.bfloat16 and torch.equal(back.bias, lin.bias)
    assert (back.weight.float() - lin.weight.float()).abs().max() <= lin.weight.float().abs().max() / 16
    with pytest.raises(ValueError, match="epilogue"):
        FP8Linear.from_linear(lin, epilogue="relu")
    with pytest.raises(UnsupportedInputError, match="weight_scale"):
        FP8Linear(layer.weight_fp8, torch.ones(3, 1))
    with pytest.raises(UnsupportedInputError, match="is not supported|expected"):
        FP8Linear.from_linear(lin, dtype=torch.float16)(torch.randn(2, 64).to(torch.bfloat16))
    with pytest.raises(ValueError, match="accumulate is 'bf16'"):
        FP8Linear.from_linear(lin, accumulate="bf16")
    fast = FP8Linear.from_linear(lin, accumulate="fast")
    assert "accumulate=fast" in repr(fast)
    x = torch.randn(2, 64).to(torch.bfloat16)
    testing.assert_exact(fast(x), FP8Linear.from_linear(lin)(x))  # the CPU sums in fp32 either way


def test_layers_sharing_an_input_quantize_it_once():
    """q / k / v projections of one input: one quantization, the same results as unshared layers; an input
    changed in place, another tensor or a dead one is quantized again."""
    from sgl_diffusion_quant import InputCodes

    layers = [FP8Linear.from_linear(_linear(N=n)) for n in (48, 32, 16)]
    x = torch.randn(2, 5, 64).to(torch.bfloat16)
    alone = [layer(x) for layer in layers]
    shared = InputCodes()
    for layer in layers:
        layer.shared_input = shared
    together = [layer(x) for layer in layers]
    assert shared.hits == 2
    for a, b in zip(alone, together):
        testing.assert_exact(b, a)
    x.mul_(2.0)  # in place: a new version, quantized again
    testing.assert_exact(layers[0](x), FP8Linear.from_linear(_linear(N=48))(x))
    assert shared.hits == 2
    assert shared.held
    layers[1](x.clone())  # another tensor: quantized again, then gone with the clone
    assert shared.hits == 2 and not shared.held
