"""attention="int8" / "fp8" on tiny models: the first dense_steps steps dense, then quantized_attention on
every mounted attention (joint text and its padding included), close to dense attention; dense_layers keep
dense attention; refusals; unmount removes the step hook."""

from __future__ import annotations

import pytest
import tiny_models
import torch
from test_sites import psnr
from test_sites_sliding_tile import policy_of, run_at

import sgl_diffusion_sites as sites
from sgl_diffusion_core import testing

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")


def _policy(model):
    return policy_of(model, "_sgl_q8")


@pytest.mark.parametrize("attention", ["int8", "fp8"])
@pytest.mark.parametrize("name", ["FluxTransformer2DModel", "WanTransformer3DModel"])
def test_dense_steps_then_quantized(name, attention):
    model, kw, _ = tiny_models.BUILDERS[name]()
    sites.optimize(model, quality="close")
    dense = [run_at(model, kw, t) for t in (900, 600)]
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention=attention, dense_steps=1)
    mounted = [s for s in report.sites if s.kind == "attention" and s.mounted]
    assert mounted and all(s.ops == ("attention.quantized_attention", "attention.attention") for s in mounted)
    assert any(f"attention={attention!r}: quantized_attention" in n for n in report.notes)
    assert torch.equal(run_at(model, kw, 900), dense[0])  # step 0: dense
    policy = _policy(model)
    assert policy.step == 0 and policy.quantized_calls == 0 and policy.dense_calls == len(mounted)
    op = testing.op_definition("attention.quantized_attention")
    op.clear()
    out = run_at(model, kw, 600)
    assert policy.step == 1 and policy.quantized_calls == len(mounted)
    assert not torch.equal(out, dense[1]) and psnr(out, dense[1]) > 25
    asked = op.verdicts_cached()
    assert 1 <= asked <= 2  # the op's verdict once per call signature (FLUX: joint and single blocks)
    run_at(model, kw, 300)
    assert op.verdicts_cached() == asked
    assert sites.unmount(model)
    assert not model._forward_pre_hooks


def test_padded_text_and_dense_layers():
    model, kw, _ = tiny_models.BUILDERS["HunyuanVideoTransformer3DModel"]()
    kw["encoder_attention_mask"] = torch.tensor([[1] * 5 + [0] * 3])
    sites.optimize(model, quality="close")
    dense = run_at(model, kw, 600)
    sites.unmount(model)
    sites.optimize(model, quality="close", attention="int8")
    out = run_at(model, kw, 600)
    assert _policy(model).quantized_calls > 0 and psnr(out, dense) > 25
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention="int8", dense_layers=(0,))
    assert any("blocks [0] keep dense attention" in n for n in report.notes)
    sites.unmount(model)


def test_refusals():
    model, kw, _ = tiny_models.BUILDERS["FluxTransformer2DModel"]()
    report = sites.optimize(model, quality="close", attention="int4")
    assert not report.mounted and "'int8' or 'fp8'" in report.notes[0]
    report = sites.optimize(model, quality="close", attention="int8", dense_steps=-1)
    assert not report.mounted and "dense_steps" in report.notes[0]
    report = sites.optimize(model, attention="int8")  # exact: the model's attention
    assert report.mounted and any("needs quality='close'" in n for n in report.notes)
    assert all(getattr(m.processor, "_sgl_q8", None) is None for m in model.modules() if hasattr(m, "processor"))
    sites.unmount(model)
