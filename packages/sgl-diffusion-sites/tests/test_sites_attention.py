"""CPU lane of the attention sites: in close mode the mounted attention processors run
``sgl_diffusion_attention.attention`` (bshd, ``kv_lens`` for a key-padding prefix mask); exact mode and
``attention=False`` keep the model's own attention. On the CPU the attention op's ``torch`` backend
serves (the tiny models' head dim 16 is below what its Triton kernel takes)."""

from __future__ import annotations

import pytest
import tiny_models
import torch
from test_sites import _out, _recording_backend, psnr

import sgl_diffusion_attention
import sgl_diffusion_sites as sites
from sgl_diffusion_sites import kernels as kernels_module
from sgl_diffusion_sites.kernels import Kernels

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")

OP = "attention.attention"
# model -> (attention module paths mounted in close mode, the kv_lens each call gets: None or a list)
ATTENTION_SITES = {
    "FluxTransformer2DModel": (["transformer_blocks.0.attn", "single_transformer_blocks.0.attn"], None),
    "WanTransformer3DModel": (["blocks.0.attn1"], None),  # attn2 (cross-attention): its processor has no site
    # joint [image (32), text (8)] with 3 padded text tokens: kv_lens 32 + 5
    "HunyuanVideoTransformer3DModel": (["transformer_blocks.0.attn", "single_transformer_blocks.0.attn"], [37]),
    # image keys first under the attention op: [image (16), text (8)] with 2 padded text tokens: 16 + 6
    "QwenImageTransformer2DModel": (["transformer_blocks.0.attn"], [22]),
    "SD3Transformer2DModel": (["transformer_blocks.0.attn", "transformer_blocks.0.attn2",
                               "transformer_blocks.1.attn"], None),
}


def _padded(name):
    """The tiny model and inputs, the text padded where the model takes a text mask."""
    model, kw, _ = tiny_models.BUILDERS[name]()
    if name == "HunyuanVideoTransformer3DModel":
        kw["encoder_attention_mask"] = torch.tensor([[1] * 5 + [0] * 3])
    if name == "QwenImageTransformer2DModel":
        kw["encoder_hidden_states_mask"] = torch.tensor([[1] * 6 + [0] * 2])
    return model, kw


@pytest.fixture
def kv_lens_seen(monkeypatch):
    """The kv_lens of every call of the public ``sgl_diffusion_attention.attention`` (None: dense)."""
    seen = []
    real = sgl_diffusion_attention.attention

    def spy(q, k, v, **kw):
        lens = kw.get("kv_lens")
        seen.append(None if lens is None else lens.tolist())
        assert q.shape[1] == k.shape[1] and q.shape[2:] == (2, 16)  # bshd straight from the projections
        return real(q, k, v, **kw)

    monkeypatch.setattr(sgl_diffusion_attention, "attention", spy)
    return seen


@pytest.mark.parametrize("name", list(ATTENTION_SITES))
def test_close_attention_psnr_and_unmount(name, kernel_backend, kv_lens_seen):
    """Close mode with the attention op: every attention site mounted, every call through the op (kv_lens
    where the text is padded), >= 40 dB from the unmounted model; unmount restores eager's bits."""
    model, kw = _padded(name)
    ref = _out(model, kw)
    originals = {n: m.processor for n, m in model.named_modules() if hasattr(m, "processor")}
    report = sites.optimize(model, quality="close", backend=kernel_backend)
    paths, lens = ATTENTION_SITES[name]
    got = [s for s in report.sites if s.kind == "attention"]
    assert [s.path for s in got if s.mounted] == paths, str(report)
    for s in got:
        if s.mounted:
            assert s.ops == (OP,) and s.contract == "close" and s.backend in ("auto", kernel_backend)
            assert s.compile_ops == (OP,) and s.to_dict()["kind"] == "attention"
        else:
            assert s.reason.startswith("its processor is not mounted: cross-attention"), s.reason
    out = _out(model, kw)
    assert report.op_calls[OP] == [len(paths), 0], report.op_calls
    assert kv_lens_seen == [lens] * len(paths)
    db = psnr(out, ref)
    print(f"{name}: PSNR {db:.1f} dB, one forward (close sites + attention vs eager)")
    assert db >= 40.0, f"{name}: PSNR {db:.1f} dB"
    assert sites.unmount(model)
    assert all(model.get_submodule(n).processor is p for n, p in originals.items())
    assert torch.equal(_out(model, kw), ref)


# The tests below are about where attention is routed: the other ops run their eager chains (backend None:
# the interpreter's time is per launch); the tests above run every op on its kernel
def test_exact_and_attention_false_keep_the_models_attention(kv_lens_seen):
    """Exact mode never mounts attention (it stays torch.equal: test_sites.py's exact tests);
    attention=False keeps SDPA in close mode; both report each attention site as skipped with the reason."""
    model, kw = _padded("HunyuanVideoTransformer3DModel")
    ref = _out(model, kw)
    exact = sites.optimize(model)
    assert torch.equal(_out(model, kw), ref)
    skipped = [s for s in exact.sites if s.kind == "attention"]
    assert len(skipped) == 2 and all(not s.mounted and "quality='exact'" in s.reason for s in skipped)
    close = sites.optimize(model, quality="close", attention=False)
    out = _out(model, kw)
    assert OP not in close.op_calls and not kv_lens_seen
    assert all(not s.mounted and s.reason.startswith("attention=False") for s in close.sites if s.kind == "attention")
    assert psnr(out, ref) >= 40.0
    assert sites.mount_plan(model, quality="close", attention=False) is close
    sites.unmount(model)
    plan = sites.mount_plan(model, quality="close")
    assert [s.path for s in plan.mounted if s.kind == "attention"] == ATTENTION_SITES[type(model).__name__][0]


@pytest.mark.parametrize("mask, fused", [
    ([True] * 20 + [False] * 4, True),  # a key-padding prefix: kv_lens
    ([True] * 24, True),  # every key valid: dense
    ([True] * 10 + [False] + [True] * 13, False),  # a hole: not a prefix
    ([False] * 24, False),  # no valid key (kv_lens must be >= 1): SDPA's own answer
])
def test_mask_that_is_not_a_key_padding_prefix_falls_back(mask, fused, kv_lens_seen):
    """Flux given an attention mask (``joint_attention_kwargs``): a prefix becomes kv_lens (or dense), any
    other mask runs the model's own masked attention for that call, counted as eager in ``op_calls``."""
    model, kw, _ = tiny_models.flux()
    kw = dict(kw, joint_attention_kwargs={"attention_mask": torch.tensor(mask)[None, None, None, :]})
    ref = _out(model, kw)
    report = sites.optimize(model, quality="close")
    out = _out(model, kw)
    assert report.op_calls[OP] == ([2, 0] if fused else [0, 2]), report.op_calls
    assert kv_lens_seen == ([([20] if not all(mask) else None)] * 2 if fused else [])
    if any(mask):
        assert psnr(out, ref) >= 40.0
    else:  # whatever the model's own attention gives with no valid key, the mount gives it too
        assert bool(torch.isnan(out).any()) == bool(torch.isnan(ref).any())
    sites.unmount(model)


def test_key_padding_lens_checks_and_caches_per_mask_object():
    k = Kernels("close", None)
    m = torch.tensor([[True, True, False], [True, False, False]])
    assert k.key_padding_lens(m, 2).tolist() == [2, 1]
    assert k.key_padding_lens(m[:, None, None, :], 2, offset=4).tolist() == [6, 5]  # [B, 1, 1, S]
    assert k.key_padding_lens(m[:1], 3).tolist() == [2, 2, 2]  # one row broadcast over the batch
    assert k.key_padding_lens(torch.ones(2, 3, dtype=torch.bool), 2) is None  # dense
    for bad in (torch.tensor([[False, True, True]]), m.float(), m[:, None, :], torch.ones(2, 2, 3, dtype=torch.bool)):
        assert k.key_padding_lens(bad, 2) is False
    assert k.key_padding_lens(m, 5) is False  # batch mismatch
    cached = torch.tensor([[True, True, False]])
    assert k.key_padding_lens(cached, 1).tolist() == [2]
    cached[0, 2] = True  # in place: the version counter moves, the cache is not used
    assert k.key_padding_lens(cached, 1) is None
    cached[0, 0] = False
    assert k.key_padding_lens(cached, 1) is False
    with torch.inference_mode():  # no version counter: checked at every call
        inf = torch.tensor([[True, False]])
        assert k.key_padding_lens(inf, 1).tolist() == [1]
        inf[0, 0] = False
        assert k.key_padding_lens(inf, 1) is False


def test_key_padding_lens_on_the_host_comes_from_the_same_read(monkeypatch):
    """``host=True``: the same lengths on the CPU, from the one cached read of the mask."""
    k = Kernels("close", None)
    reads = []
    real = kernels_module._prefix_lens
    monkeypatch.setattr(kernels_module, "_prefix_lens", lambda m: reads.append(m) or real(m))
    m = torch.tensor([[True, True, False], [True, False, False]])
    dev, host = k.key_padding_lens(m, 2, offset=3), k.key_padding_lens(m, 2, offset=3, host=True)
    assert host.device.type == "cpu" and host.dtype == dev.dtype == torch.int32 and host.tolist() == [5, 4]
    assert torch.equal(host, dev.cpu()) and len(reads) == 1
    assert k.key_padding_lens(m[:1], 3, host=True).tolist() == [2, 2, 2] and len(reads) == 2


def test_diffusers_attention_backend_set_after_the_mount_is_respected():
    """A diffusers attention backend (or parallel config) set on a mounted processor: its dispatch runs."""
    model, kw, _ = tiny_models.wan()
    report = sites.optimize(model, quality="close")
    model.get_submodule("blocks.0.attn1").processor._attention_backend = "native"
    _out(model, kw)
    assert report.op_calls[OP] == [0, 1]
    sites.unmount(model)


@pytest.mark.parametrize("name, in_graph", [("FluxTransformer2DModel", 2), ("HunyuanVideoTransformer3DModel", 0)])
def test_compile_close_attention_has_no_graph_break(name, in_graph, kernel_backend):
    """``torch.compile(fullgraph=True)`` of a mounted model in close mode: the attention op is a custom op in
    the graph (Flux); HunyuanVideo's joint mask cannot be read while tracing, so its masked calls trace the
    model's own attention (no graph break either way); the result stays within PSNR 40 dB of the mounted
    eager one (equal where the same ops ran)."""
    model, kw, _ = tiny_models.BUILDERS[name]()
    sites.optimize(model, quality="close", backend=kernel_backend if in_graph else None)
    eager = _out(model, kw)
    graphs = []
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend=_recording_backend(graphs), fullgraph=True)(**kw)[0]
    assert len(graphs) == 1 and graphs[0].count("sgl_diffusion.attention") == in_graph
    assert torch.equal(out, eager) if in_graph else psnr(out, eager) >= 40.0
    sites.unmount(model)
    torch._dynamo.reset()
