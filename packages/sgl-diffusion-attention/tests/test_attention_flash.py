"""The ``flash_attn`` backend (FlashAttention-2) on the CPU, with a stand-in module whose functions compute attention
with the fp64 oracle of ``test_attention``: what the runner passes (layouts, scale, varlen offsets and bounds, the
lse request), what it returns (also from a FlashAttention-3 style function), and that a missing module makes the
backend ineligible with that reason."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest
import torch
from test_attention import _packed, close, oracle, qkv

import sgl_diffusion_attention as attn
from sgl_diffusion_core import UnsupportedInputError, explain, module_available, testing

FLASH = testing.backend_module(attn.attention, "flash_attn")
CALLS: list[dict] = []


def _dense(q, k, v, softmax_scale=None, causal=False, return_attn_probs=False, lse_shape=None):
    """FlashAttention-2's dense signature; bshd in and out, lse [B, H, S]."""
    CALLS.append({"shape": tuple(q.shape), "scale": softmax_scale, "causal": causal, "lse": return_attn_probs})
    o, lse = oracle(q, k, v, scale=softmax_scale)
    o = o.to(q.dtype)
    return (o, lse.float() if lse_shape is None else lse.float().reshape(lse_shape), None) if return_attn_probs else o


def _varlen(q, k, v, cu_q, cu_k, max_q, max_k, softmax_scale=None, causal=False, return_attn_probs=False):
    CALLS.append({"cu": (cu_q.dtype, cu_q.tolist(), cu_k.tolist()), "max": (max_q, max_k), "lse": return_attn_probs})
    o = torch.empty_like(q)
    lse = torch.empty(q.shape[1], q.shape[0])
    for a, e, ka, ke in zip(cu_q.tolist(), cu_q.tolist()[1:], cu_k.tolist(), cu_k.tolist()[1:]):
        ob, lb = oracle(q[None, a:e], k[None, ka:ke], v[None, ka:ke], scale=softmax_scale)
        o[a:e], lse[:, a:e] = ob[0].to(q.dtype), lb[0].float()
    return (o, lse, None) if return_attn_probs else o


def _fa3_dense(q, k, v, softmax_scale=None, causal=False):
    """An FA3 build whose function always returns ``(out, lse)`` and has no ``return_attn_probs``."""
    CALLS.append({"fa3": True})
    o, lse = oracle(q, k, v, scale=softmax_scale)
    return o.to(q.dtype), lse.float()


def _module(name: str, dense, varlen) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
    mod.flash_attn_func, mod.flash_attn_varlen_func = dense, varlen
    return mod


@pytest.fixture(autouse=True)
def stand_ins(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(sys.modules, "flash_attn", _module("flash_attn", _dense, _varlen))
    module_available.cache_clear()  # the answers are cached per process: fresh with the stand-ins, and after them
    yield
    module_available.cache_clear()


def _run(q, k, v, *, layout="bshd", cu=(None, None), out=None, **kw):
    geom = testing.geometry(attn.attention, q, k, v, None, *cu, out, layout=layout, **kw)
    return FLASH.prepare_flash_attn(geom, q, k, v, None, *cu, out)(q, k, v, None, *cu, out)


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("lse", [False, True])
def test_dense_layouts_gqa_and_lse(layout, lse):
    q, k, v = qkv(2, 20, 28, 4, 2, 32, torch.bfloat16, layout)
    got = _run(q, k, v, layout=layout, return_lse=lse, scale=0.3)
    o, ref_lse = oracle(q, k, v, layout=layout, scale=0.3)
    out = got[0] if lse else got
    assert out.shape == q.shape and out.is_contiguous()
    close(out, o, torch.bfloat16)
    if lse:
        testing.assert_close(got[1], ref_lse.float(), atol=1e-5, rtol=0.0)
    assert CALLS == [{"shape": (2, 20, 4, 32), "scale": 0.3, "causal": False, "lse": lse}]  # always bshd


def test_out_is_written():
    q, k, v = qkv(1, 9, 9, 2, 2, 32, torch.float16)
    out = torch.full_like(q, 7.0)
    assert _run(q, k, v, out=out) is out
    close(out, oracle(q, k, v)[0], torch.float16)


def test_varlen_offsets_bounds_and_lse():
    q, k, v, cq, ck = _packed([5, 12, 3], [6, 10, 3], 2, 2, 32, torch.bfloat16, "cpu")
    o, lse = _run(q, k, v, layout="thd", cu=(cq, ck), return_lse=True, max_seqlen_q=12)
    assert CALLS == [{"cu": (torch.int32, cq.tolist(), ck.tolist()), "max": (12, 19), "lse": True}]
    for a, e, ka, ke in zip(cq.tolist(), cq.tolist()[1:], ck.tolist(), ck.tolist()[1:]):
        ref, ref_lse = oracle(q[None, a:e], k[None, ka:ke], v[None, ka:ke])
        close(o[a:e], ref[0], torch.bfloat16)
        testing.assert_close(lse[:, a:e], ref_lse[0].float(), atol=1e-5, rtol=0.0)
    _run(q, k, v, layout="thd", cu=(cq, ck))
    assert CALLS[-1]["max"] == (20, 19)  # no max_seqlen_q: the packed lengths bound the segments


def test_a_result_pair_without_return_attn_probs(monkeypatch):
    """A function that returns ``(out, lse)`` and has no ``return_attn_probs`` parameter (FlashAttention-3's
    form): the parameter is not passed, the pair is read."""
    monkeypatch.setattr(sys.modules["flash_attn"], "flash_attn_func", _fa3_dense)
    q, k, v = qkv(1, 16, 16, 2, 2, 64, torch.bfloat16)
    close(_run(q, k, v), oracle(q, k, v)[0], torch.bfloat16)
    o, lse = _run(q, k, v, return_lse=True)
    testing.assert_close(lse, oracle(q, k, v)[1].float(), atol=1e-5, rtol=0.0)
    assert CALLS == [{"fa3": True}, {"fa3": True}]


def test_an_lse_of_another_shape_raises(monkeypatch):
    """An lse of another layout than [B, H, S] raises naming it; so does a function that returns none."""
    q, k, v = qkv(1, 8, 8, 2, 2, 32, torch.bfloat16)

    def padded(q, k, v, softmax_scale=None, causal=False, return_attn_probs=False):
        return _dense(q, k, v, softmax_scale, causal, return_attn_probs, lse_shape=(1, 2, 8, 1))

    monkeypatch.setattr(sys.modules["flash_attn"], "flash_attn_func", padded)
    with pytest.raises(UnsupportedInputError, match=r"flash_attn\.padded returned a log-sum-exp of shape \[1, 2, 8, 1"):
        _run(q, k, v, return_lse=True)
    monkeypatch.setattr(sys.modules["flash_attn"], "flash_attn_func", lambda q, k, v, **kw: q)
    with pytest.raises(UnsupportedInputError, match=r"returned a log-sum-exp of none; expected \[1, 2, 8\]"):
        _run(q, k, v, return_lse=True)


def test_eligible_only_where_the_module_is_installed(monkeypatch):
    q, k, v = qkv(1, 8, 8, 2, 2, 32, torch.bfloat16)

    def reasons(backend):
        return list(next(vd for vd in explain(attn.attention, q, k, v).verdicts if vd.backend == backend).reasons)

    assert reasons("flash_attn") == ["tensors on cpu; this backend runs on cuda"]
    monkeypatch.setitem(sys.modules, "flash_attn", None)  # not importable
    module_available.cache_clear()
    assert "needs the Python module 'flash_attn', which is not installed" in " ".join(reasons("flash_attn"))
    kv_lens = torch.tensor([5], dtype=torch.int32)
    e = explain(attn.attention, q, k, v, kv_lens=kv_lens)
    assert any("kv_lens" in r for vd in e.verdicts if vd.backend == "flash_attn" for r in vd.reasons)
