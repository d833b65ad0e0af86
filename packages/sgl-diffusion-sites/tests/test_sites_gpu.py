"""GPU lane of sgl-diffusion-sites: the five models at small random configs on CUDA, each op on its
default (Triton) backend. Never run yet (written without a GPU)."""

from __future__ import annotations

import pytest
import tiny_models
import torch

import sgl_diffusion_sites as sites

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]


def _to(model, kw, device="cuda"):
    kw = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    return model.to(device), kw


def _out(model, kw):
    with torch.no_grad():
        return model(**kw)[0]


@pytest.mark.parametrize("name", list(tiny_models.BUILDERS))
def test_exact_on_gpu(name):
    model, kw = _to(*tiny_models.BUILDERS[name]()[:2])
    ref = _out(model, kw)
    report = sites.optimize(model)
    assert torch.equal(_out(model, kw), ref) and torch.equal(_out(model, kw), ref)
    states = {s.path: s.gate_state() for s in report.mounted}
    # a fallback is allowed (the gate keeps eager's bits) but must be visible: print it
    print(report)
    assert set(states.values()) <= {"verified", "fallback"}
    assert report.op_calls and all(n[0] > 0 for n in report.op_calls.values()), report.op_calls
    sites.unmount(model)
    assert torch.equal(_out(model, kw), ref)


@pytest.mark.parametrize("name", list(tiny_models.BUILDERS))
def test_close_psnr_over_8_steps_on_gpu(name):
    from test_sites import denoise, psnr

    model, kw, key = tiny_models.BUILDERS[name]()
    model, kw = _to(model, kw)
    ref = denoise(model, kw, key)
    sites.optimize(model, quality="close")
    out = denoise(model, kw, key)
    sites.unmount(model)
    assert psnr(out, ref) >= 40.0


@pytest.mark.parametrize("name", ["FluxTransformer2DModel", "WanTransformer3DModel"])
def test_inductor_after_mount(name):
    model, kw = _to(*tiny_models.BUILDERS[name]()[:2])
    ref = _out(model, kw)
    sites.optimize(model)
    _out(model, kw)  # verify every signature eagerly
    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(**kw)
        assert explained.graph_break_count == 0, explained.break_reasons
        torch._dynamo.reset()
        out = torch.compile(model, fullgraph=True)(**kw)[0]
    # inductor compiles the rest of the model its own way: close, not bit-equal
    torch.testing.assert_close(out.float(), ref.float(), atol=5e-2, rtol=5e-2)
    sites.unmount(model)
    torch._dynamo.reset()


def test_cuda_graph_capture_after_verification():
    """Captured after an eager call verified every signature: the graph replays the fused ops
    (the gates never sync during capture) and stays torch.equal to eager."""
    model, kw = _to(*tiny_models.flux()[:2])
    ref = _out(model, kw)
    sites.optimize(model)
    _out(model, kw)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        _out(model, kw)  # warm-up on the side stream
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        static = model(**kw)[0]
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(static, ref)
    sites.unmount(model)
