"""GPU lane of channel_rms_norm: Wan-VAE shapes in both memory formats, CUDA graphs, inductor,
> 2^31 elements."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, explain, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

OP = "norm.channel_rms_norm"


def _tol(dtype):
    return next(s for s in REGISTRY.specs(OP) if s.backend == "triton").contract.tolerance(dtype)


def _inputs(shape, channels_last, dtype=torch.bfloat16):
    x = torch.randn(shape, device="cuda", dtype=dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
    C = shape[1]
    view = (C, *([1] * (len(shape) - 2)))
    return x, (torch.rand(C, device="cuda", dtype=dtype) + 0.5).reshape(view), \
        (torch.randn(C, device="cuda", dtype=dtype) * 0.1).reshape(view)


@pytest.mark.parametrize("shape", [(1, 96, 21, 240, 416), (1, 384, 21, 120, 208), (1, 192, 5, 240, 416),
                                   (1, 1024, 3, 60, 104), (2, 96, 240, 416), (1, 384, 120, 208)])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("silu", [False, True])
def test_vae_shapes(shape, channels_last, silu):
    torch.manual_seed(0)
    x, g, b = _inputs(shape, channels_last)
    out = norm.channel_rms_norm(x, g, b, silu=silu)
    ref = norm.channel_rms_norm_reference(x, g, b, silu=silu)
    assert out.stride() == x.stride()
    atol, rtol = _tol(x.dtype)
    testing.assert_close(out, ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(1, 384, 21, 120, 208), (1, 320, 3, 60, 104)])
def test_other_dtypes_held_slab(shape, dtype):
    """fp16 / fp32 where contiguous x holds its slab (257-384 channels): fp16's held values widen
    through their bits in the output pass; against the fp32 chain at the contract's tolerance."""
    torch.manual_seed(1)
    x, g, b = _inputs(shape, False, dtype)
    out = norm.channel_rms_norm(x, g, b, silu=True)
    atol, rtol = _tol(x.dtype)
    testing.assert_close(out, norm.channel_rms_norm_reference(x, g, b, silu=True), atol=atol, rtol=rtol)


def test_chooses_triton_on_gpu():
    x, g, b = _inputs((1, 96, 2, 8, 8), True)
    assert explain(OP, x, g, b).chosen == "triton"


@pytest.mark.parametrize("channels_last", [False, True])
def test_more_than_2_31_elements(channels_last):
    """int64 offsets: 96 x 22 x 1024 x 1040 = 2.25e9 elements (4.5 GB bf16); 22 frames because 21
    give 2146959360 elements, just under 2^31."""
    shape = (1, 96, 22, 1024, 1040)
    assert torch.Size(shape).numel() > 2**31
    x, g, b = _inputs(shape, channels_last)
    out = norm.channel_rms_norm(x, g, b, silu=True)
    atol, rtol = _tol(x.dtype)
    # the first frame and the last one (its last rows lie past element 2^31 in both layouts)
    for t in (slice(0, 1), slice(shape[2] - 1, shape[2])):
        xs = x[:, :, t, -8:].contiguous()
        testing.assert_close(out[:, :, t, -8:].contiguous(), norm.channel_rms_norm_reference(xs, g, b, silu=True),
                             atol=atol, rtol=rtol)


def test_cuda_graph_capture():
    x, g, b = _inputs((1, 96, 5, 120, 208), True)
    norm.channel_rms_norm(x, g, b, silu=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        norm.channel_rms_norm(x, g, b, silu=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = norm.channel_rms_norm(x, g, b, silu=True)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, norm.channel_rms_norm(x, g, b, silu=True))


@pytest.mark.parametrize("channels_last", [False, True])
def test_inductor_fullgraph_and_cudagraphs(channels_last):
    import torch._dynamo

    def block(x, g, b):
        return norm.channel_rms_norm(x, g, b, silu=True) * 2.0

    torch._dynamo.reset()
    x, g, b = _inputs((1, 96, 5, 120, 208), channels_last)
    ref = block(x, g, b)
    for mode in (None, "reduce-overhead"):
        compiled = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(x, g, b)
        testing.assert_exact(out, ref)


def test_opcheck_cuda():
    x, g, b = _inputs((2, 96, 3, 16, 16), True)
    torch.library.opcheck(torch.ops.sgl_diffusion.channel_rms_norm.default, (x, g, b, 1e-12, True, None, None))
