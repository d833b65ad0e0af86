"""layer_norm, rms_norm, rms_modulate and gated_residual_norm_modulate on every runnable backend.

The close (``triton``) kernels are checked twice: against an fp64 evaluation of the same formula
(``row_norm_oracle.norm_spec`` on fp64 inputs) with a bound of one rounding plus fp32 noise, and
against the eager chain (the ``torch`` backend) with the tolerance the registry declares.

Shape grid (CPU lane, Triton interpreter: keep rows few):
  D=1      degenerate row (variance 0)
  D=7, 1000, 2240, 2432   odd / non-power-of-two widths (masked tail of the register block)
  D=9000   wider than the 8192 register block: the chunked two-pass path with a masked tail
"""

from __future__ import annotations

import pytest
import torch
from row_norm_oracle import norm_spec

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing

DTYPES = [torch.bfloat16, torch.float16, torch.float32]
WIDTHS = [1, 7, 1000, 2240, 2432, 9000]
# One rounding to the storage dtype plus fp32 statistics noise. One ulp (bf16: at most 2^-7 of
# the value, fp16 2^-10), not half: the Triton interpreter truncates fp32 -> bf16 casts
# (docs/design.md, "two traps"); on the GPU the final rounding is to nearest. atol covers results
# that cancel to ~0 (|terms| <~ 30, fp32 error ~ 30 * 2^-23).
TIGHT = {torch.bfloat16: (1e-5, 2**-7), torch.float16: (1e-5, 2**-10), torch.float32: (1e-5, 4e-6)}
OPS = {
    "layer_norm": (norm.layer_norm, "layer", False),
    "rms_norm": (norm.rms_norm, "rms", False),
    "ln_modulate": (norm.ln_modulate, "layer", True),
    "rms_modulate": (norm.rms_modulate, "rms", True),
}


def _declared(op: str, backend: str, dtype: torch.dtype) -> tuple[float, float]:
    return next(s for s in REGISTRY.specs(f"norm.{op}") if s.backend == backend).contract.tolerance(dtype)


def _call(op, backend, x, scale=None, shift=None, weight=None, bias=None, **kw):
    fn, _, modulated = OPS[op]
    if modulated:
        extra = {} if op == "rms_modulate" else {"bias": bias}
        return fn(x, scale, shift, weight=weight, backend=backend, **extra, **kw)
    kw.pop("scale_offset", None)
    return fn(x, weight, bias, backend=backend, **kw)


def check(op, backend, x, scale=None, shift=None, weight=None, bias=None, **kw):
    """Run one op and check it against the eager chain (declared contract) and, when close, fp64."""
    _, kind, modulated = OPS[op]
    if op == "rms_modulate":
        bias = None
    if not modulated:
        scale = shift = None
    out = _call(op, backend, x, scale, shift, weight, bias, **kw)
    ref = _call(op, "torch", x, scale, shift, weight, bias, **kw)
    assert out.shape == x.shape and out.dtype == ref.dtype and out.is_contiguous()
    spec = next(s for s in REGISTRY.specs(f"norm.{op}") if s.backend == backend)
    if spec.contract.kind == "exact":
        testing.assert_exact(out, ref)
        return out
    atol, rtol = spec.contract.tolerance(ref.dtype)
    testing.assert_close(out, ref, atol=atol, rtol=rtol)
    d = lambda t: None if t is None else t.double()  # noqa: E731
    exact64 = norm_spec(kind, x.double(), d(scale), d(shift), d(weight), d(bias), kw.get("eps", 1e-6),
                        kw.get("scale_offset", 1.0))
    atol, rtol = TIGHT[out.dtype]
    testing.assert_close(out.float(), exact64.float(), atol=atol, rtol=rtol)  # fp64 -> fp32: 2^-24, far below
    return out


# every dtype at one odd and one mid width; bf16 (the production dtype) at every width
GRID = [(D, dt) for D in (7, 1000) for dt in DTYPES] + [(D, torch.bfloat16) for D in WIDTHS if D not in (7, 1000)]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("D,dtype", GRID)
def test_against_eager_and_fp64(backend, device, op, D, dtype):
    torch.manual_seed(D)
    B, S = 2, 3
    x = torch.randn(B, S, D, device=device).to(dtype)
    mod = (torch.randn(B, 6, D, device=device) * 0.5).to(dtype)  # adaLN chunks: [B, 6, D] -> [B, 1, D] views
    w = (1 + 0.5 * torch.randn(D, device=device)).to(dtype)
    b = (0.5 * torch.randn(D, device=device)).to(dtype)
    check(op, backend, x, mod[:, 1:2], mod[:, 0:1], w, b)
    check(op, backend, x, mod[:, 1:2], None, None, None, eps=1e-5, scale_offset=0.0)


@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_size_one_dims_and_2d(backend, device, op):
    for shape in [(1, 1, 64), (3, 1, 64), (1, 5, 64), (1, 64), (4, 64), (2, 3, 1)]:
        x = torch.randn(shape, device=device).to(torch.bfloat16)
        check(op, backend, x, weight=torch.randn(shape[-1], device=device).to(torch.bfloat16))


def test_non_contiguous_rows(backend, device):
    D = 130
    big = torch.randn(3, 10, 2 * D + 5, device=device).to(torch.bfloat16)
    x = big[:, 1:8, 3:3 + D]
    assert not x.is_contiguous()
    for op in OPS:
        check(op, backend, x, torch.randn(3, 1, D, device=device).to(torch.bfloat16), None,
              torch.randn(D, device=device).to(torch.bfloat16))
    x2 = torch.randn(9, 2 * D, device=device).to(torch.float16)[:, :D]
    check("rms_modulate", backend, x2, torch.randn(9, D, device=device).to(torch.float16))


@pytest.mark.parametrize(
    "layout", ["channel", "sample2d", "sample3d", "sample-b1", "token-strided", "frame", "frame-b1"]
)
def test_rms_modulate_layouts(backend, device, layout):
    torch.manual_seed(1)
    B, S, D = 2, 6, 96
    dt = torch.bfloat16
    x = torch.randn(B, S, D, device=device).to(dt)
    r = lambda *s: torch.randn(*s, device=device).to(dt)  # noqa: E731
    sc, sh = {
        "channel": lambda: (r(D), r(D)),
        "sample2d": lambda: (r(B, D), r(B, D)),
        "sample3d": lambda: (r(B, 1, D), r(B, 1, D)),
        "sample-b1": lambda: (r(1, 1, D), r(1, D)),
        "frame": lambda: (r(B, 3, 1, D), r(B, 3, 1, D)),
        "frame-b1": lambda: (r(1, 2, 1, D), r(B, 2, 1, D)),
        "token-strided": lambda: (lambda p: (p[..., D:2 * D], p[..., 4 * D:5 * D]))(r(B, S, 6 * D)),
    }[layout]()
    check("rms_modulate", backend, x, sc, sh, torch.randn(D, device=device).to(dt))
    check("rms_modulate", backend, x, sc, None, scale_offset=0.0)


def test_per_frame_equals_expanded_per_token(backend, device):
    B, Fr, L, D = 2, 3, 4, 64
    x = torch.randn(B, Fr * L, D, device=device).to(torch.bfloat16)
    sc = torch.randn(B, Fr, 1, D, device=device).to(torch.bfloat16)
    sh = torch.randn(B, Fr, 1, D, device=device).to(torch.bfloat16)
    per_token = lambda t: t.expand(B, Fr, L, D).reshape(B, Fr * L, D).contiguous()  # noqa: E731
    a = norm.rms_modulate(x, sc, sh, backend=backend)
    b = norm.rms_modulate(x, per_token(sc), per_token(sh), backend=backend)
    testing.assert_exact(a, b)


def test_rms_norm_result_dtype_follows_diffusers(backend, device):
    """diffusers RMSNorm: fp32 weight on bf16 x gives fp32; a bf16 weight gives bf16; none gives x's dtype."""
    x = torch.randn(2, 3, 64, device=device).to(torch.bfloat16)
    assert check("rms_norm", backend, x, weight=torch.randn(64, device=device)).dtype == torch.float32
    w16 = torch.randn(64, device=device).to(torch.bfloat16)
    assert check("rms_norm", backend, x, weight=w16).dtype == torch.bfloat16
    assert check("rms_norm", backend, x).dtype == torch.bfloat16
    assert check("layer_norm", backend, x, weight=torch.randn(64, device=device)).dtype == torch.bfloat16


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64), (0, 3, 64)])
def test_empty_input(backend, device, op, shape):
    x = torch.randn(shape, device=device).to(torch.bfloat16)
    out = _call(op, backend, x, torch.randn(64, device=device))
    assert out.shape == x.shape and out.numel() == 0


def _raises(fragment, fn, *args, can_use=None, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        fn(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    if can_use is not None:
        assert not can_use(*args, **kw)


def test_unsupported_inputs(device):
    x = torch.randn(2, 4, 32, device=device)
    _raises("dtype torch.int32", norm.layer_norm, x.to(torch.int32), can_use=norm.can_use_layer_norm)
    _raises("weight must be a contiguous [D]", norm.rms_norm, x, torch.randn(31, device=device),
            can_use=norm.can_use_rms_norm)
    _raises("bias must be a contiguous [D]", norm.layer_norm, x, None, torch.randn(64, device=device)[::2])
    _raises("last dim must be contiguous", norm.rms_norm, torch.randn(2, 4, 64, device=device)[..., ::2])
    _raises("scale is required", norm.rms_modulate, x, None, can_use=norm.can_use_rms_modulate)
    _raises("does not broadcast", norm.rms_modulate, x, torch.randn(3, 1, 32, device=device))
    _raises("S divisible by F", norm.rms_modulate, x, torch.randn(2, 3, 1, 32, device=device))
    _raises("x must be [B, S, D] or [N, D]", norm.layer_norm, torch.randn(32, device=device))
    _raises("unknown backend", norm.rms_norm, x, backend="nope")
    sc = torch.randn(2, 1, 32, device=device)
    g = norm.gated_residual_norm_modulate
    _raises("must have x's shape", g, x, torch.randn(2, 4, 31, device=device), None, sc,
            can_use=norm.can_use_gated_residual_norm_modulate)
    _raises("norm must be one of", g, x, x, None, sc, norm="group")
    _raises("gate of shape", g, x, x, torch.randn(3, 1, 32, device=device), sc)
    _raises("scale is required", g, x, x, None, None)


def test_exact_request_is_never_served_by_a_close_backend(device):
    x = torch.randn(2, 4, 32, device=device)
    spec = next(s for s in REGISTRY.specs("norm.rms_norm") if s.backend == "triton")
    assert spec.contract.kind == "close"
    _raises("exact=True was requested", norm.rms_norm, x, backend="triton", exact=True)
    assert not norm.can_use_rms_norm(x, backend="triton", exact=True)
    testing.assert_exact(norm.rms_norm(x, exact=True), norm.rms_norm_reference(x))


# --- gated_residual_norm_modulate -------------------------------------------------------------------


def _gated_check(backend, residual, update, gate, scale, shift=None, **kw):
    out, new = norm.gated_residual_norm_modulate(residual, update, gate, scale, shift, backend=backend, **kw)
    ref_out, ref_new = norm.gated_residual_norm_modulate_reference(residual, update, gate, scale, shift, **kw)
    testing.assert_exact(new, ref_new)  # the residual stream is bit-exact on every backend
    assert out.dtype == residual.dtype and out.shape == residual.shape and out.is_contiguous()
    spec = next(s for s in REGISTRY.specs("norm.gated_residual_norm_modulate") if s.backend == backend)
    atol, rtol = spec.contract.tolerance(out.dtype)
    if spec.contract.kind == "exact":
        testing.assert_exact(out, ref_out)
    else:
        testing.assert_close(out, ref_out, atol=atol, rtol=rtol)
        # the close output is the close norm of the (bit-exact) new residual
        d = lambda t: None if t is None else t.double()  # noqa: E731
        spec64 = norm_spec(kw.get("norm", "layer"), new.double(), d(scale), d(shift), d(kw.get("weight")),
                           d(kw.get("bias")), kw.get("eps", 1e-6), kw.get("scale_offset", 1.0))
        atol, rtol = TIGHT[out.dtype]
        testing.assert_close(out.float(), spec64.float(), atol=atol, rtol=rtol)
    return out, new


@pytest.mark.parametrize("nrm", ["layer", "rms"])
@pytest.mark.parametrize("D,dtype", [(7, dt) for dt in DTYPES] + [(D, torch.bfloat16) for D in (1000, 2432, 9000)])
def test_gated_residual_norm_modulate(gated_backend, device, nrm, D, dtype):
    g = torch.Generator().manual_seed(D)
    lu = lambda *s, dt=dtype: testing.log_uniform(*s, dtype=dt, device=device, generator=g)  # noqa: E731
    B, S = 2, 3
    residual, update = lu(B, S, D), lu(B, S, D)
    mod = (torch.randn(B, 6, D, generator=g) * 0.5).to(dtype).to(device)
    kw = {"norm": nrm, "weight": (1 + 0.1 * torch.randn(D, generator=g)).to(dtype).to(device)}
    if nrm == "layer":
        kw["bias"] = (0.1 * torch.randn(D, generator=g)).to(dtype).to(device)
    _gated_check(gated_backend, residual, update, mod[:, 2:3], mod[:, 1:2], mod[:, 0:1], **kw)


@pytest.mark.parametrize("gate_kind", ["none", "fp32-sample", "frame", "token-strided", "channel"])
def test_gated_layouts_and_promotion(gated_backend, device, gate_kind):
    """An fp32 gate on a bf16 stream: gate * update is fp32, the sum fp32, then cast to bf16 (eager)."""
    g = torch.Generator().manual_seed(3)
    B, S, D = 2, 6, 96
    lu = lambda *s, dt=torch.bfloat16: testing.log_uniform(*s, dtype=dt, device=device, generator=g)  # noqa: E731
    residual, update = lu(B, S, D), lu(B, S, D)
    gate = {
        "none": lambda: None,
        "fp32-sample": lambda: lu(B, 1, D, dt=torch.float32),
        "frame": lambda: lu(B, 3, 1, D),
        "token-strided": lambda: lu(B, S, 3 * D)[..., D:2 * D],
        "channel": lambda: lu(D),
    }[gate_kind]()
    sc = (torch.randn(B, 3, 1, D, generator=g) * 0.3).to(torch.bfloat16).to(device)
    _gated_check(gated_backend, residual, update, gate, sc, None, norm="rms")
    r2 = lu(B, S, 2 * D)[..., :D]  # strided residual rows
    _gated_check(gated_backend, r2, update, gate, sc[:, :1, 0], sc[:, 0, 0], norm="layer", scale_offset=0.0)


def test_gated_empty_and_2d(gated_backend, device):
    for shape in [(0, 32), (2, 0, 32)]:
        r = torch.randn(shape, device=device).to(torch.bfloat16)
        out, new = norm.gated_residual_norm_modulate(r, r, None, torch.randn(32, device=device), backend=gated_backend)
        assert out.shape == new.shape == r.shape
    r = torch.randn(5, 32, device=device).to(torch.bfloat16)
    _gated_check(gated_backend, r, torch.randn(5, 32, device=device).to(torch.bfloat16),
                 torch.randn(5, 32, device=device),
                 torch.randn(1, 32, device=device).to(torch.bfloat16), torch.randn(32, device=device), norm="rms")


# --- custom ops and torch.compile ---------------------------------------------------------------------


def test_opcheck(backend, device):
    x = torch.randn(2, 3, 40, device=device).to(torch.bfloat16)
    sc = torch.randn(2, 1, 40, device=device).to(torch.bfloat16)
    w = torch.randn(40, device=device)
    ops = torch.ops.sgl_diffusion
    torch.library.opcheck(ops.layer_norm.default, (x, None, None, w.to(x.dtype), None, 1e-6, 1.0, backend))
    torch.library.opcheck(ops.rms_norm.default, (x, None, None, w, None, 1e-6, 1.0, backend))
    torch.library.opcheck(ops.rms_modulate.default, (x, sc, sc, None, None, 1e-5, 0.0, backend))
    torch.library.opcheck(ops.gated_residual_norm_modulate.default,
                          (x, x, sc, sc, None, w, None, "rms", 1e-6, 1.0, backend))


def test_compile_fullgraph_no_graph_break(backend, device):
    import torch._dynamo

    def block(x, r, mod, w):
        shift, scale, gate = mod.chunk(3, dim=1)
        h = norm.rms_modulate(x, scale, shift, weight=w, backend=backend)
        out, new = norm.gated_residual_norm_modulate(r, h, gate, scale, shift, backend=backend)
        return norm.layer_norm(out, backend=backend) + norm.rms_norm(new, w, backend=backend)

    torch._dynamo.reset()
    x = torch.randn(2, 5, 48, device=device).to(torch.bfloat16)
    r = torch.randn(2, 5, 48, device=device).to(torch.bfloat16)
    mod = torch.randn(2, 3, 48, device=device).to(torch.bfloat16)
    w = torch.randn(48, device=device).to(torch.bfloat16)
    expl = torch._dynamo.explain(block)(x, r, mod, w)
    assert expl.graph_break_count == 0, expl.break_reasons
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(x, r, mod, w), block(x, r, mod, w))


def test_layer_norm_keeps_its_exact_kernel_at_every_width():
    """layer_norm's backend=None under the exact contract on CUDA (descriptions of sm_90 inputs, no GPU
    needed) is the exact kernel at every width and row count, partial last chunks included (no chooser
    serves eager in its place), and the close kernel with exact=False."""
    import dataclasses

    from sgl_diffusion_core import eligible, select_impl
    from sgl_diffusion_norm.layer_norm import LAYER_NORM as op
    from sgl_diffusion_norm.ln_modulate import LN_MODULATE

    assert op.chooser is None and LN_MODULATE.chooser is None
    for D, rows in ((2240, 16), (1152, 16), (2432, 8191), (1152, 32760), (3840, 16), (1536, 16)):
        x = torch.empty(1, rows, D, dtype=torch.bfloat16)
        desc = dataclasses.replace(op.describe(x), platform="cuda", arch=90)
        assert eligible(op.id, desc)[0].backend == "triton_exact"
        assert select_impl(op.id, desc).backend == "triton_exact", D
        assert select_impl(op.id, desc, exact=False).backend == "triton", D


@pytest.mark.parametrize("kernel", ["triton", "triton_exact"])
def test_more_rows_than_an_int32_index_are_refused(kernel):
    """The row-norm kernels divide their row index in int32 (one program per row on the launch grid): a
    geometry of 2**31 rows is refused by name before any build or launch (the geometry of a small call with
    its row count replaced stands in for such a tensor)."""
    import dataclasses

    x = torch.randn(1, 4, 256).to(torch.bfloat16)
    scale = torch.randn(1, 256).to(torch.bfloat16)
    geom = testing.geometry("norm.ln_modulate", x, scale, None)
    big = dataclasses.replace(geom, x=dataclasses.replace(geom.x, S=2**31))
    K = testing.backend_module("norm.ln_modulate", kernel)
    with pytest.raises(UnsupportedInputError, match="rows exceed"):
        (K.prepare_kernel if kernel == "triton_exact" else K.prepare)(big, x, scale, None, None, None)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("D", [1152, 2240])
def test_close_kernel_at_the_cuda_width_rule(device, op, D):
    """The close kernel at the launches its CUDA width rule gives bf16 rows (a row held as a power of two
    and a smaller tile below 16384 rows: 1152 = 1024 + 128, 2240 = 2048 + 256 with a partial tile; chunks
    from 16384 rows), pinned on this device, within the declared tolerance of the eager chain."""
    if "triton" not in testing.runnable_backends(f"norm.{op}", device):
        pytest.skip(f"no Triton backend of {op} runs on {device}")
    kernel = testing.backend_module(f"norm.{op}", "triton")
    _, _, modulated = OPS[op]
    torch.manual_seed(D)
    x = torch.randn(2, 3, D, device=device).to(torch.bfloat16)
    mod = (torch.randn(2, 6, D, device=device) * 0.5).to(torch.bfloat16)
    w = (1 + 0.5 * torch.randn(D, device=device)).to(torch.bfloat16)
    b = None if op == "rms_modulate" else (0.5 * torch.randn(D, device=device)).to(torch.bfloat16)
    scale, shift = (mod[:, 1:2], mod[:, 0:1]) if modulated else (None, None)
    args = (x, scale, shift) if modulated else (x, w, b)
    kw = {"weight": w, **({} if op == "rms_modulate" else {"bias": b})} if modulated else {}
    geom = testing.geometry(f"norm.{op}", *args, **kw)
    ref = _call(op, "torch", x, scale, shift, w, b)
    atol, rtol = _declared(op, "triton", torch.bfloat16)
    for rows in (4096, 32760):
        cfg = kernel.width_config(D, 2, "cuda", n_rows=rows)
        assert bool(cfg.tail) == (rows == 4096), cfg
        if modulated:
            out = kernel.prepare(geom, x, scale, shift, w, b, config=cfg)(x, scale, shift, w, b, 1e-6, 1.0)
        else:
            out = kernel.prepare_norm(geom, x, w, b, config=cfg)(x, w, b, 1e-6, 1.0)
        testing.assert_close(out, ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("op", list(OPS))
def test_close_kernel_width_read_at_run_time(device, op, monkeypatch):
    """From 16384 rows a row of full chunks reads its width at run time (``WIDTH`` 0), other rows build it
    in; both builds give the same values (3072 columns as 3 full 1024-wide chunks, 2240 with a partial one)."""
    if "triton" not in testing.runnable_backends(f"norm.{op}", device):
        pytest.skip(f"no Triton backend of {op} runs on {device}")
    kernel = testing.backend_module(f"norm.{op}", "triton")
    full, partial = (kernel.width_config(D, 2, "cuda", n_rows=32760) for D in (3072, 2240))
    assert (full.block, full.chunks, partial.block, partial.chunks) == (1024, 3, 1024, 3)
    assert kernel.width_constant(3072, full, 32760) == 0
    assert kernel.width_constant(2240, partial, 32760) == 2240
    assert kernel.width_constant(3072, full, 4096) == 3072
    _, _, modulated = OPS[op]
    torch.manual_seed(3)
    x = torch.randn(2, 3, 3072, device=device).to(torch.bfloat16)
    scale, shift = ((torch.randn(2, 1, 3072, device=device) * 0.5).to(torch.bfloat16) for _ in range(2))
    w = (1 + 0.5 * torch.randn(3072, device=device)).to(torch.bfloat16)
    b = None if op == "rms_modulate" else (0.5 * torch.randn(3072, device=device)).to(torch.bfloat16)
    if not modulated:
        scale = shift = None
    args = (x, scale, shift) if modulated else (x, w, b)
    kw = {"weight": w, **({} if op == "rms_modulate" else {"bias": b})} if modulated else {}
    geom = testing.geometry(f"norm.{op}", *args, **kw)

    def run():
        if modulated:
            return kernel.prepare(geom, x, scale, shift, w, b, config=full)(x, scale, shift, w, b, 1e-6, 1.0)
        return kernel.prepare_norm(geom, x, w, b, config=full)(x, w, b, 1e-6, 1.0)

    built_in = run()
    monkeypatch.setattr(kernel, "width_constant", lambda D, cfg, rows: 0)
    assert torch.equal(run(), built_in)
    atol, rtol = _declared(op, "triton", torch.bfloat16)
    testing.assert_close(built_in, _call(op, "torch", x, scale, shift, w, b), atol=atol, rtol=rtol)
