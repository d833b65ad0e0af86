"""GPU lane: the exact kernels against eager on the GPU, and which call signatures the gate verified.

For D in {1536, 2432, 3072, 5120} (Wan-1.3B, SD3.5-L, FLUX/Hunyuan, Wan-14B) and the three
modulation layouts (per sample, per token as a strided chunk of a [B, S, 6*D] projection,
per frame), bf16, S = 4410 tokens (21 frames of 210): the op's result must be ``torch.equal``
to eager whatever the gate decided, and a fallback must be *demonstrated*: the fused kernel
alone (``run.fused``) then differs from eager. Every signature's state is printed and written
to ``$SGL_NORM_GATE_REPORT`` (default ``row_norm_gate_report.json`` in the working directory)
as the record of which signatures verified. Run with ``-s`` to see the table.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import FusionFallbackWarning, bench, explain, testing

K = testing.backend_module("norm.rms_norm", "triton_exact")  # the exact kernels and their rules

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

WIDTHS = [1536, 2432, 3072, 5120]
LAYOUTS = ["per-sample", "per-token", "per-frame"]
S, FRAMES = 4410, 21
REPORT: list[dict] = []


def _mods(D, layout, dtype=torch.bfloat16):
    g = torch.Generator(device="cuda").manual_seed(D)
    r = lambda *s: torch.randn(*s, device="cuda", dtype=dtype, generator=g) * 0.5  # noqa: E731
    if layout == "per-sample":
        mod = r(1, 6, D)
        return mod[:, 1:2], mod[:, 0:1]
    if layout == "per-token":
        proj = r(1, S, 6 * D)
        return proj[..., D:2 * D], proj[..., :D]
    return r(1, FRAMES, 1, D), r(1, FRAMES, 1, D)


def _call(name, x, sc, sh, w, b, reference=False):
    if name in ("layer_norm", "rms_norm"):
        fn = getattr(norm, f"{name}_reference" if reference else name)
        if reference:
            return fn(x, w, b)
        return fn(x, w, b, exact=True)
    kw = {"weight": w} if name == "rms_modulate" else {"weight": w, "bias": b}
    fn = getattr(norm, f"{name}_reference" if reference else name)
    return fn(x, sc, sh, **kw) if reference else fn(x, sc, sh, exact=True, **kw)


def _check(name, x, sc=None, sh=None, w=None, b=None, *, label):
    gate = norm.exact_gate(f"norm.{name}")
    gate.reset()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = _call(name, x, sc, sh, w, b)
    expected = _call(name, x, sc, sh, w, b, reference=True)
    testing.assert_exact(out, expected)
    (state,) = set(gate.states().values())
    falls = [r for r in rec if issubclass(r.category, FusionFallbackWarning)]
    assert len(falls) == (state == "fallback")
    args, kw = ((x, w, b), {}) if name in ("layer_norm", "rms_norm") else ((x, sc, sh), {"weight": w})
    if name == "ln_modulate":
        kw["bias"] = b
    chosen = explain(getattr(norm, name), *args, exact=True, **kw).chosen
    assert chosen == "triton_exact", "exact=True on a GPU must select the gated exact kernel"
    mismatches = None
    if state == "fallback":  # demonstrate it: the kernel alone differs from eager
        tensors = (x, sc, sh, w, b if name != "rms_modulate" else None)
        alone = K.prepare_kernel(testing.geometry(f"norm.{name}", *args, **kw), *tensors)(*tensors, 1e-6, 1.0)
        assert not torch.equal(alone, expected)
        mismatches = int((alone != expected).sum())
    # a verified signature runs the fused kernel from now on: still eager's bits
    testing.assert_exact(_call(name, x, sc, sh, w, b), expected)
    REPORT.append({"case": label, "state": state, "mismatching_elements_of_the_kernel": mismatches})
    print(f"{label}: {state}" + (f" ({mismatches} elements differ)" if mismatches else ""))


@pytest.mark.parametrize("D", WIDTHS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_modulated_exact(D, layout):
    torch.manual_seed(D)
    x = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    sc, sh = _mods(D, layout)
    _check("ln_modulate", x, sc, sh, label=f"ln_modulate D={D} {layout}")
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    _check("rms_modulate", x, sc, sh, w, label=f"rms_modulate D={D} {layout} weight=bf16")


@pytest.mark.parametrize("D", WIDTHS)
def test_plain_exact(D):
    torch.manual_seed(D)
    x = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    b = 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    _check("layer_norm", x, label=f"layer_norm D={D}")
    _check("layer_norm", x, w=w, b=b, label=f"layer_norm D={D} affine")
    _check("rms_norm", x, w=w, label=f"rms_norm D={D} weight=bf16")
    _check("rms_norm", x, w=w.float(), label=f"rms_norm D={D} weight=fp32")


@pytest.mark.parametrize("D", [3072, 5120])
@pytest.mark.parametrize("tuning", [{}, {"HOLD": False}, {"ROWS": 2}, {"MAXNREG": None}, {"MOD_AHEAD": 0},
                                    {"MOD_AHEAD": 2}, {"WARPS": 2}, {"WARPS": 4}, {"WARPS": 2, "ROWS": 2},
                                    {"WARPS": 2, "HOLD": False}])
def test_rms_build_choices_at_many_rows(D, tuning):
    """RMSNorm's launch at 16401 rows, a video's (the rule: the row held in registers, capped above
    32 chunks, the output chain's operands loaded ahead) and the other build choices there (read
    twice, two rows per program, uncapped, no operands ahead, groups of two, eager's warp-row spread
    over 2 or 4 warps, held or read twice): the fused kernel
    alone is ``torch.equal`` to eager (rms_modulate, per sample, bf16 weight), so no build choice
    relies on the gate's fallback."""
    from sgl_diffusion_core import describe

    torch.manual_seed(D)
    x = torch.randn(1, 16401, D, device="cuda", dtype=torch.bfloat16)  # odd: ROWS=2 leaves a last program one row
    sc, sh = _mods(D, "per-sample")
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    geom = describe("norm.rms_modulate", x, sc, sh, weight=w).info["geom"]
    tensors = (x, sc, sh, w, None)
    out = K.prepare_kernel(geom, *tensors, tuning=dict(tuning))(*tensors, 1e-6, 1.0)
    testing.assert_exact(out, norm.rms_modulate_reference(x, sc, sh, weight=w))


# every DiT width the launch rules serve (PixArt / Sana-0.6B to 6144), at classifier-free guidance's batch 2 too
DIT_WIDTHS = [1152, 1536, 1920, 2048, 2240, 2304, 2432, 2560, 3072, 3840, 4096, 5120, 6144]


@pytest.mark.parametrize("B", [1, 2])
@pytest.mark.parametrize("D", DIT_WIDTHS)
def test_every_dit_width_kernel_alone(D, B):
    """At every DiT width, batch 1 and 2, 4096 tokens, bf16, per-sample modulation: the exact kernel
    alone at the launch rules (no gate) is ``torch.equal`` to eager for ``layer_norm`` (affine),
    ``rms_norm`` (bf16 weight), ``ln_modulate`` and ``rms_modulate``; so is the public op."""
    from sgl_diffusion_core import describe

    torch.manual_seed(D + B)
    x = torch.randn(B, 4096, D, device="cuda", dtype=torch.bfloat16)
    mod = torch.randn(B, 2, D, device="cuda", dtype=torch.bfloat16) * 0.5
    sc, sh = mod[:, :1], mod[:, 1:]
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    b = 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    cases = {
        "layer_norm": ((x, w, b), {}, (x, None, None, w, b), lambda: norm.layer_norm_reference(x, w, b)),
        "rms_norm": ((x, w), {}, (x, None, None, w, None), lambda: norm.rms_norm_reference(x, w)),
        "ln_modulate": ((x, sc, sh), {}, (x, sc, sh, None, None), lambda: norm.ln_modulate_reference(x, sc, sh)),
        "rms_modulate": ((x, sc, sh), {"weight": w}, (x, sc, sh, w, None),
                         lambda: norm.rms_modulate_reference(x, sc, sh, weight=w)),
    }
    for name, (args, kw, tensors, reference) in cases.items():
        expected = reference()
        geom = describe(f"norm.{name}", *args, **kw).info["geom"]
        alone = K.prepare_kernel(geom, *tensors)(*tensors, 1e-6, 1.0)
        assert torch.equal(alone, expected), f"{name} D={D} B={B}: the exact kernel alone differs from eager"
        testing.assert_exact(getattr(norm, name)(*args, **kw), expected)


@pytest.mark.parametrize("D", [1152, 1536, 1920, 2048, 2240, 2432])
def test_layer_norm_warps_at_many_rows(D):
    """LayerNorm rows of 3-5 chunks at 16401 rows (from 16384 the warps rule gives them 1 warp; an odd count
    leaves the last wave partial): the exact kernel alone at the rule and at 1, 2 and 4 warps is ``torch.equal``
    to eager, for ``layer_norm`` (affine) and ``ln_modulate`` (per-sample); 1536 and 2048 (full chunks) on one
    warp reduce in the other row order."""
    from sgl_diffusion_core import describe

    torch.manual_seed(D)
    x = torch.randn(1, 16401, D, device="cuda", dtype=torch.bfloat16)
    mod = torch.randn(1, 2, D, device="cuda", dtype=torch.bfloat16) * 0.5
    sc, sh = mod[:, :1], mod[:, 1:]
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    b = 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    cases = {"layer_norm": ((x, w, b), (x, None, None, w, b), norm.layer_norm_reference(x, w, b)),
             "ln_modulate": ((x, sc, sh), (x, sc, sh, None, None), norm.ln_modulate_reference(x, sc, sh))}
    for name, (args, tensors, expected) in cases.items():
        geom = describe(f"norm.{name}", *args).info["geom"]
        for tuning in (None, {"WARPS": 1}, {"WARPS": 2}, {"WARPS": 4}):
            alone = K.prepare_kernel(geom, *tensors, tuning=tuning)(*tensors, 1e-6, 1.0)
            assert torch.equal(alone, expected), f"{name} D={D} {tuning}: the exact kernel alone differs from eager"


def test_cuda_graph_capture_uses_only_verified_signatures():
    x = torch.randn(1, 4608, 3072, device="cuda", dtype=torch.bfloat16)
    sc, sh = _mods(3072, "per-sample")
    # exact=True (also the default, _row_norm.py): the gated exact kernel
    norm.ln_modulate(x, sc, sh, exact=True)  # eager call: the gate decides for this signature
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        norm.ln_modulate(x, sc, sh, exact=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = norm.ln_modulate(x, sc, sh, exact=True)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, norm.ln_modulate_reference(x, sc, sh))


def test_zz_write_report():
    """Runs last (name order within the file): the gate states of this run, written as a record."""
    path = os.environ.get("SGL_NORM_GATE_REPORT", "row_norm_gate_report.json")
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "git_sha": bench.git_sha(),
                   "cases": REPORT}, f, indent=1)
    print(f"gate report: {len(REPORT)} signatures, "
          f"{sum(r['state'] == 'verified' for r in REPORT)} verified -> {path}")
