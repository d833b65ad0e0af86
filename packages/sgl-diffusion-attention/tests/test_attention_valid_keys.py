"""The ``sdpa_valid_keys`` backend's runner on the CPU (its platform is CUDA; the runner itself is plain PyTorch):
runs of samples with one kv length, out given or not, both layouts, lengths outside ``[1, Sk]``, varlen
segments (runs of equal lengths batched, empty segments, bad offsets), and the triton kernel during CUDA-graph
capture. Results against the fp64 oracle of ``test_attention``."""

from __future__ import annotations

import pytest
import torch
from test_attention import _packed, close, oracle, qkv

import sgl_diffusion_attention as attn
from sgl_diffusion_attention import _specs as S
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing

SDPA = testing.backend_module(attn.attention, "sdpa_valid_keys")


def _runner(q, k, v, kv_lens, layout, out=None):
    geom = testing.geometry(attn.attention, q, k, v, kv_lens, None, None, out, layout=layout)
    return SDPA.prepare_valid_keys(geom, q, k, v, kv_lens, None, None, out)


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("lens, given_out", [([30, 30, 45, 12], False), ([45, 45], False), ([7, 7, 7], True)])
def test_runs_of_lengths_match_the_oracle(layout, lens, given_out):
    q, k, v = qkv(len(lens), 33, 45, 2, 2, 32, torch.bfloat16, layout)
    kv_lens = torch.tensor(lens, dtype=torch.int32)
    out = torch.full_like(q, 7.0) if given_out else None
    o = _runner(q, k, v, kv_lens, layout, out)(q, k, v, kv_lens, None, None, out)
    assert o.shape == q.shape and o.dtype == q.dtype and o.is_contiguous()
    assert out is None or o is out
    close(o, oracle(q, k, v, layout=layout, kv_lens=kv_lens)[0], torch.bfloat16)


def _varlen_runner(q, k, v, cq, ck, out=None):
    geom = testing.geometry(attn.attention, q, k, v, None, cq, ck, out, layout="thd")
    return SDPA.prepare_valid_keys(geom, q, k, v, None, cq, ck, out)


@pytest.mark.parametrize("lens_q, lens_k", [([5, 70, 20], [7, 41, 1]), ([16, 16, 16, 9], [24, 24, 24, 3]),
                                            ([0, 9, 6, 6], [5, 0, 8, 8])])
@pytest.mark.parametrize("given_out", [False, True])
def test_varlen_segments_match_the_oracle(lens_q, lens_k, given_out, monkeypatch):
    """One SDPA call per run of segments with equal lengths; an empty key segment gives 0; out given or not."""
    q, k, v, cq, ck = _packed(lens_q, lens_k, 2, 2, 32, torch.bfloat16, "cpu")
    calls = []
    real = SDPA._valid_keys
    monkeypatch.setattr(SDPA, "_valid_keys", lambda *a: calls.append(a[0].shape[0]) or real(*a))
    out = torch.full_like(q, 7.0) if given_out else None
    o = _varlen_runner(q, k, v, cq, ck, out)(q, k, v, None, cq, ck, out)
    assert o.shape == q.shape and o.dtype == q.dtype and (out is None or o is out)
    runs = SDPA._segment_runs(cq.tolist(), ck.tolist())
    assert calls == [n for _, _, n, ql, kl in runs if ql and kl]
    if lens_q == [16, 16, 16, 9]:
        assert calls == [3, 1]  # the three equal segments in one call
    for b in range(len(lens_q)):
        qs, qe, ks, ke = cq[b].item(), cq[b + 1].item(), ck[b].item(), ck[b + 1].item()
        if qe == qs:
            continue
        if ke == ks:
            assert torch.equal(o[qs:qe], torch.zeros_like(o[qs:qe]))
            continue
        close(o[qs:qe], oracle(q[None, qs:qe], k[None, ks:ke], v[None, ks:ke])[0][0], torch.bfloat16)


def test_varlen_bad_offsets_raise_as_the_definition_does():
    q, k, v, cq, ck = _packed([4, 4], [4, 4], 2, 2, 32, torch.bfloat16, "cpu")
    run = _varlen_runner(q, k, v, cq, ck)
    bad = torch.tensor([0, 5, 4], dtype=torch.int32)
    with pytest.raises(UnsupportedInputError, match="cu_seqlens_q must be non-decreasing"):
        run(q, k, v, None, bad, ck, None)
    with pytest.raises(UnsupportedInputError, match="cu_seqlens_k must be non-decreasing"):
        run(q, k, v, None, cq, torch.tensor([0, 4, 9], dtype=torch.int64), None)
    with pytest.raises(UnsupportedInputError, match="cu_seqlens_q must be non-decreasing") as definition:
        attn.attention(q, k, v, layout="thd", cu_seqlens_q=bad, cu_seqlens_k=ck, backend="torch")
    assert "[0, 5, 4]" in str(definition.value)


def test_lengths_outside_the_keys_give_nan_rows():
    q, k, v = qkv(4, 16, 20, 2, 2, 32, torch.bfloat16)
    kv_lens = torch.tensor([20, 0, 21, 5], dtype=torch.int32)
    run = _runner(q, k, v, torch.tensor([20, 1, 20, 5], dtype=torch.int32), "bshd")  # valid when planned
    o = run(q, k, v, kv_lens, None, None, None)
    assert o[1].isnan().all() and o[2].isnan().all()
    ok = torch.tensor([0, 3])
    close(o[ok], oracle(q[ok], k[ok], v[ok], kv_lens=kv_lens[ok])[0], torch.bfloat16)


def test_capture_runs_the_registrys_next_choice(monkeypatch):
    """During CUDA-graph capture the host cannot read kv_lens: the runner built beside it is the first backend of
    the registry's static order that accepts the inputs, this one aside (the triton kernel on CUDA, which the GPU
    lane captures; on the CPU the torch definition, as triton runs here only when asked for)."""
    from sgl_diffusion_core import KernelSpec, describe, eligible

    q, k, v = qkv(2, 8, 8, 2, 2, 32, torch.bfloat16)
    kv_lens = torch.tensor([8, 4], dtype=torch.int32)
    desc = describe(attn.attention, q, k, v, kv_lens, None, None, None, layout="bshd")
    first = next(s for s in eligible("attention.attention", desc) if s.backend != "sdpa_valid_keys")
    assert first.backend == "torch"
    calls = []

    def fake_prepare(geom, *tensors):
        return lambda *args: calls.append(len(args)) or "captured"

    load = KernelSpec.load
    monkeypatch.setattr(KernelSpec, "load", lambda spec: fake_prepare if spec == first else load(spec))
    run = _runner(q, k, v, kv_lens, "bshd")
    monkeypatch.setattr(SDPA, "_capturing", lambda q: True)
    assert run(q, k, v, kv_lens, None, None, None, "bshd") == "captured" and calls == [8]
    monkeypatch.setattr(SDPA, "_capturing", lambda q: False)
    close(run(q, k, v, kv_lens, None, None, None), oracle(q, k, v, kv_lens=kv_lens)[0], torch.bfloat16)
    assert calls == [8]


def test_capture_without_triton_runs_the_definition(monkeypatch):
    """No Triton (or rows too long for its kernel): during capture the torch definition runs (no host read)."""
    import sys

    q, k, v = qkv(1, 8, 8, 2, 2, 32, torch.bfloat16)
    kv_lens = torch.tensor([5], dtype=torch.int32)
    monkeypatch.setitem(sys.modules, "sgl_diffusion_attention._attention_triton", None)  # import fails
    monkeypatch.delattr(attn, "_attention_triton", raising=False)
    run = _runner(q, k, v, kv_lens, "bshd")
    monkeypatch.setattr(SDPA, "_capturing", lambda q: True)
    definition = attn.attention(q, k, v, kv_lens=kv_lens, backend="torch")
    testing.assert_exact(run(q, k, v, kv_lens, None, None, None, "bshd", None, None, None), definition)


def test_static_priority_never_picks_it():
    """Below the definition: where the triton backend cannot serve a kv_lens call, the static choice is torch."""
    names = [s.backend for s in REGISTRY.specs("attention.attention")]
    assert names.index("sdpa_valid_keys") > names.index("torch")


def test_selection_sees_it_for_kv_lens_and_varlen_calls_only():
    q, k, v = qkv(1, 8, 8, 2, 2, 32, torch.bfloat16)
    kv_lens = torch.tensor([4], dtype=torch.int32)

    def reason(**kw):
        e = explain(attn.attention, q, k, v, **kw)
        return " ".join(next(vd for vd in e.verdicts if vd.backend == "sdpa_valid_keys").reasons)

    assert "every key valid (no kv_lens)" in reason()
    assert reason(kv_lens=kv_lens) == "tensors on cpu; this backend runs on cuda"
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    packed = (q[0], k[0], v[0])  # [8, H, Dh]: two segments
    e = explain(attn.attention, *packed, layout="thd", cu_seqlens_q=cu, cu_seqlens_k=cu)
    assert list(next(vd for vd in e.verdicts if vd.backend == "sdpa_valid_keys").reasons) == [
        "tensors on cpu; this backend runs on cuda"]  # varlen served (on CUDA)
    assert any(S.VARLEN in r for vd in e.verdicts if vd.backend == "sdpa_cudnn" for r in vd.reasons)
    assert "return_lse" in reason(kv_lens=kv_lens, return_lse=True)


def test_cu_seqlens_on_the_host_for_a_gpu_call_are_described():
    """Varlen offsets on the CPU with q elsewhere (meta stands in for a GPU here): accepted, their values
    checked on the host, tagged for selection; the triton and sdpa_valid_keys backends declare the tag,
    flash_attn (device offsets only) does not; offsets split across devices are refused by name."""
    from sgl_diffusion_core import describe

    q = torch.empty(96, 2, 32, dtype=torch.bfloat16, device="meta")
    cu = torch.tensor([0, 64, 96], dtype=torch.int32)
    desc = describe(attn.attention, q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, layout="thd")
    assert not desc.problems and S.CU_SEQLENS_HOST in desc.layouts and desc.info["geom"].cu_host
    bad = describe(attn.attention, q, q, q, cu_seqlens_q=cu, cu_seqlens_k=torch.tensor([0, 64, 97],
                   dtype=torch.int32), layout="thd")
    assert any("cu_seqlens_k" in p for p in bad.problems)
    on_q = describe(attn.attention, q, q, q, cu_seqlens_q=cu.to("meta"), cu_seqlens_k=cu.to("meta"), layout="thd")
    assert S.CU_SEQLENS_HOST not in on_q.layouts and not on_q.info["geom"].cu_host
    split = describe(attn.attention, q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu.to("meta"), layout="thd")
    assert any("cu_seqlens_q is on cpu" in p for p in split.problems)
    caps = {s.backend: s.capabilities.layouts for s in REGISTRY.specs("attention.attention")}
    assert S.CU_SEQLENS_HOST in caps["triton"] and S.CU_SEQLENS_HOST in caps["sdpa_valid_keys"]
    assert all(S.CU_SEQLENS_HOST not in caps[b] for b in ("flash_attn", "sdpa_cudnn", "sdpa_flash"))
    cpu_q = torch.zeros(96, 2, 32, dtype=torch.bfloat16)  # a CPU call: its offsets are not "host" offsets
    cpu = describe(attn.attention, cpu_q, cpu_q, cpu_q, cu_seqlens_q=cu, cu_seqlens_k=cu, layout="thd")
    assert not cpu.problems and S.CU_SEQLENS_HOST not in cpu.layouts


def test_kv_lens_on_the_host_for_a_gpu_call_is_described():
    """kv_lens on the CPU with q elsewhere (meta stands in for a GPU here): accepted, its values checked on the
    host, tagged for selection; the triton and sdpa_valid_keys backends declare the tag (the GPU lane runs them)."""
    from sgl_diffusion_core import describe

    q = torch.empty(2, 64, 2, 32, dtype=torch.bfloat16, device="meta")
    desc = describe(attn.attention, q, q, q, torch.tensor([64, 10], dtype=torch.int32))
    assert not desc.problems and S.KV_LENS_HOST in desc.layouts and desc.info["geom"].kv_lens_host
    bad = describe(attn.attention, q, q, q, torch.tensor([64, 65], dtype=torch.int32))
    assert any("kv_lens values must lie in [1, Sk=64]" in p for p in bad.problems)
    on_q = describe(attn.attention, q, q, q, torch.tensor([64, 10], dtype=torch.int32, device="meta"))
    assert S.KV_LENS_HOST not in on_q.layouts and not on_q.info["geom"].kv_lens_host
    caps = {s.backend: s.capabilities.layouts for s in REGISTRY.specs("attention.attention")}
    assert S.KV_LENS_HOST in caps["triton"] and S.KV_LENS_HOST in caps["sdpa_valid_keys"]
    assert all(S.KV_LENS_HOST not in caps[b] for b in ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient"))
