"""attention against an fp64 oracle, on every backend this lane runs (torch; triton under the interpreter).

Shapes are small (S <= 70, Dh 32 / 64, one case at 96: the masked head-dim tile) so that the
Triton interpreter stays fast; the interpreter's tiles are 32 x 32, so S = 70 crosses full and
tail tiles of queries and keys. The tolerances are the ones the close backends declare
(output per dtype, lse 1e-3 absolute); the torch backend (the definition) is held to the same.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing

OP = "attention.attention"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")


def oracle(q, k, v, *, layout="bshd", scale=None, kv_lens=None):
    """``(o, lse)`` in fp64 in q's layout, GQA by repeating k/v heads."""
    qd, kd, vd = (t.double() if layout == "bhsd" else t.double().transpose(1, 2) for t in (q, k, v))
    rep = qd.shape[1] // kd.shape[1]
    kd, vd = kd.repeat_interleave(rep, dim=1), vd.repeat_interleave(rep, dim=1)
    s = qd @ kd.transpose(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if kv_lens is not None:
        keep = torch.arange(kd.shape[2]) < kv_lens.cpu().long()[:, None]
        s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
    o = torch.softmax(s, dim=-1) @ vd
    return (o if layout == "bhsd" else o.transpose(1, 2)), torch.logsumexp(s, dim=-1)


def close(actual, expected, dtype):
    atol, rtol = CLOSE.tolerance(dtype)
    testing.assert_close(actual.float(), expected.float(), atol=atol, rtol=rtol)


def close_lse(actual, expected):
    assert actual.dtype == torch.float32
    testing.assert_close(actual, expected.float(), atol=CLOSE.tolerance(torch.float32)[0], rtol=0.0)


def qkv(B, Sq, Sk, Hq, Hk, Dh, dtype, layout="bshd", seed=0):
    g = torch.Generator().manual_seed(seed)

    def make(S, H):
        t = torch.randn(B, S, H, Dh, generator=g).to(dtype)
        return t if layout == "bshd" else t.transpose(1, 2).contiguous()

    return make(Sq, Hq), make(Sk, Hk), make(Sk, Hk)


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("Dh", [32, 64])
def test_dense(backend, device, layout, dtype, Dh):
    q, k, v = (t.to(device) for t in qkv(2, 70, 45, 2, 2, Dh, dtype, layout))
    o, lse = attn.attention(q, k, v, layout=layout, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v, layout=layout)
    assert o.shape == q.shape and o.dtype == dtype and o.is_contiguous()
    close(o, ref, dtype)
    close_lse(lse, ref_lse)
    testing.assert_exact(attn.attention(q, k, v, layout=layout, backend=backend), o)


def test_head_dim_96_and_scale(backend, device):
    q, k, v = (t.to(device) for t in qkv(1, 20, 37, 2, 2, 96, torch.bfloat16))
    o, lse = attn.attention(q, k, v, scale=0.3, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v, scale=0.3)
    close(o, ref, torch.bfloat16)
    close_lse(lse, ref_lse)


def test_fp32_on_torch_only(device):
    q, k, v = (t.to(device) for t in qkv(2, 9, 9, 2, 2, 32, torch.float32))
    testing.assert_close(attn.attention(q, k, v, backend="torch"), oracle(q, k, v)[0].float(),
                         atol=1e-5, rtol=1e-5)
    with pytest.raises(UnsupportedInputError, match="dtype float32 is not supported"):
        attn.attention(q, k, v, backend="triton")


def test_fused_qkv_views(backend, device):
    """Strided views of a fused [B, S, 3, H, Dh] projection, read in place."""
    fused = torch.randn(2, 40, 3, 2, 64, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16).to(device)
    q, k, v = fused.unbind(2)
    assert not q.is_contiguous() and q.stride(-1) == 1
    o, lse = attn.attention(q, k, v, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v)
    close(o, ref, torch.bfloat16)
    close_lse(lse, ref_lse)


@pytest.mark.parametrize("Hk", [1, 2])
def test_gqa(backend, device, Hk):
    q, k, v = (t.to(device) for t in qkv(2, 33, 40, 4, Hk, 32, torch.float16))
    o, lse = attn.attention(q, k, v, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v)
    close(o, ref, torch.float16)
    close_lse(lse, ref_lse)


@pytest.mark.parametrize("lens,idt", [([1, 70], torch.int32), ([33, 64], torch.int64), ([70, 31], torch.int32)])
def test_kv_lens(backend, device, lens, idt):
    q, k, v = (t.to(device) for t in qkv(2, 40, 70, 2, 2, 64, torch.bfloat16, seed=3))
    kv_lens = torch.tensor(lens, dtype=idt, device=device)
    o, lse = attn.attention(q, k, v, kv_lens=kv_lens, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v, kv_lens=kv_lens)
    close(o, ref, torch.bfloat16)
    close_lse(lse, ref_lse)
    # padded keys are ignored: the same as dense attention over the valid keys of each sample
    for b, n in enumerate(lens):
        dense = attn.attention(q[b:b + 1], k[b:b + 1, :n], v[b:b + 1, :n], backend=backend)
        close(o[b:b + 1], dense, torch.bfloat16)


def _packed(lens_q, lens_k, H, Hk, Dh, dtype, device):
    g = torch.Generator().manual_seed(4)
    q = torch.randn(sum(lens_q), H, Dh, generator=g).to(dtype).to(device)
    k = torch.randn(sum(lens_k), Hk, Dh, generator=g).to(dtype).to(device)
    v = torch.randn(sum(lens_k), Hk, Dh, generator=g).to(dtype).to(device)

    def cu(lens):
        return torch.tensor([0, *torch.tensor(lens).cumsum(0).tolist()], dtype=torch.int32, device=device)

    return q, k, v, cu(lens_q), cu(lens_k)


@pytest.mark.parametrize("max_seqlen_q", [None, 70, 95])
def test_varlen(backend, device, max_seqlen_q):
    """A packed batch of 3 unequal segments equals dense attention per segment (any bound of the lengths)."""
    lens_q, lens_k = [5, 70, 20], [7, 41, 1]
    q, k, v, cq, ck = _packed(lens_q, lens_k, 2, 1, 32, torch.bfloat16, device)
    o, lse = attn.attention(q, k, v, layout="thd", cu_seqlens_q=cq, cu_seqlens_k=ck, max_seqlen_q=max_seqlen_q,
                            return_lse=True, backend=backend)
    assert o.shape == q.shape and lse.shape == (2, q.shape[0])
    for b in range(3):
        qs, qe, ks, ke = cq[b].item(), cq[b + 1].item(), ck[b].item(), ck[b + 1].item()
        ref, ref_lse = oracle(q[None, qs:qe], k[None, ks:ke], v[None, ks:ke])
        close(o[qs:qe], ref[0], torch.bfloat16)
        close_lse(lse[:, qs:qe], ref_lse[0])
        dense = attn.attention(q[None, qs:qe], k[None, ks:ke], v[None, ks:ke], backend=backend)
        close(o[None, qs:qe], dense, torch.bfloat16)


def test_varlen_empty_segments(backend, device):
    """An empty query segment writes nothing; an empty key segment gives output 0 and lse -inf."""
    q, k, v, cq, ck = _packed([0, 9, 6], [5, 0, 8], 2, 2, 32, torch.float16, device)
    o, lse = attn.attention(q, k, v, layout="thd", cu_seqlens_q=cq, cu_seqlens_k=ck, return_lse=True,
                            backend=backend)
    assert torch.equal(o[:9], torch.zeros_like(o[:9])) and bool((lse[:, :9] == float("-inf")).all())
    ref, ref_lse = oracle(q[None, 9:], k[None, 5:], v[None, 5:])
    close(o[9:], ref[0], torch.float16)
    close_lse(lse[:, 9:], ref_lse[0])


def test_out(backend, device):
    q, k, v = (t.to(device) for t in qkv(2, 30, 30, 2, 2, 32, torch.bfloat16))
    buf = torch.full((2, 30, 4, 32), 7.0, dtype=torch.bfloat16, device=device)
    out = buf[:, :, 1:3]  # a strided view
    res = attn.attention(q, k, v, out=out, backend=backend)
    assert res is out
    close(out, oracle(q, k, v)[0], torch.bfloat16)
    assert bool((buf[:, :, 0] == 7).all()) and bool((buf[:, :, 3] == 7).all())
    o2, lse = attn.attention(q, k, v, out=torch.empty_like(q), return_lse=True, backend=backend)
    close(o2, oracle(q, k, v)[0], torch.bfloat16)


def test_out_of_range_values_poison_their_sample(backend, device):
    """Values a GPU call does not check (kv_lens outside [1, Sk]) give NaN rows for their sample only,
    on every backend alike (called below the CPU value check, as a GPU call runs)."""
    q, k, v = (t.to(device) for t in qkv(3, 20, 24, 2, 2, 32, torch.bfloat16))
    kv_lens = torch.tensor([0, 10, 99], dtype=torch.int32, device=device)
    geom = testing.geometry(OP, q, k, v, kv_lens=torch.ones(3, dtype=torch.int32, device=device), return_lse=True)
    run = testing.backend_prepare(OP, backend)(geom, q, k, v, kv_lens, None, None, None)
    o, lse = run(q, k, v, kv_lens, None, None, None)
    assert bool(o[0].isnan().all()) and bool(o[2].isnan().all()) and bool(lse[0].isnan().all())
    ref, ref_lse = oracle(q[1:2], k[1:2, :10], v[1:2, :10])
    close(o[1:2], ref, torch.bfloat16)
    close_lse(lse[1:2], ref_lse)


@pytest.mark.parametrize("B,Sq,Sk", [(0, 5, 5), (2, 0, 5), (2, 4, 0)])
def test_empty(backend, device, B, Sq, Sk):
    q, k, v = (t.to(device) for t in qkv(B, Sq, Sk, 2, 2, 32, torch.bfloat16))
    o, lse = attn.attention(q, k, v, return_lse=True, backend=backend)
    assert o.shape == q.shape and lse.shape == (B, 2, Sq)
    if o.numel():  # no key: the attention over an empty key set (what merge_attention_states ignores)
        assert bool((o == 0).all()) and bool((lse == float("-inf")).all())


def _unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        attn.attention(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not attn.can_use_attention(*args, **kw)


def test_bad_inputs(device):
    q, k, v = (t.to(device) for t in qkv(2, 8, 8, 4, 2, 32, torch.bfloat16))
    i32 = torch.int32
    _unsupported("k/v have 3 heads, q has 4", q, k[:, :, :1].expand(2, 8, 3, 32), v[:, :, :1].expand(2, 8, 3, 32))
    _unsupported("must share the head dim", q, k[..., :16], v[..., :16])
    _unsupported("head dim (last) must be contiguous", q[..., ::2], k[..., ::2], v[..., ::2])
    _unsupported("k has dtype torch.float16, q has torch.bfloat16: q, k, v must share one dtype", q, k.half(), v.half())
    _unsupported("expected bfloat16, float16 or float32", q.long(), k.long(), v.long())
    _unsupported("must have k's shape", q, k, v[:, :5])
    _unsupported("k has batch 1, q has 2", q, k[:1], v[:1])
    _unsupported("must be 4-D", q[0], k[0], v[0])
    _unsupported("layout must be", q, k, v, layout="sbhd")
    _unsupported("kv_lens values must lie in [1, Sk=8]", q, k, v, kv_lens=torch.tensor([0, 3], dtype=i32))
    _unsupported("kv_lens values must lie in [1, Sk=8]", q, k, v, kv_lens=torch.tensor([3, 9], dtype=i32))
    _unsupported("kv_lens has dtype torch.float32", q, k, v, kv_lens=torch.ones(2))
    _unsupported("kv_lens must be a contiguous 1-D tensor of 2 values", q, k, v, kv_lens=torch.ones(3, dtype=i32))
    _unsupported("out must be a torch.bfloat16 tensor of shape", q, k, v, out=torch.empty(2, 8, 4, 16))
    _unsupported("scale must be a finite number", q, k, v, scale=float("nan"))
    _unsupported("head_dim=48", *(t[..., :48] for t in qkv(1, 4, 4, 2, 2, 64, torch.bfloat16)), backend="triton")
    _unsupported("unknown backend", q, k, v, backend="nope")
    _unsupported("must be a torch.Tensor", q, k, 1.0)


def test_bad_varlen(device):
    q, k, v, cq, ck = _packed([3, 4], [3, 4], 2, 2, 32, torch.bfloat16, device)
    kw = {"layout": "thd", "cu_seqlens_q": cq, "cu_seqlens_k": ck}
    _unsupported("pass layout='thd'", q, k, v, **{**kw, "layout": "bshd"})
    _unsupported("needs cu_seqlens_q and cu_seqlens_k", q, k, v, layout="thd")
    _unsupported("come together", q, k, v, layout="thd", cu_seqlens_q=cq)
    _unsupported("kv_lens and cu_seqlens are exclusive", q, k, v, **kw, kv_lens=torch.ones(2, dtype=torch.int32))
    _unsupported("cu_seqlens_k must be non-decreasing from 0 to the packed length 7", q, k, v,
                 **{**kw, "cu_seqlens_k": torch.tensor([0, 5, 4], dtype=torch.int32)})
    _unsupported("cu_seqlens_q has dtype torch.int64", q, k, v, **{**kw, "cu_seqlens_q": cq.long()})
    _unsupported("max_seqlen_q is for varlen calls", *qkv(1, 4, 4, 2, 2, 32, torch.bfloat16), max_seqlen_q=4)
    _unsupported("max_seqlen_q=3 is below the longest query segment (4)", q, k, v, **kw, max_seqlen_q=3)


def test_out_overlapping_inputs(device):
    q, k, v = (t.to(device) for t in qkv(2, 8, 8, 2, 2, 32, torch.bfloat16))
    _unsupported("out overlaps q", q, k, v, out=q)
    both = torch.randn(2, 8, 2, 2, 32).to(torch.bfloat16).to(device)
    _unsupported("out overlaps v", q, k, both[:, :, 0], out=both[:, :, 1])


def test_explain_names_each_backend(device):
    q, k, v = (t.to(device) for t in qkv(1, 8, 8, 2, 2, 32, torch.float32))
    e = explain(attn.attention, q, k, v, kv_lens=torch.tensor([4], dtype=torch.int32, device=device))
    reasons = {vd.backend: " ".join(vd.reasons) for vd in e.verdicts}
    assert set(reasons) == {"sdpa_cudnn", "sdpa_flash", "flash_attn", "sdpa_efficient", "triton", "sdpa_valid_keys",
                            "torch"}
    for name in ("sdpa_cudnn", "sdpa_flash", "flash_attn", "sdpa_efficient"):
        assert "kv_lens (padded keys)" in reasons[name] and "dtype float32" in reasons[name]
    assert "dtype float32 is not supported" in reasons["triton"]
    assert e.chosen == "torch" and reasons["torch"] == ""
    lse = explain(attn.attention, *qkv(1, 8, 8, 4, 2, 32, torch.bfloat16), return_lse=True)
    for name in ("sdpa_cudnn", "sdpa_flash"):  # the lse is served (the kernels' ATen ops), GQA is not
        text = " ".join(next(vd for vd in lse.verdicts if vd.backend == name).reasons)
        assert "'return_lse' is not supported" not in text and "GQA" in text


@pytest.mark.parametrize("return_lse", [False, True])
def test_compile_fullgraph(backend, device, return_lse):
    import torch._dynamo

    def block(q, k, v, kv_lens):
        res = attn.attention(q, k, v, kv_lens=kv_lens, return_lse=return_lse, backend=backend)
        o = res[0] if return_lse else res
        return o * 2

    torch._dynamo.reset()
    q, k, v = (t.to(device) for t in qkv(2, 12, 12, 2, 2, 32, torch.bfloat16))
    kv_lens = torch.tensor([5, 12], dtype=torch.int32, device=device)
    assert torch._dynamo.explain(block)(q, k, v, kv_lens).graph_break_count == 0
    testing.assert_exact(torch.compile(block, fullgraph=True, backend="aot_eager")(q, k, v, kv_lens),
                         block(q, k, v, kv_lens))


def test_compile_out_and_varlen(device):
    import torch._dynamo

    q, k, v, cq, ck = _packed([3, 5], [4, 2], 2, 2, 32, torch.bfloat16, device)

    def fn(q, k, v, cq, ck, out):
        return attn.attention(q, k, v, layout="thd", cu_seqlens_q=cq, cu_seqlens_k=ck, out=out, return_lse=True)

    torch._dynamo.reset()
    out = torch.empty_like(q)
    got, lse = torch.compile(fn, fullgraph=True, backend="aot_eager")(q, k, v, cq, ck, out)
    ref, ref_lse = fn(q, k, v, cq, ck, torch.empty_like(q))
    testing.assert_exact(out, ref)
    testing.assert_exact(lse, ref_lse)


def test_opcheck(device):
    q, k, v = (t.to(device) for t in qkv(2, 6, 5, 2, 1, 32, torch.bfloat16))
    kv = torch.tensor([2, 5], dtype=torch.int32, device=device)
    torch.library.opcheck(torch.ops.sgl_diffusion.attention.default, (q, k, v, kv, None, None, "bshd", None, None,
                                                                     None, "torch"))
    torch.library.opcheck(torch.ops.sgl_diffusion.attention_lse.default, (q, k, v, None, None, None, "bshd", None,
                                                                         None, 0.5, "torch"))


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("return_lse", [False, True])
@pytest.mark.parametrize("which", ["sdpa_cudnn", "sdpa_flash", "sdpa_efficient"])
def test_sdpa_runners_pass_the_kernels_their_arguments(monkeypatch, which, return_lse, layout):
    """The SDPA backends call their kernel's ATen op (CUDA only): here each op is stood in for by an fp64
    evaluation that checks the arguments an inference call passes (no mask, no dropout, not causal, the
    lse asked for only with return_lse) and returns the op's own output shapes (cuDNN's lse with a trailing
    dim, the memory-efficient kernel's padded to a multiple of 32), so the runner's transposes, lse rows and
    ``out`` handling are checked on the CPU."""
    sdpa = testing.backend_module(OP, which)
    seen = []

    def fake(pad, trailing):
        def op(q, k, v, *args, scale=None):
            o, lse = oracle(q, k, v, layout="bhsd", scale=scale)
            seen.append(args)
            if pad:
                lse = torch.nn.functional.pad(lse, (0, -lse.shape[-1] % 32), value=123.0)
            return o.to(q.dtype), (lse[..., None] if trailing else lse).float()

        return op

    monkeypatch.setattr(sdpa, "_CUDNN", fake(False, True))
    monkeypatch.setattr(sdpa, "_FLASH", fake(False, False))
    monkeypatch.setattr(sdpa, "_EFFICIENT", fake(True, False))
    q, k, v = qkv(2, 20, 20, 2, 2, 32, torch.bfloat16, layout=layout)
    geom = testing.geometry(OP, q, k, v, layout=layout, return_lse=return_lse)
    runner = getattr(sdpa, "prepare_" + which.removeprefix("sdpa_"))(geom, q, k, v)
    res = runner(q, k, v, None, None, None, None)
    o, lse = res if return_lse else (res, None)
    ref, ref_lse = oracle(q, k, v, layout=layout)
    close(o, ref, torch.bfloat16)
    assert o.shape == q.shape and o.is_contiguous()
    if return_lse:
        assert lse.shape == (2, 2, 20)
        close_lse(lse, ref_lse)
    want = {"sdpa_cudnn": (None, return_lse, 0.0, False, False), "sdpa_flash": (0.0, False, False),
            "sdpa_efficient": (None, return_lse, 0.0, False)}[which]
    assert seen == [want]
    out = torch.empty_like(q)
    res = runner(q, k, v, None, None, None, out)
    assert (res[0] if return_lse else res) is out
    close(out, ref, torch.bfloat16)
