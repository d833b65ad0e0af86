"""quantized_attention: every runnable backend against the definition (CPU lane: the Triton kernel under the
interpreter), the quantization's own rules, its distance to full-precision attention with and without K
smoothing on keys with outlier channels, refusals, and the compile path."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing, triton_interpret

OP = "attention.quantized_attention"


def _tol(backend, dtype):
    return next(s for s in REGISTRY.specs(OP) if s.backend == backend).contract.tolerance(dtype)


def _qkv(B, Sq, Sk, Hq, Hk, Dh, seed=0, offset=0.0, dtype=torch.bfloat16):
    """Activations as a DiT's: k with a per-channel offset (outlier channels, ``offset`` times wider)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Sq, Hq, Dh, generator=g)
    k = torch.randn(B, Sk, Hk, Dh, generator=g) + offset * torch.randn(1, 1, Hk, Dh, generator=g)
    v = torch.randn(B, Sk, Hk, Dh, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


@pytest.mark.parametrize("pv", ["bf16", "fp8"])
@pytest.mark.parametrize("qk", ["int8", "fp8"])
@pytest.mark.parametrize("B,Sq,Sk,Hq,Hk,Dh,lens", [
    (1, 40, 40, 2, 2, 64, None),
    (2, 70, 90, 4, 2, 64, [90, 41]),  # GQA, a padded second sample, partial tiles
    (1, 33, 65, 2, 1, 128, [1]),  # one valid key
    (1, 20, 200, 2, 2, 64, None),  # several key tiles: the running maximum moves (pv='fp8')
])
def test_against_the_definition(backend, device, qk, pv, B, Sq, Sk, Hq, Hk, Dh, lens):
    q, k, v = (t.to(device) for t in _qkv(B, Sq, Sk, Hq, Hk, Dh, offset=3.0))
    kv_lens = None if lens is None else torch.tensor(lens, dtype=torch.int32, device=device)
    out, lse = attn.quantized_attention(q, k, v, kv_lens=kv_lens, qk=qk, pv=pv, return_lse=True, backend=backend)
    ref, ref_lse = attn.quantized_attention_reference(q, k, v, kv_lens=kv_lens, qk=qk, pv=pv, return_lse=True)
    atol, rtol = _tol(backend, q.dtype)
    testing.assert_close(out, ref, atol=atol, rtol=rtol)
    testing.assert_close(lse, ref_lse, atol=1e-4, rtol=1e-5)
    assert out.shape == q.shape and out.dtype == q.dtype and lse.shape == (B, Hq, Sq)


def test_quantization_rules():
    definition = testing.backend_module(OP, "torch")
    key_mean, quantize_qk = definition.key_mean, definition.quantize_qk
    q, k, v = _qkv(2, 5, 70, 2, 1, 64, offset=4.0)
    k[1, 60:] = 1e4  # padding past kv_lens: never sets a scale
    lens = torch.tensor([70, 3], dtype=torch.int32)
    q8, qs, k8, ks = quantize_qk(q, k, lens, "int8", smooth_k=True)
    assert q8.dtype == torch.int8 and qs.shape == (2, 5, 2) and ks.shape == (2, 1, 2)  # 70 keys: blocks 64 + 6
    assert int(q8.abs().max()) == 127 and bool((q8.abs().amax(-1) == 127).all())  # each q row reaches the top code
    centred = k.float() - key_mean(k, lens)
    centred[1, 3:] = 0.0  # keys past kv_lens are zeroed, their codes 0
    assert not bool(k8[1, 3:].any())
    for b, first, last, blk in ((0, 0, 64, 0), (0, 64, 70, 1), (1, 0, 3, 0)):
        part = centred[b, first:last]
        assert torch.equal(ks[b, :, blk], part.abs().amax().clamp_min(1e-12).reshape(1) / 127.0)
        assert int(k8[b, first:last].abs().max()) == 127  # each key block reaches the top code
    per_key = definition.key_scales_per_key(ks, 70)
    torch.testing.assert_close(k8.float() * per_key[..., None], centred, atol=float(ks.max()) / 2 + 1e-6, rtol=0)
    torch.testing.assert_close(key_mean(k, lens)[1], k[1, :3].float().mean(0, keepdim=True))  # valid keys only
    f8, fs, _, _ = quantize_qk(q, k, None, "fp8", smooth_k=False)
    assert f8.dtype == torch.float8_e4m3fn and float(f8.float().abs().max()) == 448.0
    # pv='fp8': v per (sample, head, channel), each channel reaching the top code
    v8, vs = definition.quantize_v(v)
    assert v8.dtype == torch.float8_e4m3fn and vs.shape == (2, 1, 64)
    assert bool((v8.float().abs().amax(dim=1) == 448.0).all())
    torch.testing.assert_close(v8.float() * vs[:, None], v.float(), atol=0, rtol=2**-4)
    assert torch.equal(vs, v.float().abs().amax(dim=1).clamp_min(1e-12) / 448.0)  # amax over keys, per channel


def test_fp8_p_codes_follow_no_running_maximum():
    """pv='fp8': a flash kernel's p against a running maximum below the row's final (integer) one is the
    definition's p times a power of two, and e4m3 codes scale exactly with a power of two in their normal
    range: the running maximum changes no code."""
    e4m3 = torch.float8_e4m3fn
    x = torch.logspace(-6, 8.8, 4001, base=2.0)  # 448 p in e4m3's normal range
    for k in (1, 2, 5):
        small = x[x * 2.0**k <= 448.0]
        assert torch.equal((small * 2.0**k).to(e4m3).float(), small.to(e4m3).float() * 2.0**k)
    definition = testing.backend_module(OP, "torch")
    g = torch.Generator().manual_seed(2)
    s = torch.randn(1, 1, 3, 50, generator=g) * 3
    v8, vs = definition.quantize_v(torch.randn(1, 50, 1, 16, generator=g))
    assert definition.fp8_pv(s, v8, vs, 1).shape == (1, 1, 3, 16)


def test_distance_to_full_precision_and_smoothing(device):
    """Keys with outlier channels: int8 with smoothing within cosine 0.999 / relative L1 0.03 of fp32
    attention; smoothing reduces the error."""
    q, k, v = (t.to(device) for t in _qkv(1, 96, 96, 2, 2, 64, seed=3, offset=6.0))
    errs = {}
    for smooth in (True, False):
        out = attn.quantized_attention(q, k, v, smooth_k=smooth)
        errs[smooth] = attn.attention_error(q, k, v, out)
    assert errs[True].cosine >= 0.999 and errs[True].rel_l1 <= 0.03, errs[True]
    assert errs[True].rel_l1 < errs[False].rel_l1
    # e4m3 p and v add their rounding (measured here: cosine 0.99934, relative L1 0.0353, above the int8 /
    # bf16 form's 0.008 and the 0.03)
    fp8 = attn.attention_error(q, k, v, attn.quantized_attention(q, k, v, pv="fp8"))
    assert fp8.cosine >= 0.999 and fp8.rel_l1 <= 0.04, fp8


def test_refusals_and_selection(device):
    q, k, v = (t.to(device) for t in _qkv(1, 8, 8, 2, 2, 64))
    with pytest.raises(UnsupportedInputError, match="pv must be 'bf16'"):
        attn.quantized_attention(q, k, v, pv="int4")
    with pytest.raises(UnsupportedInputError, match="qk must be 'int8' or 'fp8'"):
        attn.quantized_attention(q, k, v, qk="int4")
    with pytest.raises(UnsupportedInputError, match="kv_lens has dtype torch.int64"):
        attn.quantized_attention(q, k, v, kv_lens=torch.tensor([8], device=device))
    odd = torch.randn(1, 8, 2, 96, device=device).to(torch.bfloat16)  # Dh 96: the definition serves it
    assert not attn.can_use_quantized_attention(odd, odd, odd, backend="triton")
    assert attn.quantized_attention(odd, odd, odd).shape == odd.shape
    # opt-in only: the dense op has no 8-bit backend to choose
    assert not any("quant" in s.backend or "8" in s.backend for s in REGISTRY.specs("attention.attention"))
    empty = attn.quantized_attention(q[:, :0], k, v, return_lse=True)
    assert empty[0].shape == (1, 0, 2, 64) and empty[1].shape == (1, 2, 0)


@pytest.mark.parametrize("return_lse", [False, True])
def test_compile_fullgraph(device, return_lse):
    import torch._dynamo

    q, k, v = (t.to(device) for t in _qkv(1, 24, 24, 2, 2, 64))

    def f(q, k, v):
        res = attn.quantized_attention(q, k, v, qk="int8", return_lse=return_lse)
        return res[0] * 2 + res[1].sum() if return_lse else res * 2

    torch._dynamo.reset()
    assert torch._dynamo.explain(f)(q, k, v).graph_break_count == 0
    testing.assert_exact(torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v), f(q, k, v))


@pytest.mark.parametrize("qk", ["int8", "fp8"])
@pytest.mark.parametrize("smooth", [True, False])
@pytest.mark.parametrize("with_lens", [True, False])
def test_triton_quantization_is_the_definitions(qk, smooth, with_lens):
    """The Triton pre-passes (interpreter) write the torch definition's codes and scales bit for bit, on a
    strided bshd view (a bhsd tensor transposed): q's rows (a partial last program, ties at .5 for int8, an
    all-zero row), k's blocks of 64 keys (a partial last block, padding past kv_lens, an all-zero block)."""
    if not triton_interpret():
        pytest.skip("CPU lane: the Triton pre-pass runs under TRITON_INTERPRET=1")
    definition = testing.backend_module(OP, "torch")
    kernel = testing.backend_module(OP, "triton")
    B, S, H, Dh = 2, 13, 3, 64
    g = torch.Generator().manual_seed(1)
    q = (torch.randn(B, H, S, Dh, generator=g) * 4 + 2).to(torch.bfloat16).transpose(1, 2)  # strided bshd
    q[0, 2, 1] = 0.0
    q[1, 0, 0, :2] = torch.tensor([127.0, 63.5])  # scale 1 (int8): 63.5 rounds to 64 (ties to even)
    q[1, 0, 0, 2:] = 0.5
    codes, scales = kernel.quantize_rows_launch(q, qk)(q)
    want = definition._rows(q, qk)
    _same_codes(codes, scales, want, qk)

    Sk = 150  # key blocks 64, 64, 22
    k = (torch.randn(B, H, Sk, Dh, generator=g) * 4 + 2).to(torch.bfloat16).transpose(1, 2)
    k[0, 64:128, 1] = 0.0
    if not smooth:
        k[0, 64:128] = 0.0  # an all-zero block: scale 1e-12 / top, codes 0
    lens = torch.tensor([150, 70], dtype=torch.int32) if with_lens else None
    if with_lens:
        k[1, 70:] = 3e4  # padding: zeroed, never in a scale
    mean = definition.key_mean(k, lens).contiguous() if smooth else None
    codes, scales = kernel.quantize_key_blocks_launch(k, qk, smooth, with_lens)(k, mean, lens)
    want = definition._key_blocks(k.float() - mean if smooth else k, lens, qk)
    assert scales.shape == (B, H, 3)
    _same_codes(codes, scales, want, qk)
    if qk == "fp8" and not smooth:  # v of pv='fp8': per-channel scales given, codes [B, H, Dh, S_pad]
        v_codes, v_scales = kernel.quantize_v_launch(k)(k, definition.channel_scales(k))
        want_v = definition.quantize_v(k)
        assert v_codes.shape == (B, H, Dh, 192)  # 150 keys rounded up to KEY_BLOCK
        assert torch.equal(v_scales, want_v[1])
        assert torch.equal(v_codes[..., :Sk].permute(0, 3, 1, 2).view(torch.uint8), want_v[0].view(torch.uint8))


def _same_codes(codes, scales, want, qk):
    assert torch.equal(scales, want[1])
    assert torch.equal(codes.view(torch.uint8) if qk == "fp8" else codes,
                       want[0].view(torch.uint8) if qk == "fp8" else want[0])
