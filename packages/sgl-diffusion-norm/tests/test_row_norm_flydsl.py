"""The flydsl backend of the row norms on the CPU: its numerical model against the fp64
definition at every width of the acceptance list and every modulation layout, its launch rule,
and the refusals of its launcher. (The kernels themselves are compiled for gfx942 / gfx950 /
gfx1201 by tools/compile_rocm.py; none has run on AMD hardware here.)"""

import os
import subprocess
import sys

import pytest
import torch
from row_norm_oracle import norm_spec

from sgl_diffusion_core import REGISTRY, InputDesc, UnsupportedInputError, testing
from sgl_diffusion_norm import _row_norm_flydsl_rule as F

K = testing.backend_module("norm.ln_modulate", "flydsl")  # the launcher's refusals (imports no flydsl)

ACCEPTANCE_WIDTHS = (1536, 2240, 2432, 3072, 3840, 5120, 6144)
LAYOUTS = ("per-channel", "per-sample", "per-token", "per-frame")
B, FRAMES, L = 2, 3, 2
S = FRAMES * L


def flydsl_tolerance(op_id: str, dtype: torch.dtype) -> tuple[float, float]:
    spec = next(s for s in REGISTRY.specs(op_id) if s.backend == "flydsl")
    return spec.contract.tolerance(dtype)


def within(got: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float) -> None:
    """``|got - ref| <= atol + rtol * |ref|`` everywhere (ref fp64), naming the worst element."""
    err = (got.double() - ref).abs()
    excess = err - (atol + rtol * ref.abs())
    worst = int(excess.argmax())
    assert float(excess.max()) <= 0, (
        f"not within atol={atol:g} rtol={rtol:g}: at flat index {worst} got "
        f"{got.flatten()[worst].item()}, fp64 {ref.flatten()[worst].item()}"
    )


def modulation(layout: str, D: int, dtype, gen) -> tuple[torch.Tensor, torch.Tensor]:
    """A modulation tensor in ``layout`` (as the op takes it) and the same values expanded to
    ``[B*S, D]`` (what row ``(b, s)`` reads)."""
    r = lambda *shape: (torch.randn(*shape, generator=gen) * 0.5).to(dtype)  # noqa: E731
    if layout == "per-channel":
        t = r(D)
        full = t.expand(B, S, D)
    elif layout == "per-sample":
        t = r(B, D)
        full = t[:, None, :].expand(B, S, D)
    elif layout == "per-token":  # a strided chunk of a [B, S, 3D] projection
        t = r(B, S, 3 * D)[..., D : 2 * D]
        full = t
    else:
        t = r(B, FRAMES, 1, D)
        full = t.expand(B, FRAMES, L, D).reshape(B, S, D)
    return t, full.reshape(B * S, D)


def variant(D, norm, x, **kw):
    return F.Variant(
        "gfx942", D, norm, F._DT[x], **{k: F._DT[v] if isinstance(v, torch.dtype) else v for k, v in kw.items()}
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("D", ACCEPTANCE_WIDTHS)
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_model_modulated_within_tolerance_of_fp64(norm, D, layout):
    """ln_modulate / rms_modulate: the kernel's arithmetic (its model) against the fp64
    definition, bf16 stream with bf16 modulation, and fp32 modulation with the affine."""
    gen = torch.Generator().manual_seed(D)
    op = "norm.ln_modulate" if norm == "layer" else "norm.rms_modulate"
    x = (torch.randn(B, S, D, generator=gen) * 2 + 0.5).to(torch.bfloat16)
    for mod_dt, affine in ((torch.bfloat16, False), (torch.float32, True)):
        sc, sc_rows = modulation(layout, D, mod_dt, gen)
        sh, sh_rows = modulation(layout, D, mod_dt, gen)
        w = (1 + 0.1 * torch.randn(D, generator=gen)).to(torch.bfloat16) if affine else None
        bi = (0.1 * torch.randn(D, generator=gen)).to(torch.bfloat16) if affine else None
        assert testing.geometry(op, x, sc, sh, weight=w, bias=bi).scale.tag == layout
        half = torch.bfloat16 if affine else None
        v = variant(D, norm, torch.bfloat16, scale=mod_dt, shift=mod_dt, weight=half, bias=half)
        got = F.model(v, x.reshape(B * S, D), sc_rows, sh_rows, w, bi, eps=1e-6).reshape(B, S, D)
        ref = norm_spec(
            norm,
            x.double(),
            sc.double(),
            sh.double(),
            None if w is None else w.double(),
            None if bi is None else bi.double(),
            eps=1e-6,
            out_dtype=torch.float64,
        )
        atol, rtol = flydsl_tolerance(op, torch.bfloat16)
        within(got, ref, atol, rtol)


@pytest.mark.parametrize("D", ACCEPTANCE_WIDTHS)
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_model_plain_norms(norm, D):
    """layer_norm / rms_norm (plain, affine, and rms_norm's fp32 weight whose result is fp32)."""
    gen = torch.Generator().manual_seed(D + 1)
    x = (torch.randn(B * S, D, generator=gen) * 3 - 1).to(torch.bfloat16)
    op = "norm.layer_norm" if norm == "layer" else "norm.rms_norm"
    cases = [
        (None, None, torch.bfloat16),
        (
            (1 + 0.2 * torch.randn(D, generator=gen)).to(torch.bfloat16),
            (0.1 * torch.randn(D, generator=gen)).to(torch.bfloat16) if norm == "layer" else None,
            torch.bfloat16,
        ),
    ]
    if norm == "rms":
        cases.append((1 + 0.2 * torch.randn(D, generator=gen), None, torch.float32))
    for w, bi, out in cases:
        v = variant(
            D,
            norm,
            torch.bfloat16,
            weight=None if w is None else w.dtype,
            bias=None if bi is None else bi.dtype,
            out=out,
        )
        got = F.model(v, x, weight=w, bias=bi, eps=1e-5)
        assert got.dtype == out
        ref = norm_spec(
            norm,
            x.double(),
            weight=None if w is None else w.double(),
            bias=None if bi is None else bi.double(),
            eps=1e-5,
            out_dtype=torch.float64,
        )
        atol, rtol = flydsl_tolerance(op, out)
        within(got, ref, atol, rtol)


@pytest.mark.parametrize("D", ACCEPTANCE_WIDTHS)
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_model_gated_residual(norm, D):
    """gated_residual_norm_modulate: the new residual bit-exact to eager, out within tolerance."""
    gen = torch.Generator().manual_seed(D + 2)
    res = torch.randn(B, S, D, generator=gen).to(torch.bfloat16)
    upd = torch.randn(B, S, D, generator=gen).to(torch.bfloat16)
    gate, gate_rows = modulation("per-sample", D, torch.bfloat16, gen)
    sc, sc_rows = modulation("per-frame", D, torch.bfloat16, gen)
    sh, sh_rows = modulation("per-token", D, torch.bfloat16, gen)
    v = variant(
        D,
        norm,
        torch.bfloat16,
        scale=torch.bfloat16,
        shift=torch.bfloat16,
        res=True,
        update=torch.bfloat16,
        gate=torch.bfloat16,
        t1="bf16",
        sum="bf16",
    )
    out, new = F.model(v, res.reshape(B * S, D), sc_rows, sh_rows, update=upd.reshape(B * S, D), gate=gate_rows)
    eager_new = (res + gate[:, None, :] * upd).to(torch.bfloat16)
    testing.assert_exact(new.reshape(B, S, D), eager_new)
    ref = norm_spec(norm, eager_new.double(), sc.double(), sh.double(), eps=1e-6, out_dtype=torch.float64)
    atol, rtol = flydsl_tolerance("norm.gated_residual_norm_modulate", torch.bfloat16)
    within(out.reshape(B, S, D), ref, atol, rtol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_model_other_streams(dtype):
    """fp16 and fp32 rows (4 fp32 values per 128-bit vector) at FLUX's width."""
    D = 3072
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(B * S, D, generator=gen).to(dtype)
    sc, sc_rows = modulation("per-token", D, dtype, gen)
    sh, sh_rows = modulation("per-channel", D, torch.float32, gen)
    v = variant(D, "layer", dtype, scale=dtype, shift=torch.float32)
    got = F.model(v, x, sc_rows, sh_rows)
    ref = norm_spec("layer", x.reshape(B, S, D).double(), sc.double(), sh.double(), out_dtype=torch.float64)
    atol, rtol = flydsl_tolerance("norm.ln_modulate", dtype)
    within(got.reshape(B, S, D), ref, atol, rtol)


def test_model_order_is_the_kernels():
    """The model sums in the kernel's order, not torch's: on rows whose sums depend on the
    order, it can differ from a plain fp32 sum, and it equals an explicit re-statement of the
    order (per thread: vector left to right, then tiles; butterfly per wave; waves in order)."""
    D = 5120
    cfg = F.config_for(D, 2, 64)
    x = testing.log_uniform(4, D, dtype=torch.bfloat16, generator=torch.Generator().manual_seed(3)).float()
    v, _ = F._tiles(x, cfg)
    got = F._workgroup_sum(F._thread_sums(v, cfg), cfg)
    for r in range(x.shape[0]):
        lanes = []
        for i in range(cfg.threads):
            acc = torch.tensor(0.0)
            for t in range(cfg.tiles):
                j = t * cfg.threads + i
                seg = x[r, j * cfg.vec : (j + 1) * cfg.vec] if j < D // cfg.vec else torch.zeros(cfg.vec)
                s = seg[0].clone()
                for e in seg[1:]:
                    s = s + e
                acc = acc + s
            lanes.append(acc)
        waves = []
        for w in range(cfg.waves):
            vals = lanes[w * cfg.wave : (w + 1) * cfg.wave]
            off = cfg.wave // 2
            while off:
                vals = [vals[k] + vals[k ^ off] for k in range(cfg.wave)]
                off //= 2
            waves.append(vals[0])
        total = waves[0]
        for w in waves[1:]:
            total = total + w
        assert torch.equal(got[r], total)


@pytest.mark.parametrize("D", ACCEPTANCE_WIDTHS + F.EXTREMES)
@pytest.mark.parametrize("elem_bytes", [2, 4])
@pytest.mark.parametrize("wave", [64, 32])
def test_launch_rule(D, elem_bytes, wave):
    cfg = F.config_for(D, elem_bytes, wave)
    assert cfg.vec * elem_bytes == 16
    assert cfg.threads % wave == 0 and cfg.threads <= F.MAX_THREADS
    assert cfg.tiles * cfg.vec <= F.MAX_VALUES
    slots, nv = cfg.threads * cfg.tiles, D // cfg.vec
    assert slots >= nv and slots - nv < max(cfg.threads, wave * cfg.tiles)


def test_launch_rule_refuses():
    with pytest.raises(ValueError, match="divisible by 8"):
        F.config_for(3070, 2, 64)
    with pytest.raises(ValueError, match="registers"):
        F.config_for(2 * 65536, 2, 64)
    with pytest.raises(ValueError, match="unknown FlyDSL target"):
        F.Variant("gfx90a", 3072, "layer", "bf16")


def _hip_desc(D: int) -> InputDesc:
    return InputDesc(platform="hip", arch="gfx942", dtypes=("bfloat16",), last_dim=D, layouts=("per-sample",))


@pytest.mark.parametrize(
    "op",
    ["norm.ln_modulate", "norm.rms_modulate", "norm.layer_norm", "norm.rms_norm", "norm.gated_residual_norm_modulate"],
)
def test_capabilities_refuse(op):
    spec = next(s for s in REGISTRY.specs(op) if s.backend == "flydsl")
    assert "flydsl" in spec.capabilities.requires
    reasons = spec.reasons(_hip_desc(3070))
    assert any("not a multiple of 8" in r for r in reasons), reasons
    assert any("exceeds" in r for r in spec.reasons(_hip_desc(65544)))
    gfx90a = InputDesc(platform="hip", arch="gfx90a", dtypes=("bfloat16",), last_dim=3072)
    assert any("gfx90a is not one of" in r for r in spec.reasons(gfx90a))
    assert any("tensors on cuda" in r for r in spec.reasons(InputDesc(platform="cuda", arch=90, last_dim=3072)))
    # below Triton until it has run on AMD hardware; compiled for every FlyDSL target, executed on none
    triton = next(s for s in REGISTRY.specs(op) if s.backend == "triton")
    assert spec.priority < triton.priority
    assert spec.compiled_for == F.ARCHS and not spec.executed_on


def test_cpu_tensors_refused_by_selection():
    from sgl_diffusion_norm import ln_modulate

    x = torch.randn(2, 4, 64, dtype=torch.bfloat16)
    with pytest.raises(UnsupportedInputError, match="flydsl"):
        ln_modulate(x, torch.randn(2, 64), torch.randn(2, 64), exact=False, backend="flydsl")


def test_static_problems():
    x = torch.empty(4, 8, 3076, dtype=torch.bfloat16)[..., :3072]  # rows 6152 bytes apart: not 16-aligned
    probs = K.static_problems({"x": x, "scale": None}, (32, 3076))
    assert any("x: row strides" in p for p in probs)
    assert not K.static_problems({"x": torch.empty(4, 8, 3072, dtype=torch.bfloat16)}, (32, 3072))
    assert any("2^31" in p for p in K.static_problems({}, (2**31,)))


def test_check_pointers():
    base = torch.empty(2 * 3072 + 8, dtype=torch.bfloat16)
    ok = base[:6144].view(2, 3072)
    K.check_pointers({"x": ok})
    shifted = base[1:6145].view(2, 3072)  # 2 bytes past the boundary
    with pytest.raises(UnsupportedInputError, match="x starts 2 bytes past a 16-byte boundary"):
        K.check_pointers({"x": shifted})


@pytest.mark.parametrize("var", ["ARCH", "COMPILE_ONLY"])
def test_leaky_flydsl_variables_refused(monkeypatch, var):
    monkeypatch.setenv(var, "x86_64" if var == "ARCH" else "1")
    with pytest.raises(UnsupportedInputError, match=f"sets {var}="):
        K._clean_env()


def test_importing_the_family_imports_no_flydsl():
    code = (
        "import sys, sgl_diffusion, sgl_diffusion_norm\n"
        "from sgl_diffusion_norm import _row_norm_flydsl, ln_modulate\n"
        "sgl_diffusion.ln_modulate\n"
        "bad = sorted(m for m in sys.modules if m == 'flydsl' or m.startswith('flydsl.'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})


def _emulated_launch(self, tensors, eps, scale_offset):
    """The kernel's addressing in torch: row ``(b, s)`` reads x at ``b*x_sb + s*x_ss``, a modulation
    vector at ``b*sb + (s // L)*ss`` of its flat view, weight and bias at 0, and writes the result
    (and the new residual) at ``row * D``; the row's arithmetic is the numerical model."""
    v, D = self.variant, self.variant.D
    S, x_sb, x_ss, sc_sb, sc_ss, sc_L, sh_sb, sh_ss, sh_L, u_sb, u_ss, g_sb, g_ss, g_L = self.ints
    X, SC, SH, W, BI, Y, U, G, NR = (K._flat(t) for t in tensors)
    rows = torch.arange(self.rows)
    b, s = rows // S, rows % S

    def gather(flat, off):
        return flat[off[:, None] + torch.arange(D)]

    def opt(dt, flat, off):
        return None if dt is None else gather(flat, off)

    zero = torch.zeros_like(rows)
    res = F.model(v, gather(X, b * x_sb + s * x_ss), opt(v.scale, SC, b * sc_sb + (s // sc_L) * sc_ss),
                  opt(v.shift, SH, b * sh_sb + (s // sh_L) * sh_ss), opt(v.weight, W, zero)[0:1] if v.weight else None,
                  opt(v.bias, BI, zero)[0:1] if v.bias else None,
                  update=opt(v.update, U, b * u_sb + s * u_ss), gate=opt(v.gate, G, b * g_sb + (s // g_L) * g_ss),
                  eps=eps, scale_offset=scale_offset)  # fmt: skip
    out, new = res if v.res else (res, None)
    Y[: self.rows * D] = out.flatten()
    if new is not None:
        NR[: self.rows * D] = new.flatten()


@pytest.fixture
def emulated(monkeypatch):
    """The flydsl runners on CPU tensors, their launch emulated (the host side is what runs for real:
    geometry, variant, runtime integers, the order of the tensors)."""
    monkeypatch.setattr(K, "_arch", lambda t: "gfx942")
    monkeypatch.setattr(K._Runner, "__call__", _emulated_launch)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_runner_addressing(emulated, layout):
    D = 2432
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(B, S, D, generator=gen).to(torch.bfloat16)
    sc, _ = modulation(layout, D, torch.bfloat16, gen)
    other = LAYOUTS[(LAYOUTS.index(layout) + 1) % len(LAYOUTS)]  # scale and shift laid out differently
    sh, _ = modulation(other, D, torch.float32, gen)
    geom = testing.geometry("norm.ln_modulate", x, sc, sh)
    run = testing.backend_prepare("norm.ln_modulate", "flydsl")(geom, x, sc, sh, None, None)
    got = run(x, sc, sh, None, None, 1e-6, 1.0)
    ref = norm_spec("layer", x.double(), sc.double(), sh.double(), eps=1e-6, out_dtype=torch.float64)
    within(got, ref, *flydsl_tolerance("norm.ln_modulate", torch.bfloat16))


def test_runner_addressing_plain_and_gated(emulated):
    D = 3072
    gen = torch.Generator().manual_seed(12)
    x = torch.randn(B * S, D, generator=gen).to(torch.bfloat16)
    w = 1 + 0.2 * torch.randn(D, generator=gen)  # fp32 weight: eager's rms_norm result is fp32
    geom = testing.geometry("norm.rms_norm", x, weight=w)
    out = testing.backend_prepare("norm.rms_norm", "flydsl")(geom, x, w, None)(x, w, None, 1e-5, 0.0)
    assert out.dtype == torch.float32
    ref = norm_spec("rms", x.double(), weight=w.double(), eps=1e-5, out_dtype=torch.float64)
    within(out, ref, *flydsl_tolerance("norm.rms_norm", torch.float32))

    res = torch.randn(B, S, 2 * D, generator=gen).to(torch.bfloat16)[..., :D]  # strided rows
    upd = torch.randn(B, S, D, generator=gen).to(torch.bfloat16)
    gate, _ = modulation("per-token", D, torch.bfloat16, gen)
    sc, _ = modulation("per-frame", D, torch.bfloat16, gen)
    op = "norm.gated_residual_norm_modulate"
    geom = testing.geometry(op, res, upd, gate, sc, None, norm="rms")
    run = testing.backend_prepare(op, "flydsl")(geom, res, upd, gate, sc, None, None, None)
    out, new = run(res, upd, gate, sc, None, None, None, "rms", 1e-6, 1.0)
    testing.assert_exact(new, (res + gate * upd).to(torch.bfloat16))
    ref = norm_spec("rms", new.double(), sc.double(), eps=1e-6, out_dtype=torch.float64)
    within(out, ref, *flydsl_tolerance(op, torch.bfloat16))


def test_isa_checks_name_each_problem():
    """The compile lane's verdict on a build (``check_isa`` over the fields read off its ISA): clean
    for a build as the rule expects it, and each defect named."""
    v = F.Variant("gfx942", 5120, "layer", "bf16", scale="bf16", shift="bf16", res=True, update="bf16",
                  gate="bf16", t1="bf16", sum="bf16")  # fmt: skip
    tiles = v.cfg.tiles
    good = {"vgpr": 60, "agpr": 0, "scratch": 0, "spills": 0, "wave": 64,
            "ops": {"buffer_load_dwordx4": 2 * tiles + 3 * tiles, "buffer_store_dwordx4": 2 * tiles},
            "contracted": ["v_fma_f32 v1, -v2, v3, v4"] * F.SCALAR_FMAS}  # fmt: skip
    assert F.check_isa(v, good) == []
    cases = {
        "uses scratch": {"scratch": 16},
        "built for wave32": {"wave": 32},
        "exceed the 128": {"vgpr": 120, "agpr": 16},
        "not 128-bit": {"ops": {"buffer_load_dwordx2": 40, "buffer_store_dwordx4": 2 * tiles}},
        "stores are not 128-bit": {"ops": {"buffer_load_dwordx4": 5 * tiles, "buffer_store_dwordx2": 4 * tiles}},
        "outside the row's buffer": {"ops": {**good["ops"], "global_load_dwordx4": 1}},
        "contracted FMAs": {"contracted": ["v_fma_f32 v1, v2, v3, v4"] * (F.SCALAR_FMAS + 1)},
    }
    for words, change in cases.items():
        problems = F.check_isa(v, {**good, **change})
        assert any(words in p for p in problems), (words, problems)
