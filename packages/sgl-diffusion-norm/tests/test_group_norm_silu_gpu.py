"""GPU lane of group_norm_silu: video-VAE shapes in both memory formats, CUDA graphs, inductor,
> 2^31 elements, and statistics over millions of elements per group."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, explain, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

OP = "norm.group_norm_silu"


def _tol(dtype):
    return next(s for s in REGISTRY.specs(OP) if s.backend == "triton").contract.tolerance(dtype)


def _inputs(shape, channels_last, dtype=torch.bfloat16, mean=0.0):
    x = torch.randn(shape, device="cuda", dtype=torch.float32).add_(mean).to(dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
    C = shape[1]
    return x, (torch.rand(C, device="cuda", dtype=dtype) + 0.5), (torch.randn(C, device="cuda", dtype=dtype) * 0.1)


def _truth(x, G, w, b, eps, silu=True):
    """GroupNorm(+SiLU) in fp64 (biased variance, eps inside the sqrt), on x's device."""
    B, C = x.shape[:2]
    xd = x.double().reshape(B, G, -1)
    mean = xd.mean(-1, keepdim=True)
    var = (xd - mean).square_().mean(-1, keepdim=True)
    y = (xd - mean).div_((var + eps).sqrt_()).reshape(x.shape)
    view = (1, C, *([1] * (x.dim() - 2)))
    if w is not None:
        y = y * w.double().reshape(view)
    if b is not None:
        y = y + b.double().reshape(view)
    return F.silu(y) if silu else y


def _worst(name, a, e, atol, rtol):
    """``name``: the worst element of ``|a - e| / (atol + rtol |e|)`` (> 1 fails) and its coordinates."""
    err = (a.double() - e.double()).abs()
    r = (err / (atol + rtol * e.double().abs())).flatten()
    i = int(r.argmax())
    idx = tuple(int(k) for k in torch.unravel_index(torch.tensor(i), a.shape))
    return (float(r[i]), f"{name}: worst ratio {float(r[i]):.3g} ({int((r > 1).sum())} over 1) at {list(idx)}: "
            f"{a.flatten()[i].item()!r} vs {e.flatten()[i].item()!r}")


def _check_all(x, G, w, b, eps=1e-6):
    """The contract (close to the fp32 chain), the VAE's bf16 chain, and, so that a failure says
    which side is off, every result against the fp64 formula (one bf16 rounding unit + fp32 slack
    for the kernel); all comparisons are reported at once."""
    out = norm.group_norm_silu(x, G, w, b, eps=eps, backend="triton")
    ref = norm.group_norm_silu_reference(x, G, w, b, eps=eps)
    eager = F.silu(F.group_norm(x, G, w, b, eps))
    assert out.stride() == x.stride()
    atol, rtol = _tol(x.dtype)
    t = _truth(x, G, w, b, eps)
    # The bf16 eager chain (what a bf16 VAE runs today) rounds twice, after the norm and after
    # SiLU, and sits up to 2 bf16 units off fp64 (H200: worst ratio 33-40 against the
    # 1-unit bound below), so it cannot be a reference at the contract's 1-unit tolerance: the
    # kernel is held to the fp32 chain (the contract) and to fp64, and must be at least as
    # accurate as the bf16 eager chain.
    eager_vs_fp64 = _worst("bf16 eager chain vs fp64", eager, t, 1e-5, 2.0**-8 + 1e-5)
    ours_vs_fp64 = _worst("triton vs fp64 (one bf16 unit + 1e-5)", out, t, 1e-5, 2.0**-8 + 1e-5)
    checks = [_worst("triton vs the fp32 chain (contract)", out, ref, atol, rtol), ours_vs_fp64,
              (ours_vs_fp64[0] / max(eager_vs_fp64[0], 1.0), "triton no less accurate than the bf16 eager chain "
               f"(worst ratios vs fp64: ours {ours_vs_fp64[0]:.3g}, eager {eager_vs_fp64[0]:.3g})")]
    info = [_worst("fp32 chain vs fp64", ref, t, 1e-5, 2.0**-8 + 1e-5)[1], eager_vs_fp64[1],
            _worst("triton vs the bf16 eager chain", out, eager, atol, rtol)[1]]
    failed = [m for r, m in checks if not r <= 1.0]
    assert not failed, "\n".join(failed + ["(for reference)"] + [m for r, m in checks if r <= 1.0] + info)


@pytest.mark.parametrize("shape,G", [((1, 192, 21, 240, 416), 32), ((1, 96, 21, 240, 416), 32),
                                     ((1, 384, 21, 120, 208), 32), ((1, 512, 128, 128), 32),
                                     ((2, 6, 5, 64, 64), 3), ((1, 1024, 3, 60, 104), 32)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_vae_shapes(shape, G, channels_last):
    torch.manual_seed(0)
    x, w, b = _inputs(shape, channels_last)
    _check_all(x, G, w, b)


# A split matrix around the 4-D case (1, 512, 128, 128) / 32 groups, the shape whose closeness to
# the bf16 eager chain fails (see _check_all). Under the GPU split that shape has 16 channels per
# group (channel blocks of whole groups, no masked lane), P = 2^14 (every tile full) and exactly
# one tile per statistics program (iters = 1). Each case below changes one of those, through the
# public API, so a failure names the property that matters:
#   (1, 512, 1, 128, 128)  the same launch as 5-D (size-1 frame dropped): 4-D path vs the split
#   (1, 512, 2, 128, 128)  two tiles per statistics program (iters = 2)
#   (2, 512, 128, 128)     two samples (iters = 2)
#   (1, 512, 64, 64)       P = 2^12, one tile per program, 512 programs (a quarter of the target)
#   (1, 384, 128, 128)     12 channels per group (masked lanes in each channel block), iters = 1
#   (1, 1024, 128, 128)    32 channels per group (channels_last: 1024-channel rows), iters = 2
@pytest.mark.parametrize("shape", [(1, 512, 128, 128), (1, 512, 1, 128, 128), (1, 512, 2, 128, 128),
                                   (2, 512, 128, 128), (1, 512, 64, 64), (1, 384, 128, 128),
                                   (1, 1024, 128, 128)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_4d_split_matrix(shape, channels_last):
    torch.manual_seed(0)
    x, w, b = _inputs(shape, channels_last)
    _check_all(x, 32, w, b)


def test_large_mean_fp32_against_fp64():
    """|mean| = 100 x std over 4.2M elements per group: the split statistics stay accurate."""
    x, w, _ = _inputs((1, 96, 21, 120, 208), True, torch.float32, mean=100.0)
    out = norm.group_norm_silu(x, 32, w, None, silu=False)
    xd = x.double().reshape(1, 32, -1)
    mean, var = xd.mean(-1, keepdim=True), xd.var(-1, unbiased=False, keepdim=True)
    t = ((xd - mean) / (var + 1e-5).sqrt()).reshape(x.shape) * w.double().reshape(1, -1, 1, 1, 1)
    err = (out.double() - t).abs().max().item()
    assert err < 1e-3, err


def test_chooses_triton_on_gpu():
    x, w, b = _inputs((1, 96, 2, 8, 8), True)
    assert explain(OP, x, 32, w, b).chosen == "triton"


@pytest.mark.parametrize("channels_last", [False, True])
def test_more_than_2_31_elements(channels_last):
    """int64 offsets: [1, 96, 22, 1024, 1040] has 2.25e9 elements (4.5 GB bf16); 22 frames because 21
    give 2146959360 elements, just under 2^31."""
    shape = (1, 96, 22, 1024, 1040)
    assert torch.Size(shape).numel() > 2**31
    x, w, b = _inputs(shape, channels_last)
    out = norm.group_norm_silu(x, 32, w, b)
    # statistics of the first and last group in fp64, the output checked on the first and last frames
    stats = [(x[:, 3 * g:3 * g + 3].double().mean(), x[:, 3 * g:3 * g + 3].double().var(unbiased=False))
             for g in (0, 31)]
    atol, rtol = _tol(x.dtype)
    for g, (m, v) in zip((0, 31), stats):
        for t in (0, shape[2] - 1):
            xs = x[:, 3 * g:3 * g + 3, t, -4:].double()
            ws, bs = w[3 * g:3 * g + 3].double().view(1, 3, 1, 1), b[3 * g:3 * g + 3].double().view(1, 3, 1, 1)
            ref = F.silu((xs - m) / (v + 1e-5).sqrt() * ws + bs).to(x.dtype)
            testing.assert_close(out[:, 3 * g:3 * g + 3, t, -4:].contiguous(), ref, atol=atol, rtol=rtol)


def test_cuda_graph_capture():
    x, w, b = _inputs((1, 192, 5, 120, 208), True)
    norm.group_norm_silu(x, 32, w, b)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        norm.group_norm_silu(x, 32, w, b)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = norm.group_norm_silu(x, 32, w, b)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, norm.group_norm_silu(x, 32, w, b))


@pytest.mark.parametrize("channels_last", [False, True])
def test_inductor_fullgraph_and_cudagraphs(channels_last):
    import torch._dynamo

    def block(x, w, b):
        return norm.group_norm_silu(x, 32, w, b) * 2.0

    torch._dynamo.reset()
    x, w, b = _inputs((1, 192, 5, 120, 208), channels_last)
    ref = block(x, w, b)
    for mode in (None, "reduce-overhead"):
        compiled = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(x, w, b)
        testing.assert_exact(out, ref)


def test_opcheck_cuda():
    x, w, b = _inputs((2, 96, 3, 16, 16), True)
    torch.library.opcheck(torch.ops.sgl_diffusion.group_norm_silu.default, (x, w, b, 32, 1e-6, True, None, None))
