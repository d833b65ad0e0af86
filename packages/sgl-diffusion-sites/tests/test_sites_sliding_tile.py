"""attention="sliding_tile" on a tiny Wan: the first dense_steps steps dense, then block-sparse video
self-attention in tile order; a window over every tile gives dense attention back, a narrow one does
not; the report names the density; refusals; unmount removes the step hook."""

from __future__ import annotations

import pytest
import tiny_models
import torch
from test_sites import psnr

import sgl_diffusion_sites as sites
from sgl_diffusion_core import testing

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")


def _wan():
    """Tiny Wan with a (4, 8, 8) latent grid after its (1, 2, 2) patches: 256 video tokens, 4 tiles of 4^3."""
    model, kw, _ = tiny_models.BUILDERS["WanTransformer3DModel"]()
    kw["hidden_states"] = torch.randn(1, 4, 4, 16, 16, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    return model, kw


def run_at(model, kw, t):
    """One forward at timestep ``t`` (a new value is a new denoising step for the step-counting policies)."""
    with torch.no_grad():
        return model(**dict(kw, timestep=torch.tensor([t])))[0]


def policy_of(model, attr="_sgl_tile"):
    """The attention policy a mounted processor of ``model`` holds under ``attr``."""
    return next(getattr(m.processor, attr) for m in model.modules()
                if getattr(getattr(m, "processor", None), attr, None) is not None)



def test_dense_steps_then_sparse():
    model, kw = _wan()
    sites.optimize(model, quality="close")
    dense = [run_at(model, kw, t) for t in (900, 600)]
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention="sliding_tile",
                            window=(1, 1, 1), dense_steps=1)
    (site,) = [s for s in report.sites if s.kind == "attention" and s.mounted and s.path.endswith("attn1")]
    assert site.ops == ("attention.block_sparse_attention", "attention.attention")
    first = run_at(model, kw, 900)
    again = run_at(model, kw, 900)  # the same timestep (a guidance pair): still step 0, dense
    policy = policy_of(model)
    assert policy.grid == (4, 8, 8) and policy.step == 0 and policy.sparse_calls == 0
    assert torch.equal(first, dense[0]) and torch.equal(again, dense[0])
    op = testing.op_definition("attention.block_sparse_attention")
    op.clear()
    sparse = run_at(model, kw, 600)
    assert policy.step == 1 and policy.sparse_calls == 1
    assert op.verdicts_cached() == 1  # the kernel's verdict, once per call signature
    run_at(model, kw, 300)
    assert policy.sparse_calls == 2 and op.verdicts_cached() == 1
    assert not torch.equal(sparse, dense[1])  # each tile saw only itself
    assert any("25.0% of the key blocks" in n for n in report.notes)
    assert sites.unmount(model)
    assert not model._forward_pre_hooks


def test_window_over_every_tile_is_dense_attention():
    model, kw = _wan()
    sites.optimize(model, quality="close")
    dense = run_at(model, kw, 600)
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention="sliding_tile",
                            window=(1, 2, 2))
    out = run_at(model, kw, 600)
    assert policy_of(model).sparse_calls == 1 and any("100.0% of the key blocks" in n for n in report.notes)
    assert psnr(out, dense) > 40
    sites.unmount(model)


def test_dense_layers_keep_dense_attention():
    model, kw = _wan()
    sites.optimize(model, quality="close")
    dense = run_at(model, kw, 600)
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention="sliding_tile", window=(1, 1, 1), dense_layers=(0,))
    assert all(getattr(m.processor, "_sgl_tile", None) is None for m in model.modules() if hasattr(m, "processor"))
    assert torch.equal(run_at(model, kw, 600), dense)  # the tiny Wan's one block is dense
    assert any("blocks [0] keep dense attention" in n for n in report.notes)
    sites.unmount(model)
    report = sites.optimize(model, quality="close", attention="sliding_tile", window=(1, 1, 1), dense_layers=(-1,))
    assert not report.mounted and "dense_layers" in report.notes[0]


def test_refusals():
    model, kw = _wan()
    report = sites.optimize(model, quality="close", attention="sliding_tile")
    assert not report.mounted and "needs window" in report.notes[0]
    report = sites.optimize(model, quality="close", attention="sliding_tile", window=(1, 1, 1), dense_steps=-1)
    assert not report.mounted and "dense_steps" in report.notes[0]
    report = sites.optimize(model, quality="close", attention="sparse")
    assert not report.mounted and "'sliding_tile'" in report.notes[0]
    report = sites.optimize(model, attention="sliding_tile", window=(1, 1, 1))  # exact: the model's attention
    assert report.mounted and any("needs quality='close'" in n for n in report.notes)
    sites.unmount(model)
    flux, _, _ = tiny_models.BUILDERS["FluxTransformer2DModel"]()
    report = sites.optimize(flux, quality="close", attention="sliding_tile", window=(1, 1, 1))
    assert report.mounted and any("mounted dense" in n for n in report.notes)
    sites.unmount(flux)
