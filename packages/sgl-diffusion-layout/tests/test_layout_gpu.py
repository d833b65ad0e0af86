"""GPU lane: torch.equal against CUDA eager at production shapes (docs/design.md).

Never run on a GPU when written (no GPU in the authoring session); the lead's GPU session runs it.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]
OP = "layout.ulysses_pack_qkv"

QKV = {"wan720p": (1, 75600, 40, 128), "hunyuan720p": (1, 118800, 24, 128)}


def _qkv(B, S, H, Dh):
    return [torch.randn(B, S, H, Dh, device="cuda", dtype=torch.bfloat16) for _ in range(3)]


@pytest.mark.parametrize("name", list(QKV))
@pytest.mark.parametrize("world", [1, 2, 4, 8])
def test_ulysses_production(name, world):
    B, S, H, Dh = QKV[name]
    q, k, v = _qkv(B, S, H, Dh)
    buf = lay.ulysses_pack_qkv(q, k, v, world)
    testing.assert_exact(buf, lay.ulysses_pack_qkv_reference(q, k, v, world))
    for got, ref in zip(lay.ulysses_unpack_qkv(buf[:, : S // world], world, B),
                        lay.ulysses_unpack_qkv_reference(buf[:, : S // world], world, B)):
        testing.assert_exact(got, ref)
    o = q[:, :, : H // world]
    testing.assert_exact(lay.ulysses_pack_out(o, world), lay.ulysses_pack_out_reference(o, world))
    y = q[:, : S // world]
    testing.assert_exact(lay.usp_split_heads(y, world), lay.usp_split_heads_reference(y, world))
    x = lay.usp_split_heads_reference(y, world)
    testing.assert_exact(lay.usp_merge_heads(x), x.permute(2, 1, 0, 3, 4).contiguous())


@pytest.mark.parametrize("name", list(QKV))
def test_varlen_production(name):
    B, S, H, Dh = QKV[name]
    B = 2
    mask = torch.rand(B, S, device="cuda") < 0.8
    mask[1, S // 2:] = False
    meta = lay.build_varlen_meta(mask)
    ref = lay.build_varlen_meta_reference(mask)
    for a, b in zip(meta, ref):
        assert (a == b) if isinstance(a, int) else torch.equal(a, b)
    idx, _, _, inv = ref
    q, k, v = (t.transpose(1, 2) for t in (torch.randn(B, H, S, Dh, device="cuda", dtype=torch.bfloat16)
                                           for _ in range(3)))  # permuted [B, H, S, Dh] views
    packed = lay.varlen_pack_qkv(q, k, v, idx)
    for got, want in zip(packed, lay.varlen_pack_qkv_reference(q, k, v, idx)):
        testing.assert_exact(got, want)
    testing.assert_exact(lay.varlen_scatter(packed[0], inv, B, S), lay.varlen_scatter_reference(packed[0], inv, B, S))


def test_joint_flux_and_qwen():
    for B, Si, St, H, Dh in ((1, 4096, 512, 24, 128), (2, 6889, 512, 24, 128), (1, 4096, 333, 38, 64)):
        img, txt = _qkv(B, Si, H, Dh), _qkv(B, St, H, Dh)
        out = lay.joint_qkv_cat(*img, *txt)
        testing.assert_exact(out, lay.joint_qkv_cat_reference(*img, *txt))
        for a, b in zip(lay.joint_split(out[0], St, Si, copy=True), (out[0, :, :St], out[0, :, St:])):
            testing.assert_exact(a, b.contiguous())


def test_more_than_2_31_elements():
    """usp_merge_heads on a [2, 75600, 1, 112, 128] bf16 tensor: 2.17e9 elements (int64 offsets)."""
    x = torch.randn(2, 75600, 1, 112, 128, device="cuda", dtype=torch.bfloat16)
    assert x.numel() > 2**31
    got = lay.usp_merge_heads(x)
    testing.assert_exact(got, x.permute(2, 1, 0, 3, 4).contiguous())


def test_cuda_graph_and_compile():
    q, k, v = _qkv(1, 4608, 24, 128)
    buf = lay.ulysses_pack_qkv(q, k, v, 4)  # warm the plan before capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = lay.ulysses_pack_qkv(q, k, v, 4)
    g.replay()
    testing.assert_exact(out, buf)
    f = torch.compile(lambda q, k, v: lay.ulysses_unpack_qkv(lay.ulysses_pack_qkv(q, k, v, 1), 1, 1), fullgraph=True)
    for a, b in zip(f(q, k, v), (q, k, v)):
        testing.assert_exact(a, b)


@pytest.mark.parametrize("C,T,H,W", [(96, 21, 240, 416), (384, 4, 120, 208)])
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last_3d"])
def test_causal_conv3d_cat_pad_vae(C, T, H, W, fmt):
    import torch.nn.functional as F

    mf = torch.channels_last_3d if fmt == "channels_last_3d" else torch.contiguous_format
    x = torch.randn(1, C, T, H, W, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=mf)
    cache = torch.randn(1, C, 2, H, W, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=mf)
    for c, pad in ((cache, (1, 1, 1, 1, 0, 0)), (None, (1, 1, 1, 1, 2, 0))):
        out = lay.causal_conv3d_cat_pad(x, c, pad)
        testing.assert_exact(out, F.pad(x if c is None else torch.cat([c, x], dim=2), pad))
        assert out.is_contiguous(memory_format=mf)


@pytest.mark.parametrize("shape,sf", [((21, 384, 120, 208), 2), ((1, 192, 11, 120, 208), (2, 2, 2)),
                                      ((1, 96, 21, 240, 416), (1, 2, 2))])
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_upsample_vae(shape, sf, fmt, mode):
    import torch.nn.functional as F

    mf = {4: torch.channels_last, 5: torch.channels_last_3d}[len(shape)] if fmt == "channels_last" else \
        torch.contiguous_format
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=mf)
    out = lay.nearest_upsample(x, sf, mode=mode)
    want = F.interpolate(x, scale_factor=sf, mode=mode)
    testing.assert_exact(out, want)
    assert out.stride() == want.stride()


def test_cat_pad_and_upsample_more_than_2_31_elements():
    """Outputs of more than 2^31 elements (int64 offsets in both kernels)."""
    import torch.nn.functional as F

    x = torch.randn(1, 96, 21, 480, 832, device="cuda", dtype=torch.bfloat16)  # 805M in, 3.2G out
    out = lay.nearest_upsample(x, (1, 2, 2))
    assert out.numel() > 2**31
    testing.assert_exact(out, F.interpolate(x, scale_factor=(1, 2, 2)))
    del out
    # 1 x 128 x 22 x 960 x 832 = 2.25e9 elements (22 frames: 21 give 2146959360, just under 2^31)
    y = torch.randn(1, 128, 22, 960, 832, device="cuda", dtype=torch.bfloat16)
    assert y.numel() > 2**31
    testing.assert_exact(lay.causal_conv3d_cat_pad(y, None, (1, 1, 1, 1, 2, 0)), F.pad(y, (1, 1, 1, 1, 2, 0)))
