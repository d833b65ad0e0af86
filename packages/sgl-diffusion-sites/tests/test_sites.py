"""CPU lane of sgl-diffusion-sites: the five supported diffusers transformers at tiny random configs.

With ``TRITON_INTERPRET=1`` every mounted op is forced to its Triton backend (run by the
interpreter), and the tests check through ``report.op_calls`` that the kernels, not the eager
fallbacks, produced the outputs compared here."""

from __future__ import annotations

import math
import shutil
import warnings

import pytest
import tiny_models
import torch

import sgl_diffusion_sites as sites
from sgl_diffusion_core import FusionFallbackWarning

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")

MODELS = list(tiny_models.BUILDERS)
# op calls that must run the eager chain because no backend can serve their input: HunyuanVideo's
# first double block gets the patch embedding as a transposed view (last dim not contiguous) as its
# image residual, and eager's sum keeps that layout for the second one: 2 per forward, 2 forwards
EAGER_CALLS = {"HunyuanVideoTransformer3DModel": {"modulate.gated_residual": 4}}


def _out(model, kw):
    with torch.no_grad():
        return model(**kw)[0]


def _tree(model):
    return [(name, m) for name, m in model.named_modules()]


@pytest.mark.parametrize("name", MODELS)
def test_exact_is_torch_equal_and_unmount_restores(name, kernel_backend):
    model, kw, _ = tiny_models.BUILDERS[name]()
    ref = _out(model, kw)
    tree, keys = _tree(model), list(model.state_dict())
    procs = {n: m.processor for n, m in tree if hasattr(m, "processor")}
    report = sites.optimize(model, quality="exact", backend=kernel_backend)
    assert report.mounted, str(report)
    assert list(model.state_dict()) == keys  # mounted twins share the originals' state
    for s in report.mounted:
        assert isinstance(model.get_submodule(s.path), type(dict(tree)[s.path]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FusionFallbackWarning)
        first = _out(model, kw)  # verifies every site (fused and eager, torch.equal)
        second = _out(model, kw)  # verified: fused only
    assert torch.equal(first, ref) and torch.equal(second, ref)
    assert {s.gate_state() for s in report.mounted} == {"verified"}, str(report)
    if kernel_backend is not None:
        # the Triton kernels ran (an op whose backend cannot serve runs its eager chain)
        assert report.op_calls and all(n[0] > 0 for n in report.op_calls.values()), report.op_calls
        eager = {op: n[1] for op, n in report.op_calls.items() if n[1]}
        assert eager == EAGER_CALLS.get(name, {}), report.op_calls
    assert sites.unmount(model)
    after = _tree(model)
    assert [n for n, _ in after] == [n for n, _ in tree]
    assert all(a is b for (_, a), (_, b) in zip(after, tree))
    assert all(model.get_submodule(n).processor is p for n, p in procs.items())  # the original processors
    assert torch.equal(_out(model, kw), ref)
    assert not sites.is_mounted(model) and not sites.unmount(model)


def test_flux_report_sites(kernel_backend):
    model, _, _ = tiny_models.flux()
    report = sites.optimize(model, backend=kernel_backend)
    kinds = report.by_kind()
    assert kinds["adaln_zero"] == {"mounted": 3, "skipped": 0}
    assert kinds["adaln_continuous"] == {"mounted": 1, "skipped": 0}
    assert kinds["block_residuals"] == {"mounted": 2, "skipped": 0}
    assert kinds["ff_gelu_tanh"] == {"mounted": 0, "skipped": 3}  # close only: exact mode keeps eager
    assert all("close only" in s.reason for s in report.skipped if s.kind == "ff_gelu_tanh")
    assert kinds["qk_norm_rope"] == {"mounted": 2, "skipped": 0}  # RoPE of both FluxAttnProcessor
    assert {s.ops for s in report.mounted if s.kind == "qk_norm_rope"} == {("rope.apply_rope_qk",)}
    assert {s.gate_state() for s in report.mounted} == {"pending"}
    d = report.to_dict()
    assert d["model"] == "FluxTransformer2DModel" and d["quality"] == "exact"
    assert d["mounted"] == len(report.mounted) and len(d["sites"]) == len(report.sites)
    assert {"path", "kind", "status", "reason", "ops", "backend", "contract", "gate"} <= set(d["sites"][0])
    text = str(report)
    for s in report.sites:
        assert s.path in text
    assert sites.mount_report(model) is report
    close = sites.optimize(model, quality="close", backend=kernel_backend)  # remount: unmounts first
    assert any("already mounted" in n for n in close.notes)
    assert close.by_kind()["ff_gelu_tanh"] == {"mounted": 3, "skipped": 0}
    single = close.sites[[s.path for s in close.sites].index("single_transformer_blocks.0.attn")]
    assert single.mounted and "rope.qk_norm_rope" in single.ops
    assert all(s.contract == "close" and s.gate is None for s in close.mounted)
    sites.unmount(model)


# The attention processors of HunyuanVideo, Qwen-Image and SD3.5: path -> (exact-mode ops, close-mode ops);
# a str is the start of the reason the processor stays eager in that mode
PROCESSOR_SITES = {
    "HunyuanVideoTransformer3DModel": {
        "transformer_blocks.0.attn": (("rope.apply_rope_qk", "layout.joint_qkv_cat"),
                                      ("rope.qk_norm_rope", "norm.qk_norm", "layout.joint_qkv_cat")),
        "single_transformer_blocks.0.attn": (("rope.apply_rope_qk",), ("rope.qk_norm_rope", "norm.qk_norm")),
    },
    "QwenImageTransformer2DModel": {
        "transformer_blocks.0.attn": (("layout.joint_qkv_cat",), ("rope.qk_norm_rope", "layout.joint_qkv_cat")),
    },
    "SD3Transformer2DModel": {
        "transformer_blocks.0.attn": ("exact mode keeps it eager", ("norm.qk_norm", "layout.joint_qkv_cat")),
        "transformer_blocks.0.attn2": ("exact mode keeps it eager", ("norm.qk_norm",)),  # dual attention
        "transformer_blocks.1.attn": ("exact mode keeps it eager", ("norm.qk_norm", "layout.joint_qkv_cat")),
    },
}


@pytest.mark.parametrize("name", list(PROCESSOR_SITES))
def test_processor_sites_report(name):
    """Which attention processors each mode mounts (set with ``set_processor``), with which ops, and
    why the others stay eager; nothing runs."""
    model, _, _ = tiny_models.BUILDERS[name]()
    originals = {n: m.processor for n, m in model.named_modules() if hasattr(m, "processor")}
    for mode, quality in enumerate(("exact", "close")):
        report = sites.optimize(model, quality=quality)
        got = {s.path: s for s in report.sites if s.kind in ("qk_norm_rope", "qk_norm")}
        assert set(got) == set(PROCESSOR_SITES[name]), str(report)
        for path, want in PROCESSOR_SITES[name].items():
            s, proc = got[path], model.get_submodule(path).processor
            assert s.module == type(originals[path]).__name__
            assert s.kind == ("qk_norm" if name == "SD3Transformer2DModel" else "qk_norm_rope")
            if isinstance(want[mode], str):
                assert not s.mounted and s.reason.startswith(want[mode]) and proc is originals[path], str(report)
            else:
                assert s.mounted and s.ops == want[mode] and s.contract == quality, str(report)
                assert proc is not originals[path] and proc._sgl_original is originals[path]
                assert s.gate_state() == ("pending" if quality == "exact" else "-")
        sites.unmount(model)
        assert all(model.get_submodule(n).processor is p for n, p in originals.items())


# One forward per model on the CPU lane (the interpreter's time is per launch; Flux's 8-step loop
# above covers the trajectory), at the threshold of the 8-step loop
@pytest.mark.parametrize("name", list(PROCESSOR_SITES))
def test_close_processor_sites_psnr(name, kernel_backend):
    """Close mode with the new processor sites: every processor op runs its kernel (no eager chain),
    the output moves (the close kernels change bits) and stays >= 40 dB from eager; unmount
    restores the processors and eager's bits."""
    model, kw, _ = tiny_models.BUILDERS[name]()
    ref = _out(model, kw)
    originals = {n: m.processor for n, m in model.named_modules() if hasattr(m, "processor")}
    report = sites.optimize(model, quality="close", backend=kernel_backend)
    out = _out(model, kw)
    ops = {op for s in report.mounted if s.kind in ("qk_norm_rope", "qk_norm") for op in s.ops}
    if kernel_backend is not None:
        assert all(report.op_calls[op][0] > 0 and report.op_calls[op][1] == 0 for op in ops), report.op_calls
        assert not torch.equal(out, ref)
    db = psnr(out, ref)
    print(f"{name}: PSNR {db:.1f} dB, one forward (close sites vs eager)")
    assert db >= 40.0, f"{name}: PSNR {db:.1f} dB"
    sites.unmount(model)
    assert all(model.get_submodule(n).processor is p for n, p in originals.items())
    assert torch.equal(_out(model, kw), ref)


def test_failing_processor_site_falls_back_with_one_warning(kernel_backend):
    """The gate of a processor site: a fused path one ulp off falls back to the original processor for
    that signature (one warning naming the processor), the other sites stay verified."""
    model, kw, _ = tiny_models.qwen_image()
    ref = _out(model, kw)
    report = sites.optimize(model, backend=kernel_backend)
    proc = model.get_submodule("transformer_blocks.0.attn").processor

    class OffByOneUlp(type(proc._sgl_k)):
        def joint_qkv_cat(self, *args, **kw):
            q, k, v = super().joint_qkv_cat(*args, **kw)
            return torch.nextafter(q, torch.full_like(q, math.inf)), k, v

    proc._sgl_k = OffByOneUlp(report.quality, kernel_backend)
    with pytest.warns(FusionFallbackWarning, match=r"transformer_blocks\.0\.attn\.processor") as rec:
        out = _out(model, kw)
    assert len([w for w in rec if issubclass(w.category, FusionFallbackWarning)]) == 1
    assert torch.equal(out, ref)
    states = {s.path: s.gate_state() for s in report.mounted}
    assert states.pop("transformer_blocks.0.attn") == "fallback"
    assert set(states.values()) == {"verified"}
    sites.unmount(model)


class _Off(torch.nn.Module):
    def forward(self, x):
        return x


@pytest.mark.parametrize("obj", [torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU("tanh")), _Off(), object()])
def test_unknown_model_mounts_nothing(obj):
    report = sites.optimize(obj)
    assert report.sites == [] and report.notes and "nothing mounted" in report.notes[0]
    assert "nothing mounted" in str(report)
    assert not sites.is_mounted(obj) if isinstance(obj, torch.nn.Module) else True


def test_bad_quality_mounts_nothing():
    model, _, _ = tiny_models.flux()
    report = sites.optimize(model, quality="fast")
    assert not report.sites and "quality" in report.notes[0] and not sites.is_mounted(model)


def test_failing_site_falls_back_with_one_warning(kernel_backend):
    """A site whose fused path is not bit-exact: eager for that signature, one warning, others mounted."""
    model, kw, _ = tiny_models.sd3()
    ref = _out(model, kw)
    report = sites.optimize(model, backend=kernel_backend)
    bad = model.get_submodule("norm_out")

    class OffByOneUlp(type(bad._sgl_k)):
        def norm_modulate(self, norm, x, scale, shift):
            y = super().norm_modulate(norm, x, scale, shift)
            return torch.nextafter(y, torch.full_like(y, math.inf))

    object.__setattr__(bad, "_sgl_k", OffByOneUlp(report.quality, kernel_backend))
    with pytest.warns(FusionFallbackWarning, match="norm_out") as rec:
        out = _out(model, kw)
    assert len([w for w in rec if issubclass(w.category, FusionFallbackWarning)]) == 1
    assert torch.equal(out, ref)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FusionFallbackWarning)
        assert torch.equal(_out(model, kw), ref)  # no second warning
    states = {s.path: s.gate_state() for s in report.mounted}
    assert states.pop("norm_out") == "fallback"
    assert set(states.values()) == {"verified"}
    sites.unmount(model)


def test_exact_without_verification(kernel_backend):
    model, kw, _ = tiny_models.wan()
    ref = _out(model, kw)
    report = sites.optimize(model, verify=False, backend=kernel_backend)
    kinds = {s.path: (s.kind, s.status) for s in report.sites if s.kind != "attention"}
    assert kinds["blocks.0"] == ("block_residuals", "mounted")
    assert kinds["blocks.0.attn1"] == ("qk_norm_rope", "mounted")  # self-attention: its RoPE
    assert kinds["blocks.0.attn2"] == ("qk_norm_rope", "skipped")  # cross-attention: no RoPE
    assert {s.gate_state() for s in report.mounted} == {"off"}
    assert torch.equal(_out(model, kw), ref)
    sites.unmount(model)


def psnr(x: torch.Tensor, ref: torch.Tensor) -> float:
    x, ref = x.double(), ref.double()
    mse = (x - ref).pow(2).mean().item()
    peak = (ref.max() - ref.min()).item()
    return math.inf if mse == 0 else 10 * math.log10(peak * peak / mse)


def denoise(model, kw, key, steps=8):
    """A rectified-flow Euler loop: ``x <- x + (t_next - t) * v(x, t)`` over ``steps`` steps."""
    x = kw[key]
    ts = torch.linspace(1.0, 0.0, steps + 1)
    scale = 1000.0 if kw["timestep"].dtype == torch.long or kw["timestep"].item() > 1 else 1.0
    for i in range(steps):
        step = dict(kw, **{key: x, "timestep": (ts[i] * scale).reshape(1).to(x.device)})
        with torch.no_grad():
            v = model(**step)[0]
        x = (x.float() + (ts[i + 1] - ts[i]) * v.float()).to(x.dtype)
    return x


# Flux only on the CPU lane (every close kernel, the interpreter's time is per launch); the GPU
# lane runs the loop for all five models
@pytest.mark.parametrize("name", ["FluxTransformer2DModel"])
def test_close_psnr_over_8_steps(name, kernel_backend):
    model, kw, key = tiny_models.BUILDERS[name]()
    ref = denoise(model, kw, key)
    report = sites.optimize(model, quality="close", backend=kernel_backend)
    out = denoise(model, kw, key)
    sites.unmount(model)
    if kernel_backend is not None:
        assert report.op_calls.get("norm.ln_modulate", [0])[0] > 0
    assert not torch.equal(out, ref) or kernel_backend is None  # the close kernels did change bits
    db = psnr(out, ref)
    print(f"{name}: PSNR {db:.1f} dB over 8 steps (close sites vs eager)")
    assert db >= 40.0, f"{name}: PSNR {db:.1f} dB over 8 steps"


def _recording_backend(graphs):
    """A dynamo backend that keeps each graph's code and runs it through ``aot_eager`` (the ATen ops as
    traced: no inductor, so exact sites stay bit-exact)."""
    from torch._dynamo.backends.common import aot_autograd

    def record(gm, example_inputs):
        graphs.append(gm.code)
        return aot_autograd(fw_compiler=lambda g, _: g)(gm, example_inputs)

    return record


# under_compile -> how many of each custom op the compiled graph of the mounted tiny Flux holds (exact mode)
FLUX_COMPILED_OPS = {
    # every verified op: 4 adaLN + the double block's 2 norm2 modulations; 4 + 1 gated residuals; RoPE in
    # both attention processors
    "fused": {"scale_shift": 6, "gated_residual": 5, "rope": 2},
    # inductor fuses the elementwise modulations and residuals itself: only RoPE stays a custom op
    "auto": {"scale_shift": 0, "gated_residual": 0, "rope": 2},
    "eager": {"scale_shift": 0, "gated_residual": 0, "rope": 0},  # the mount is invisible to compile
}


@pytest.mark.parametrize("under_compile", list(FLUX_COMPILED_OPS))
def test_compile_after_mount_has_no_graph_break_and_runs_the_policy_ops(under_compile, kernel_backend):
    """Dynamo captures the mounted Flux whole (``fullgraph=True`` fails on any graph break) with the
    verified sites' ops as custom ops where the ``under_compile`` policy keeps them and their eager
    chains elsewhere; ``aot_eager`` runs the graph and the result stays torch.equal."""
    model, kw, _ = tiny_models.flux()
    ref = _out(model, kw)
    report = sites.optimize(model, backend=kernel_backend, under_compile=under_compile)
    _out(model, kw)  # eager call: every signature verified
    graphs = []
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend=_recording_backend(graphs), fullgraph=True)(**kw)[0]
    assert torch.equal(out, ref) and len(graphs) == 1
    got = {op: graphs[0].count(f"sgl_diffusion.{op}") for op in FLUX_COMPILED_OPS[under_compile]}
    assert got == FLUX_COMPILED_OPS[under_compile], got
    assert report.under_compile == under_compile
    states = {s.path: s.under_compile() for s in report.mounted}
    want = {"fused": "fused", "eager": "eager"}.get(under_compile)
    for path, state in states.items():
        rope = path.endswith(".attn")
        assert state == (want or ("fused" if rope else "eager")), (path, state)
    sites.unmount(model)
    torch._dynamo.reset()


def test_under_compile_in_the_report():
    """Each mounted site says what torch.compile traces there (the policy per op), in the table and the
    dict; an unknown policy mounts nothing."""
    model, _, _ = tiny_models.flux()
    close = sites.optimize(model, quality="close")  # under_compile="auto" by default
    assert close.under_compile == "auto" and close.to_dict()["under_compile"] == "auto"
    by_path = {s.path: s for s in close.sites if s.kind != "attention"}  # attention sites: own test file
    block = by_path["transformer_blocks.0"]  # gated residuals (eager under compile) + ln_modulate (kept)
    assert block.ops == ("modulate.gated_residual", "norm.ln_modulate")
    assert block.compile_ops == ("norm.ln_modulate",) and block.under_compile() == "partly"
    assert by_path["transformer_blocks.0.norm1"].under_compile() == "fused"  # ln_modulate beats inductor's
    assert by_path["single_transformer_blocks.0"].under_compile() == "eager"  # its gated residual only
    assert by_path["transformer_blocks.0.ff.net.0"].under_compile() == "eager"  # gelu_tanh
    assert by_path["single_transformer_blocks.0.attn"].compile_ops == ("rope.qk_norm_rope", "rope.apply_rope_qk")
    d = block.to_dict()
    assert d["under_compile"] == "partly" and d["compile_ops"] == ["norm.ln_modulate"]
    text = str(close)
    assert "under_compile=auto" in text and "norm.ln_modulate fused" in text
    assert all(s.under_compile() == "-" for s in close.skipped)
    fused = sites.optimize(model, under_compile="fused")
    assert {s.under_compile() for s in fused.mounted} == {"fused"}
    sites.unmount(model)
    bad = sites.optimize(model, under_compile="sometimes")
    assert not bad.sites and "under_compile" in bad.notes[0] and not sites.is_mounted(model)


@pytest.mark.parametrize("under_compile", ["fused", "auto"])
def test_compile_whole_hunyuan_video(under_compile, kernel_backend):
    """The whole mounted HunyuanVideo compiles (``fullgraph=True``). Its first double block's image
    residual is a transposed view, which no kernel takes: eagerly those two gated residuals run their eager
    chain, and while dynamo traces they trace it too (instead of failing in the op's fake implementation);
    every other residual stays the custom op under ``"fused"``."""
    model, kw, _ = tiny_models.hunyuan_video()
    ref = _out(model, kw)
    report = sites.optimize(model, backend=kernel_backend, under_compile=under_compile)
    _out(model, kw)  # verifies every signature
    graphs = []
    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(model, backend=_recording_backend(graphs), fullgraph=True)(**kw)[0]
    assert torch.equal(out, ref) and len(graphs) == 1
    code = graphs[0]
    assert code.count("sgl_diffusion.gated_residual") == (5 - 2 if under_compile == "fused" else 0)
    assert code.count("sgl_diffusion.rope") == 2 and code.count("sgl_diffusion.joint_qkv_cat") == 1
    assert {s.gate_state() for s in report.mounted} == {"verified"}
    sites.unmount(model)
    torch._dynamo.reset()


def test_mount_a_compiled_model_mounts_and_unmount_restores_the_compiled_originals(kernel_backend):
    """Blocks compiled in place (diffusers' ``compile_repeated_blocks`` sets ``_compiled_call_impl``, a
    compiled call of the original's own ``_call_impl``): their mounted twins do not inherit it (they
    would run the original's compiled forward), so the mount runs, the report says the blocks must be
    compiled again, and unmount puts back the compiled originals exactly."""
    model, kw, _ = tiny_models.flux()
    ref = _out(model, kw)
    model.compile_repeated_blocks(backend="eager")  # diffusers' method (nothing is traced before a call)
    tree = _tree(model)
    compiled = {n: m.__dict__["_compiled_call_impl"] for n, m in tree if "_compiled_call_impl" in m.__dict__}
    assert set(compiled) == {"transformer_blocks.0", "single_transformer_blocks.0"}
    report = sites.optimize(model, backend=kernel_backend)
    assert any("had been compiled" in n and "compile_repeated_blocks" in n for n in report.notes), report.notes
    for path in compiled:
        assert "_compiled_call_impl" not in model.get_submodule(path).__dict__
    assert torch.equal(_out(model, kw), ref)  # the twins ran: their gates verified, their ops ran
    assert {s.gate_state() for s in report.mounted} == {"verified"}, str(report)
    assert report.op_calls["modulate.gated_residual"][0] == 5
    assert sites.unmount(model)
    assert all(a is b for (_, a), (_, b) in zip(_tree(model), tree))
    assert all(model.get_submodule(n).__dict__["_compiled_call_impl"] is c for n, c in compiled.items())
    torch._dynamo.reset()


def test_mount_a_model_compiled_whole_notes_how_to_verify():
    """``Module.compile()`` of the model itself or a ``torch.compile`` wrapper: dynamo traces it again
    with the sites at its next call (module guards); the report says so and how to verify first."""
    model, _, _ = tiny_models.wan()
    model.compile(backend="eager")
    report = sites.optimize(model)
    assert report.mounted and any("force_eager" in n for n in report.notes), report.notes
    sites.unmount(model)
    del model._compiled_call_impl
    wrapper = torch.compile(model, backend="eager")
    report = sites.optimize(wrapper)
    assert report.model == "WanTransformer3DModel" and report.mounted
    assert any("OptimizedModule" in n for n in report.notes), report.notes
    assert sites.is_mounted(wrapper) and sites.is_mounted(model) and sites.mount_report(wrapper) is report
    assert sites.unmount(wrapper) and not sites.is_mounted(model)
    torch._dynamo.reset()


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")),
                    reason="inductor on the CPU needs a C++ compiler")
def test_compile_repeated_blocks_of_a_mounted_model_with_inductor(kernel_backend):
    """diffusers' ``compile_repeated_blocks`` matches class names exactly and finds no mounted block;
    ``sites.compile_repeated_blocks`` compiles them (inductor, ``fullgraph=True``): no graph break, the
    RoPE custom op runs inside the compiled blocks, the output stays within inductor's tolerance of the
    mounted eager one, and unmount leaves the original blocks uncompiled."""
    from torch._dynamo.utils import counters
    from torch.profiler import ProfilerActivity, profile

    model, kw, _ = tiny_models.flux()
    sites.optimize(model, backend=kernel_backend)
    with pytest.warns(RuntimeWarning, match="not verified yet"):  # compiled before the eager call
        sites.compile_repeated_blocks(model, backend="eager")
    sites.unmount(model)
    report = sites.optimize(model, backend=kernel_backend)
    mounted_eager = _out(model, kw)  # verifies every site
    with pytest.raises(ValueError, match="not found"):
        model.compile_repeated_blocks(fullgraph=True)
    torch._dynamo.reset()
    counters.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        paths = sites.compile_repeated_blocks(model, fullgraph=True)
    assert paths == ["transformer_blocks.0", "single_transformer_blocks.0"]
    out = _out(model, kw)  # traced, compiled by inductor
    assert not counters["graph_break"] and counters["stats"]["unique_graphs"] == 2
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        again = _out(model, kw)
    ran = {e.key: e.count for e in prof.key_averages() if e.key.startswith("sgl_diffusion::")}
    assert ran == {"sgl_diffusion::rope": 2}, ran  # RoPE of both blocks; their modulations fused by inductor
    assert torch.equal(again, out)
    torch.testing.assert_close(out.float(), mounted_eager.float(), atol=5e-2, rtol=5e-2)
    db = psnr(out, mounted_eager)
    print(f"compile_repeated_blocks (inductor) vs mounted eager: PSNR {db:.1f} dB")
    assert db >= 40.0
    assert any("compile_repeated_blocks: 2" in n for n in report.notes)
    sites.unmount(model)
    assert all("_compiled_call_impl" not in m.__dict__ for m in model.modules())
    with pytest.raises(ValueError, match="_repeated_blocks"):
        sites.compile_repeated_blocks(tiny_models.sd3()[0])
    torch._dynamo.reset()


@pytest.mark.parametrize("quality", ["exact", "close"])
def test_compile_hunyuan_video_processors_in_place_rope(quality, kernel_backend):
    """The HunyuanVideo processors rotate (and in close mode normalize) rows of q and k in place,
    views of their own projections; dynamo captures each processor whole and the compiled result is
    torch.equal to the mounted eager one."""
    model, kw, _ = tiny_models.hunyuan_video()
    paths = ("transformer_blocks.0.attn", "single_transformer_blocks.0.attn")
    calls = {}
    hooks = [model.get_submodule(p).register_forward_pre_hook(
        lambda m, args, kwargs, p=p: calls.setdefault(p, (args, kwargs)), with_kwargs=True) for p in paths]
    # attention=False: the masked attention traces SDPA under compile (test_sites_attention.py)
    sites.optimize(model, quality=quality, backend=kernel_backend, attention=False)
    _out(model, kw)  # records each processor's inputs; exact mode: verifies every signature
    for h in hooks:
        h.remove()
    for path in paths:
        attn = model.get_submodule(path)
        args, kwargs = calls[path]
        graphs = []
        torch._dynamo.reset()
        with torch.no_grad():
            eager = attn(*args, **kwargs)
            out = torch.compile(attn, backend=_recording_backend(graphs), fullgraph=True)(*args, **kwargs)
        assert len(graphs) == 1 and all(torch.equal(a, b) for a, b in zip(out, eager)), path
        code = graphs[0]
        assert code.count("sgl_diffusion.rope") == 1  # apply_rope_qk / qk_norm_rope: one op either way
        assert code.count("sgl_diffusion.joint_qkv_cat") == (path == paths[0])
        assert code.count("sgl_diffusion.qk_norm") == (quality == "close")  # the norm op (rope's is "rope")
    sites.unmount(model)
    torch._dynamo.reset()


def test_compile_before_verification_runs_eager():
    """Under capture a pending signature never verifies (no host sync): the graph has no fused op."""
    model, kw, _ = tiny_models.wan()
    report = sites.optimize(model)
    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(**kw)
    code = "\n".join(g.code for g in explained.graphs)
    assert explained.graph_break_count == 0 and "sgl_diffusion." not in code
    assert {s.gate_state() for s in report.mounted} == {"pending"}
    sites.unmount(model)
    torch._dynamo.reset()


def test_mount_plan_on_meta(tmp_path):
    """The plan of a production-size config, built on the meta device: sites listed, nothing left mounted."""
    plan = sites.mount_plan("FluxTransformer2DModel")
    kinds = plan.by_kind()
    assert kinds["adaln_zero"]["mounted"] == 2 * 19 + 38 and kinds["block_residuals"]["mounted"] == 19 + 38
    assert {s.gate_state() for s in plan.mounted} == {"pending"} and "plan only" in plan.notes[-1]
    cfg = tmp_path / "config.json"
    cfg.write_text('{"_class_name": "WanTransformer3DModel", "num_layers": 2, "num_attention_heads": 2}')
    wan = sites.mount_plan(tmp_path)
    assert wan.model == "WanTransformer3DModel" and wan.by_kind()["block_residuals"]["mounted"] == 2
    bad = sites.mount_plan("NotAModel")
    assert not bad.sites and "cannot build" in bad.notes[0]
    model, _, _ = tiny_models.sd3()
    plan = sites.mount_plan(model, quality="close")
    assert plan.mounted and not sites.is_mounted(model)
    live = sites.optimize(model)
    assert sites.mount_plan(model, quality="close") is live and sites.is_mounted(model)
    sites.unmount(model)


def test_autograd_runs_the_original_modules(kernel_backend):
    """The fused ops have no backward: while autograd records, sites run eager (same values and
    gradients); with nothing requiring grad they run fused even in grad mode."""
    model, kw, _ = tiny_models.sd3(dtype=torch.float32)
    ref = model(**kw)[0]
    ref.square().mean().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    report = sites.optimize(model, backend=kernel_backend)
    out = model(**kw)[0]
    assert out.grad_fn is not None and torch.equal(out, ref)
    out.square().mean().backward()
    assert all(torch.equal(p.grad, grads[n]) for n, p in model.named_parameters() if n in grads)
    assert not report.op_calls  # nothing ran fused
    model.requires_grad_(False)
    assert torch.equal(model(**kw)[0], ref)
    assert report.op_calls and sum(n[0] for n in report.op_calls.values()) > 0
    sites.unmount(model)


def test_can_use_asked_once_per_call_signature():
    """A mount asks the op's own ``can_use``, which validates once per call signature (core ``Op.can_use``:
    shape, strides, dtype, device, shared memory), not on every call; the mount keeps no verdicts."""
    import sgl_diffusion_modulate as modulate
    from sgl_diffusion_core import testing
    from sgl_diffusion_sites.kernels import Kernels

    op = testing.op_definition("modulate.scale_shift")
    op.clear()
    k = Kernels("exact", None)
    x, m = torch.randn(1, 4, 8), torch.randn(1, 1, 8)
    assert k._fuse("modulate.scale_shift", modulate.can_use_scale_shift, x, m, m)
    assert k._fuse("modulate.scale_shift", modulate.can_use_scale_shift, torch.randn(1, 4, 8), m, m)
    assert op.verdicts_cached() == 1  # the same signature: one verdict
    assert k._fuse("modulate.scale_shift", modulate.can_use_scale_shift, torch.randn(1, 5, 8), m, m)
    assert op.verdicts_cached() == 2
    assert k.counts["modulate.scale_shift"] == [3, 0]

    asked = []

    def can_use(*args, **kw):
        asked.append(len(args))
        return True

    k._fuse("modulate.scale_shift", can_use, x, m, m)
    k._fuse("modulate.scale_shift", can_use, x, m, m)
    assert len(asked) == 2  # whatever can_use is given is asked: caching is the op's
