"""merge_attention_states: the fp64 formula, and two halves merged == one attention over the whole."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing

OP = "attention.merge_attention_states"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")
ATTN_CLOSE = next(s.contract for s in REGISTRY.specs("attention.attention") if s.backend == "triton")
NEG_INF = float("-inf")


def oracle(o1, lse1, o2, lse2, layout):
    """The formula in fp64; a part of lse -inf contributes nothing."""
    l1, l2 = lse1.double(), lse2.double()
    lse = torch.logaddexp(l1, l2)

    def per_token(w):
        if layout == "bhsd":
            return w[..., None]
        return (w.transpose(0, 1) if layout == "thd" else w.transpose(1, 2))[..., None]

    o = 0
    for x, part in ((o1, l1), (o2, l2)):
        w = per_token(torch.where(part == NEG_INF, 0.0, torch.exp(part - lse)))
        o = o + torch.where(w == 0, 0.0, w * x.double())
    return o, lse


def parts(layout, dtype, device, B=2, S=37, H=3, D=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = {"bshd": (B, S, H, D), "bhsd": (B, H, S, D), "thd": (S, H, D)}[layout]
    lse_shape = (H, S) if layout == "thd" else (B, H, S)
    o1, o2 = (torch.randn(shape, generator=g).to(dtype).to(device) for _ in range(2))
    lse1, lse2 = ((torch.randn(lse_shape, generator=g) * 4).to(device) for _ in range(2))
    return o1, lse1, o2, lse2


def check(backend, o1, lse1, o2, lse2, layout):
    o, lse = attn.merge_attention_states(o1, lse1, o2, lse2, layout=layout, backend=backend)
    ref_o, ref_lse = oracle(o1, lse1, o2, lse2, layout)
    assert o.shape == o1.shape and o.dtype == o1.dtype and o.is_contiguous() and lse.dtype == torch.float32
    atol, rtol = CLOSE.tolerance(o1.dtype)
    testing.assert_close(o, ref_o.to(o1.dtype), atol=atol, rtol=rtol)
    atol, rtol = CLOSE.tolerance(torch.float32)
    testing.assert_close(lse, ref_lse.float(), atol=atol, rtol=rtol)
    return o, lse


@pytest.mark.parametrize("layout", ["bshd", "bhsd", "thd"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_formula(backend, device, layout, dtype):
    check(backend, *parts(layout, dtype, device), layout)


def test_strided_inputs_and_wide_head_dim(backend, device):
    g = torch.Generator().manual_seed(1)
    big = torch.randn(2, 9, 2, 3, 200, generator=g).to(torch.bfloat16).to(device)  # o1, o2 views; D=200 > one tile
    lse = (torch.randn(2, 3, 2, 9, generator=g) * 3).to(device)
    check(backend, big[:, :, 0], lse[:, :, 0], big[:, :, 1], lse[:, :, 1], "bshd")


@pytest.mark.parametrize("layout", ["bshd", "thd"])
def test_two_halves_equal_the_whole(backend, device, layout):
    """Attention over keys [0, 30) and [30, 70) merged == attention over all 70 keys."""
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, n, 2, 32, generator=g).to(torch.bfloat16).to(device) for n in (40, 70, 70))
    if layout == "thd":
        q, k, v = q[0], k[0], v[0]
        cq = torch.tensor([0, 40], dtype=torch.int32, device=device)

        def run(kk, vv):
            ck = torch.tensor([0, kk.shape[0]], dtype=torch.int32, device=device)
            return attn.attention(q, kk, vv, layout="thd", cu_seqlens_q=cq, cu_seqlens_k=ck, return_lse=True)
        halves = run(k[:30], v[:30]), run(k[30:], v[30:])
        whole = run(k, v)
    else:
        halves = (attn.attention(q, k[:, :30], v[:, :30], return_lse=True),
                  attn.attention(q, k[:, 30:], v[:, 30:], return_lse=True))
        whole = attn.attention(q, k, v, return_lse=True)
    o, lse = attn.merge_attention_states(*halves[0], *halves[1], layout=layout, backend=backend)
    atol, rtol = ATTN_CLOSE.tolerance(torch.bfloat16)
    testing.assert_close(o, whole[0], atol=2 * atol, rtol=2 * rtol)  # two roundings of each half, one of the whole
    testing.assert_close(lse, whole[1], atol=ATTN_CLOSE.tolerance(torch.float32)[0], rtol=0.0)


def test_empty_key_sets(backend, device):
    """lse -inf (no key) on one side: the other side exactly, even with NaN in the empty part's output;
    on both sides: output 0 and lse -inf. No NaN either way."""
    o1, lse1, o2, lse2 = parts("bshd", torch.bfloat16, device, B=1, S=5, H=2, D=32)
    lse1[:, :, :3] = NEG_INF
    o1[:, :3] = float("nan")
    lse2[:, :, 2:4] = NEG_INF
    o, lse = attn.merge_attention_states(o1, lse1, o2, lse2, backend=backend)
    assert not bool(o.isnan().any()) and not bool(lse.isnan().any())
    testing.assert_exact(o[:, :2], o2[:, :2])
    testing.assert_exact(lse[:, :, :2], lse2[:, :, :2])
    assert bool((o[:, 2] == 0).all()) and bool((lse[:, :, 2] == NEG_INF).all())
    testing.assert_exact(o[:, 3], o1[:, 3])


@pytest.mark.parametrize("shape", [(0, 4, 2, 32), (2, 0, 2, 32)])
def test_empty(backend, device, shape):
    o1 = torch.empty(shape, dtype=torch.bfloat16, device=device)
    lse1 = torch.empty(shape[0], shape[2], shape[1], device=device)
    o, lse = attn.merge_attention_states(o1, lse1, o1, lse1, backend=backend)
    assert o.shape == o1.shape and lse.shape == lse1.shape


def _unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        attn.merge_attention_states(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not attn.can_use_merge_attention_states(*args, **kw)


def test_bad_inputs(device):
    o1, lse1, o2, lse2 = parts("bshd", torch.bfloat16, device, B=1, S=4, H=2, D=32)
    _unsupported("must have o1's shape", o1, lse1, o2[:, :3], lse2)
    _unsupported("lse2 must be a float32 tensor of shape [1, 2, 4]", o1, lse1, o2, lse2.half())
    _unsupported("lse1 must be a float32 tensor of shape [1, 2, 4]", o1, lse1.transpose(1, 2), o2, lse2)
    _unsupported("o2 has dtype torch.float16, o1 has torch.bfloat16: o1, o2 must share", o1, lse1, o2.half(), lse2)
    _unsupported("head dim (last) must be contiguous", o1[..., ::2], lse1, o2[..., ::2], lse2)
    _unsupported("layout must be", o1, lse1, o2, lse2, layout="sbhd")
    _unsupported("unknown backend", o1, lse1, o2, lse2, backend="nope")


def test_compile_fullgraph(backend, device):
    import torch._dynamo

    def fn(o1, lse1, o2, lse2):
        o, lse = attn.merge_attention_states(o1, lse1, o2, lse2, backend=backend)
        return o * 2, lse

    torch._dynamo.reset()
    args = parts("bshd", torch.bfloat16, device, B=1, S=6, H=2, D=32)
    assert torch._dynamo.explain(fn)(*args).graph_break_count == 0
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    for a, b in zip(got, fn(*args)):
        testing.assert_exact(a, b)


def test_opcheck(device):
    args = parts("bhsd", torch.float16, device, B=1, S=5, H=2, D=32)
    torch.library.opcheck(torch.ops.sgl_diffusion.merge_attention_states.default, (*args, "bhsd", "torch"))
