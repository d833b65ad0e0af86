"""quality="fp8" on the tiny random configs of the supported transformers: which linears become FP8
linears (the policy), the output's distance to the unmounted model (measure_quality), reversal, and
the compile path. On the CPU lane the FP8 ops run their torch references (the quant package's tests
run their Triton kernels under the interpreter)."""

from __future__ import annotations

import pytest
import tiny_models
import torch

import sgl_diffusion_sites as sites
from sgl_diffusion_quant import FP8Linear
from sgl_diffusion_sites.fp8 import is_text_stream

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")

MODELS = list(tiny_models.BUILDERS)


def _out(model, kw):
    with torch.no_grad():
        return model(**kw)[0]


@pytest.mark.parametrize("name", MODELS)
def test_fp8_mount_policy_quality_and_unmount(name):
    model, kw, _ = tiny_models.BUILDERS[name]()
    ref = _out(model, kw)
    linears_before = {p: m for p, m in model.named_modules() if type(m) is torch.nn.Linear}
    report = sites.optimize(model, quality="fp8")
    fp8_sites = [s for s in report.sites if s.kind == "fp8_linear"]
    assert fp8_sites and all(s.mounted for s in fp8_sites), [s.reason for s in fp8_sites if not s.mounted]
    swapped = {s.path for s in fp8_sites}
    for path in swapped:
        assert isinstance(model.get_submodule(path), FP8Linear)
    # inside the blocks only, and never an adaLN (norm) projection: embeddings and the final projection stay
    assert all(".norm" not in p and not p.startswith(("proj_out", "norm_out")) for p in swapped)
    # what stays bf16 inside a block: the adaLN (norm) projections and the text stream's linears
    left = [p for p, m in model.named_modules() if type(m) is torch.nn.Linear]
    blocks = tuple(b.path + "." for b in report.sites if b.kind == "block_residuals")
    assert left and all(".norm" in p or is_text_stream(p.split(".", 2)[-1]) or not p.startswith(blocks)
                        for p in left), left
    assert not any(is_text_stream(p.split(".", 2)[-1]) for p in swapped)
    metrics = sites.measure_quality(model, **kw)
    assert metrics["cosine"] >= 0.99 and metrics["psnr_db"] >= 30.0, metrics
    assert report.quality_metrics == metrics and "quality_metrics" in report.to_dict()
    assert "PSNR" in str(report)
    # measure_quality mounts the model again afterwards
    assert all(isinstance(model.get_submodule(p), FP8Linear) for p in swapped)
    assert sites.unmount(model)
    assert {p: m for p, m in model.named_modules() if type(m) is torch.nn.Linear} == linears_before
    assert torch.equal(_out(model, kw), ref)


def test_fp8_gelu_projection_is_one_linear_with_the_gelu_fused():
    model, kw, _ = tiny_models.BUILDERS["FluxTransformer2DModel"]()
    report = sites.optimize(model, quality="fp8")
    ff = model.get_submodule("transformer_blocks.0.ff.net.0")
    assert isinstance(ff, FP8Linear) and ff.epilogue == "gelu_tanh"
    assert not any(s.kind == "ff_gelu_tanh" and s.path.startswith("transformer_blocks.0.ff.") for s in report.sites)
    sites.unmount(model)
    assert type(model.get_submodule("transformer_blocks.0.ff.net.0")).__name__ == "GELU"


def test_measure_quality_needs_a_mounted_model():
    model, kw, _ = tiny_models.BUILDERS["WanTransformer3DModel"]()
    with pytest.raises(ValueError, match="not mounted"):
        sites.measure_quality(model, **kw)
    report = sites.optimize(model, quality="close")
    assert sites.measure_quality(model, **kw)["psnr_db"] > 40
    assert report.quality_metrics
    sites.unmount(model)


def test_fp8_compile_fullgraph():
    model, kw, _ = tiny_models.BUILDERS["WanTransformer3DModel"]()
    sites.optimize(model, quality="fp8")
    eager = _out(model, kw)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    with torch.no_grad():
        got = compiled(**kw)[0]
    torch.testing.assert_close(got, eager, atol=0.0, rtol=0.0)
    sites.unmount(model)
