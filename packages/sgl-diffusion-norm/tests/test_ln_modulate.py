"""ln_modulate against its eager chain (the torch backend), on every runnable backend, each
under its own contract (close: the declared tolerance; exact: torch.equal).

Shape grid (CPU lane, Triton interpreter: keep rows few):
  D=1      degenerate row (variance 0), last-dim stride irrelevant
  D=7, 1000, 2432   odd / non-power-of-two widths (masked tail of the register block)
  D=3072   FLUX/Hunyuan width (power-of-two block, no mask waste)
  D=9000   wider than the 8192 register block: the chunked two-pass path with a masked tail
  D=16384  the issue's minimum supported width, chunked, exact multiple of the block
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing, triton_interpret

OP = "norm.ln_modulate"
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def contract_check(backend: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    spec = next(s for s in REGISTRY.specs(OP) if s.backend == backend)
    if spec.contract.kind == "exact":
        testing.assert_exact(out, ref)
    else:
        atol, rtol = spec.contract.tolerance(ref.dtype)
        testing.assert_close(out, ref, atol=atol, rtol=rtol)


def run_both(backend, x, scale, shift=None, **kw):
    out = norm.ln_modulate(x, scale, shift, backend=backend, **kw)
    ref = norm.ln_modulate_reference(x, scale, shift, **kw)
    assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()
    contract_check(backend, out, ref)
    return out


def test_cpu_lane_runs_triton_in_interpreter(device):
    """The CPU lane must exercise the Triton kernels: without TRITON_INTERPRET=1 they would not run."""
    import importlib.util

    if device.type == "cpu" and importlib.util.find_spec("triton") is not None:
        assert triton_interpret(), "CPU lane without TRITON_INTERPRET=1: Triton kernels would not be tested"


@pytest.mark.parametrize("D", [1, 7, 1000, 2432, 3072, 9000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_per_sample_with_affine(backend, device, D, dtype):
    torch.manual_seed(D)
    B, S = 2, 3
    x = torch.randn(B, S, D, device=device).to(dtype)
    mod = torch.randn(B, 6, D, device=device).to(dtype)  # adaLN chunks: [B, 6, D] -> [B, 1, D] views
    w = torch.randn(D, device=device)
    b = torch.randn(D, device=device)
    run_both(backend, x, mod[:, 1:2], mod[:, 0:1], weight=w, bias=b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [3000, 9000, 16384])
def test_large_mean_rows(backend, device, dtype, D):
    """Rows with |mean| = 1000 * std. Any fp32 algorithm loses ~cond * 2^-24 on the centred input
    (cond = |mean| / std), so the bound is the contract tolerance plus that conditioning term; a
    naive E[x^2] - E[x]^2 in fp32 (the cancellation the chunked path avoids) misses it by ~100x."""
    torch.manual_seed(D)
    mean, std = 1000.0, 1.0
    x = (torch.randn(2, 2, D, device=device) * std + mean).to(dtype)
    sc = torch.randn(D, device=device).to(dtype)
    out = norm.ln_modulate(x, sc, backend=backend)
    ref = norm.ln_modulate_reference(x, sc)
    atol, rtol = next(s for s in REGISTRY.specs(OP) if s.backend == backend).contract.tolerance(dtype)
    cond = mean / x.float().std().item()
    atol += 8 * cond * 2**-24 * (1 + sc.float().abs().max().item())
    testing.assert_close(out, ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "layout", ["channel", "sample2d", "sample3d", "sample-b1", "token-strided", "frame", "frame-b1"]
)
def test_modulation_layouts(backend, device, layout):
    torch.manual_seed(1)
    B, S, D = 2, 6, 96
    dt = torch.bfloat16
    x = torch.randn(B, S, D, device=device).to(dt)
    if layout == "channel":
        sc, sh = torch.randn(D, device=device).to(dt), torch.randn(D, device=device).to(dt)
    elif layout == "sample2d":
        sc, sh = torch.randn(B, D, device=device).to(dt), torch.randn(B, D, device=device).to(dt)
    elif layout == "sample3d":
        sc, sh = torch.randn(B, 1, D, device=device).to(dt), torch.randn(B, 1, D, device=device).to(dt)
    elif layout == "sample-b1":
        sc, sh = torch.randn(1, 1, D, device=device).to(dt), torch.randn(1, D, device=device).to(dt)
    elif layout == "token-strided":  # chunks of a fused [B, S, 6*D] projection
        proj = torch.randn(B, S, 6 * D, device=device).to(dt)
        sc, sh = proj[..., D:2 * D], proj[..., 4 * D:5 * D]
        assert not sc.is_contiguous()
    elif layout == "frame":  # F=3 frames of L=2 tokens
        sc, sh = torch.randn(B, 3, 1, D, device=device).to(dt), torch.randn(B, 3, 1, D, device=device).to(dt)
    else:
        sc, sh = torch.randn(1, 2, 1, D, device=device).to(dt), torch.randn(B, 2, 1, D, device=device).to(dt)
    run_both(backend, x, sc, sh)
    run_both(backend, x, sc, None, scale_offset=0.0)


def test_per_frame_equals_expanded_per_token(backend, device):
    """Frame f covers tokens f*L .. (f+1)*L-1: per-frame must equal the same rows given per token."""
    B, Fr, L, D = 2, 3, 4, 64
    x = torch.randn(B, Fr * L, D, device=device).to(torch.bfloat16)
    sc = torch.randn(B, Fr, 1, D, device=device).to(torch.bfloat16)
    sh = torch.randn(B, Fr, 1, D, device=device).to(torch.bfloat16)
    per_token = lambda t: t.expand(B, Fr, L, D).reshape(B, Fr * L, D).contiguous()  # noqa: E731
    a = norm.ln_modulate(x, sc, sh, backend=backend)
    b = norm.ln_modulate(x, per_token(sc), per_token(sh), backend=backend)
    testing.assert_exact(a, b)


def test_x_views_and_2d(backend, device):
    torch.manual_seed(2)
    D = 130
    big = torch.randn(3, 10, 2 * D + 5, device=device).to(torch.bfloat16)
    x = big[:, 1:8, 3:3 + D]  # arbitrary B and S strides, last dim contiguous
    assert not x.is_contiguous()
    run_both(backend, x, torch.randn(3, D, device=device).to(torch.bfloat16))
    x2 = torch.randn(9, 2 * D, device=device).to(torch.float16)[:, :D]  # [N, D] with row stride 2D
    run_both(backend, x2, torch.randn(9, D, device=device).to(torch.float16))  # per token
    run_both(backend, x2, torch.randn(1, D, device=device).to(torch.float16), torch.randn(D, device=device))


def test_mixed_dtypes(backend, device):
    """Modulation in fp32 (Wan keeps it fp32) against bf16 activations; output keeps x's dtype."""
    x = torch.randn(1, 5, 256, device=device).to(torch.bfloat16)
    sc = torch.randn(1, 1, 256, device=device)
    sh = torch.randn(1, 1, 256, device=device).to(torch.float16)
    out = run_both(backend, x, sc, sh, weight=torch.randn(256, device=device).to(torch.bfloat16))
    assert out.dtype == torch.bfloat16


def test_widest_supported_row(backend, device):
    D = 16384
    x = torch.randn(1, 2, D, device=device).to(torch.bfloat16)
    run_both(backend, x, torch.randn(1, 1, D, device=device).to(torch.bfloat16), torch.zeros(D, device=device))


@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64), (0, 3, 64)])
def test_empty_input(backend, device, shape):
    x = torch.randn(shape, device=device).to(torch.bfloat16)
    out = norm.ln_modulate(x, torch.randn(64, device=device), backend=backend)
    assert out.shape == x.shape and out.numel() == 0


def _assert_unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        norm.ln_modulate(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not norm.can_use_ln_modulate(*args, **kw)
    return info.value


def test_unsupported_inputs(device):
    x = torch.randn(2, 4, 32, device=device)
    sc = torch.randn(2, 1, 32, device=device)
    _assert_unsupported("dtype torch.int32", x.to(torch.int32), sc)
    _assert_unsupported("does not broadcast", x, torch.randn(3, 1, 32, device=device))
    _assert_unsupported("does not broadcast", x, torch.randn(2, 1, 31, device=device))
    _assert_unsupported("does not broadcast", x, torch.randn(2, 4, 1, 1, 32, device=device))
    _assert_unsupported("S divisible by F", x, torch.randn(2, 3, 1, 32, device=device))
    _assert_unsupported("last dim must be contiguous", torch.randn(2, 4, 64, device=device)[..., ::2], sc)
    _assert_unsupported("last dim must be contiguous", x, torch.randn(2, 1, 64, device=device)[..., ::2])
    _assert_unsupported("x must be [B, S, D] or [N, D]", torch.randn(32, device=device), sc)
    _assert_unsupported("weight must be a contiguous [D]", x, sc, weight=torch.randn(31, device=device))
    _assert_unsupported("must be a torch.Tensor", x, 1.0)
    other = torch.device("meta") if device.type == "cpu" else torch.device("cpu")
    _assert_unsupported("all tensors must be on one device", x, sc.to(other))
    _assert_unsupported("unknown backend", x, sc, backend="nope")


def test_explicit_backend_never_falls_back(device):
    """D over the Triton limit: an explicit triton request raises; auto selection serves it with torch."""
    spec = next(s for s in REGISTRY.specs(OP) if s.backend == "triton")
    D = spec.capabilities.max_last_dim + 1
    x = torch.randn(1, 1, D, device=device)
    err = _assert_unsupported("exceeds this backend's limit", x, torch.randn(D, device=device), backend="triton")
    assert "triton" in err.reasons
    out = norm.ln_modulate(x, torch.randn(D, device=device))
    assert out.shape == x.shape
    verdicts = {v.backend: v for v in explain(OP, x, torch.randn(D, device=device)).verdicts}
    assert not verdicts["triton"].ok and any("limit" in r for r in verdicts["triton"].reasons)
    assert verdicts["torch"].ok


def test_explain_lists_every_backend(device):
    x = torch.randn(2, 4, 32, device=device)
    e = explain(OP, x, torch.randn(2, 3, 1, 32, device=device))
    assert e.chosen is None and {v.backend for v in e.verdicts} == {s.backend for s in REGISTRY.specs(OP)}
    assert all(not v.ok for v in e.verdicts)
    assert "S divisible by F" in str(e)
    ok = explain(OP, x, torch.randn(32, device=device), exact=False)
    assert ok.chosen == ("triton" if device.type == "cuda" else "torch")
    assert explain(OP, x, torch.randn(32, device=device)).chosen != "triton"  # default exact: never close


def test_opcheck(backend, device):
    x = torch.randn(2, 3, 40, device=device).to(torch.bfloat16)
    sc = torch.randn(2, 1, 40, device=device).to(torch.bfloat16)
    sh = torch.randn(40, device=device)
    w = torch.randn(40, device=device)
    torch.library.opcheck(
        torch.ops.sgl_diffusion.ln_modulate.default, (x, sc, sh, w, None, 1e-6, 1.0, backend)
    )
    torch.library.opcheck(torch.ops.sgl_diffusion.ln_modulate.default, (x, sc, None, None, None, 1e-5, 0.0, backend))


def test_compile_fullgraph_no_graph_break(backend, device):
    import torch._dynamo

    def block(x, mod):
        shift, scale = mod.chunk(2, dim=1)
        h = norm.ln_modulate(x, scale, shift, backend=backend)
        return h * 2.0 + 1.0

    torch._dynamo.reset()
    x = torch.randn(2, 5, 48, device=device).to(torch.bfloat16)
    mod = torch.randn(2, 2, 48, device=device).to(torch.bfloat16)
    expl = torch._dynamo.explain(block)(x, mod)
    assert expl.graph_break_count == 0, expl.break_reasons
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(x, mod), block(x, mod))


def test_eager_call_skips_custom_op_dispatch(device, monkeypatch):
    """Eager calls go straight to the cached plan (host overhead), not through torch.ops."""
    x = torch.randn(1, 2, 16, device=device)
    sc = torch.randn(16, device=device)
    calls = []
    op = torch.ops.sgl_diffusion.ln_modulate
    monkeypatch.setattr(torch.ops.sgl_diffusion, "ln_modulate", lambda *a: calls.append(a) or op(*a), raising=False)
    norm.ln_modulate(x, sc)
    assert calls == []


def test_same_signature_different_alignment(backend, device):
    """Two views with equal shape and strides, one 16-byte aligned and one not, share a cached plan:
    the prepared launch must not reuse the aligned specialization for the misaligned pointer."""
    D = 256
    big = torch.randn(5, D + 8, device=device).to(torch.bfloat16)
    sc = torch.randn(D, device=device).to(torch.bfloat16)
    aligned, shifted = big[:, :D], big[:, 1:D + 1]
    assert aligned.stride() == shifted.stride() and shifted.data_ptr() % 16 != 0
    for x in (aligned, shifted, aligned, shifted):
        run_both(backend, x, sc)


# --- FP8 results (out_dtype): ln_modulate and rms_modulate share the kernel -----------------------

FP8 = [torch.float8_e4m3fn, torch.float8_e4m3fnuz]
MODULATE_FP8 = {"ln_modulate": (norm.ln_modulate, norm.ln_modulate_reference),
                "rms_modulate": (norm.rms_modulate, norm.rms_modulate_reference)}


def quantize_rows_by_hand(y: torch.Tensor, fp8: torch.dtype):
    """``quantize_fp8``'s row-wise definition, written out: the reference of the FP8 result."""
    fmax = torch.finfo(fp8).max
    scale = y.float().abs().amax(-1, keepdim=True).clamp_min(1e-12) / fmax
    return (y.float() / scale).clamp(-fmax, fmax).to(fp8), scale


def assert_fp8_close(op_id, q, s, rq, rs, x_dtype):
    """The FP8 contract of the op's triton backend (``testing.assert_fp8_close`` with its declared tolerances)."""
    spec = next(sp for sp in REGISTRY.specs(op_id) if sp.backend == "triton")
    assert s.shape == (*q.shape[:-1], 1)
    testing.assert_fp8_close(q, s, rq, rs, tolerance=spec.contract.tolerance(x_dtype),
                             fp8_tolerance=spec.contract.tolerance(rq.dtype))


@pytest.mark.parametrize("name", list(MODULATE_FP8))
@pytest.mark.parametrize("fp8", FP8, ids=["e4m3fn", "e4m3fnuz"])
@pytest.mark.parametrize("D", [7, 1536, 9000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
def test_fp8_result_triton(name, fp8, D, dtype):
    if not triton_interpret():
        pytest.skip("CPU lane: the Triton kernel runs under TRITON_INTERPRET=1")
    fn, ref = MODULATE_FP8[name]
    g = torch.Generator().manual_seed(D)
    x = (torch.randn(2, 3, D, generator=g) * 3 + 1).to(dtype)
    per_token = D == 1536  # per-token (a strided chunk of a projection) at one width, per-sample elsewhere
    mod = torch.randn(2, 3 if per_token else 1, 2 * D, generator=g).to(dtype)
    shift, scale = mod.chunk(2, dim=-1)
    q, s = fn(x, scale, shift, out_dtype=fp8, backend="triton")
    rq, rs = ref(x, scale, shift, out_dtype=fp8)
    assert_fp8_close(f"norm.{name}", q, s, rq, rs, dtype)


@pytest.mark.parametrize("D", [1152, 2240, 3072, 5120, 6144])
def test_held_row_with_a_tail_tile(D):
    """A row held as a power-of-two block and a tail tile (the CUDA FP8 rule's 3072 = 2048 + 1024, 5120 =
    4096 + 1024, 6144 = 4096 + 2048), pinned
    under the interpreter: bf16 and FP8 results of both modulated norms and the gated op within their
    contracts, as the one-block launch."""
    if not triton_interpret():
        pytest.skip("CPU lane: the Triton kernel runs under TRITON_INTERPRET=1")
    from sgl_diffusion_core import RowConfig

    K = testing.backend_module(norm.ln_modulate, "triton")
    cfg = K.fp8_config(D, RowConfig(block=1024, chunks=1, num_warps=4))
    assert cfg.tail > 0 and cfg.block + cfg.tail >= D > cfg.block
    g = torch.Generator().manual_seed(D)
    x = (torch.randn(2, 3, D, generator=g) * 3 + 1).to(torch.bfloat16)
    shift, scale = torch.randn(2, 1, 2 * D, generator=g).to(torch.bfloat16).chunk(2, dim=-1)
    fp8 = torch.float8_e4m3fn
    for name, (fn, ref) in MODULATE_FP8.items():
        op = testing.op_definition(fn)
        geom = op.describe(x, scale, shift).info["geom"]
        out = K.prepare(geom, x, scale, shift, None, None, config=cfg)(x, scale, shift, None, None, 1e-6, 1.0)
        spec = next(sp for sp in REGISTRY.specs(f"norm.{name}") if sp.backend == "triton")
        atol, rtol = spec.contract.tolerance(x.dtype)
        testing.assert_close(out, ref(x, scale, shift), atol=atol, rtol=rtol)
        geom8 = op.describe(x, scale, shift, out_dtype=fp8).info["geom"]
        q, s = K.prepare(geom8, x, scale, shift, None, None, config=cfg)(x, scale, shift, None, None, fp8, 1e-6, 1.0)
        rq, rs = ref(x, scale, shift, out_dtype=fp8)
        assert_fp8_close(f"norm.{name}", q, s, rq, rs, torch.bfloat16)


@pytest.mark.parametrize("name", list(MODULATE_FP8))
def test_fp8_reference_is_the_chain_then_quantized(name):
    fn, ref = MODULATE_FP8[name]
    x = torch.randn(3, 4, 40).to(torch.bfloat16)
    scale, shift = torch.randn(40).to(torch.bfloat16), torch.randn(3, 1, 40).to(torch.bfloat16)
    x[1, 2] = 0.0  # a zero row of x still has the shift: nonzero output
    for fp8 in FP8:
        want = quantize_rows_by_hand(ref(x, scale, shift), fp8)
        for got in (ref(x, scale, shift, out_dtype=fp8), fn(x, scale, shift, out_dtype=fp8, backend="torch"),
                    fn(x, scale, shift, out_dtype=fp8)):
            assert torch.equal(got[0].view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(got[1], want[1])


def test_fp8_selection_and_refusals():
    x, sc = torch.randn(2, 3, 32).to(torch.bfloat16), torch.randn(32).to(torch.bfloat16)
    fp8 = torch.float8_e4m3fn
    assert not norm.can_use_ln_modulate(x, sc, out_dtype=torch.float16)
    with pytest.raises(UnsupportedInputError, match="out_dtype=torch.float16 is not supported"):
        norm.ln_modulate(x, sc, out_dtype=torch.float16)
    with pytest.raises(UnsupportedInputError, match="fp8-out"):  # the exact kernel writes no FP8
        norm.ln_modulate(x, sc, out_dtype=fp8, backend="triton_exact")
    assert explain(OP, x, sc, out_dtype=fp8).chosen == "torch"  # on the CPU: the reference
    # exact=None asks for no exact backend here (the result is a quantization): the close Triton kernel
    # is refused for the device only, as the call itself would choose it on a GPU
    reasons = {v.backend: " ".join(v.reasons) for v in explain(norm.ln_modulate, x, sc, out_dtype=fp8).verdicts}
    assert "exact" not in reasons["triton"] and "interpreter" in reasons["triton"]
    assert "exact result was requested" in " ".join(
        next(v.reasons for v in explain(OP, x, sc, out_dtype=fp8, exact=True).verdicts if v.backend == "triton"))
    assert norm.can_use_ln_modulate(x, sc, out_dtype=fp8, backend="torch")
    empty = norm.ln_modulate(x[:, :0], sc, out_dtype=fp8)
    assert empty[0].shape == (2, 0, 32) and empty[0].dtype == fp8 and empty[1].shape == (2, 0, 1)


def test_fp8_compile_fullgraph():
    def block(x, mod):
        shift, scale = mod.chunk(2, dim=1)
        q, s = norm.rms_modulate(x, scale, shift, out_dtype=torch.float8_e4m3fn)
        return q.float() * s

    torch._dynamo.reset()
    x = torch.randn(2, 5, 48).to(torch.bfloat16)
    mod = torch.randn(2, 2, 48).to(torch.bfloat16)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(x, mod), block(x, mod))
    torch.library.opcheck(torch.ops.sgl_diffusion.ln_modulate_fp8.default,
                          (x, mod[:, :1], None, None, None, torch.float8_e4m3fn, 1e-6, 1.0, None, None))


@pytest.mark.parametrize("norm_kind", ["layer", "rms"])
@pytest.mark.parametrize("D", [40, 9000])
def test_fp8_result_gated_residual_norm_modulate(norm_kind, D):
    """The gated op's FP8 out: the new residual still bit-exact, out within the FP8 contract."""
    g = torch.Generator().manual_seed(D)
    r, u = (torch.randn(2, 3, D, generator=g).to(torch.bfloat16) for _ in range(2))
    gate, sc = (torch.randn(2, 1, D, generator=g).to(torch.bfloat16) for _ in range(2))
    sh = torch.randn(D, generator=g).to(torch.bfloat16)
    fp8 = torch.float8_e4m3fn
    fn, ref = norm.gated_residual_norm_modulate, norm.gated_residual_norm_modulate_reference
    rq, rs, rnew = ref(r, u, gate, sc, sh, norm=norm_kind, out_dtype=fp8)
    want = quantize_rows_by_hand(ref(r, u, gate, sc, sh, norm=norm_kind)[0], fp8)
    assert torch.equal(rq.view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(rs, want[1])
    backends = ["torch"] + (["triton"] if triton_interpret() else [])
    for backend in backends:
        q, s, new = fn(r, u, gate, sc, sh, norm=norm_kind, out_dtype=fp8, backend=backend)
        testing.assert_exact(new, rnew)
        assert_fp8_close("norm.gated_residual_norm_modulate", q, s, rq, rs, torch.bfloat16)
    with pytest.raises(UnsupportedInputError, match="out_dtype"):
        fn(r, u, gate, sc, sh, norm=norm_kind, out_dtype=torch.float16)

    def block(r, u):
        q, s, new = fn(r, u, gate, sc, sh, norm=norm_kind, out_dtype=fp8)
        return q.float() * s, new

    torch._dynamo.reset()
    got = torch.compile(block, fullgraph=True, backend="aot_eager")(r, u)
    want_c = block(r, u)
    testing.assert_exact(got[0], want_c[0])
    testing.assert_exact(got[1], want_c[1])


def test_fp8_launch_rule():
    """FP8 results on a GPU: the row in registers up to 4096 columns, on CUDA up to 6144 as a 4096 block and
    a tail tile; above 2048 columns warps for at most 80 values per thread (at or below, at least 4 warps);
    wider rows in 1024-wide chunks with 2 warps, without the bf16 rule's register cap and unrolling (which
    spill with the three FP8 passes). The gated op holds rows up to 8192 columns, above 4096 on CUDA with warps
    for at most 40 values per thread and stream."""
    from sgl_diffusion_core import RowConfig

    rule = testing.backend_module(norm.ln_modulate, "triton").fp8_config
    base = RowConfig(block=1024, chunks=5, num_warps=2, max_registers=80, unroll=5)
    assert rule(5120, base) == RowConfig(block=4096, chunks=1, num_warps=2, tail=1024)  # 4096 + 1024
    assert rule(6144, base) == RowConfig(block=4096, chunks=1, num_warps=4, tail=2048)
    assert rule(3072, base) == RowConfig(block=2048, chunks=1, num_warps=2, tail=1024)  # 2048 + 1024
    assert rule(3072, base, "hip") == RowConfig(block=4096, chunks=1, num_warps=4)
    assert rule(2240, base) == RowConfig(block=2048, chunks=1, num_warps=1, tail=256)
    assert rule(3840, base) == RowConfig(block=4096, chunks=1, num_warps=2)  # the rest needs a 2048 tile
    assert rule(4096, base) == RowConfig(block=4096, chunks=1, num_warps=2)
    assert rule(2048, base) == RowConfig(block=2048, chunks=1, num_warps=4)
    assert rule(1000, base) == RowConfig(block=1024, chunks=1, num_warps=4)
    wide = RowConfig(block=1024, chunks=16, num_warps=2, max_registers=80, unroll=16)
    assert rule(16384, wide) == RowConfig(block=1024, chunks=16, num_warps=2)
    assert rule(6400, base) == RowConfig(block=1024, chunks=7, num_warps=2)
    assert rule(5120, base, "hip") == RowConfig(block=8192, chunks=1, num_warps=8)  # ROCm: held up to 8192
    gated = testing.backend_module(norm.ln_modulate, "triton").gated_fp8_config  # held up to 8192
    assert gated(5120, base) == RowConfig(block=4096, chunks=1, num_warps=4, tail=1024)  # 40 values per stream
    assert gated(4097, base) == RowConfig(block=4096, chunks=1, num_warps=4, tail=1)
    assert gated(5121, base) == RowConfig(block=4096, chunks=1, num_warps=8, tail=2048)
    assert gated(6144, base) == RowConfig(block=4096, chunks=1, num_warps=8, tail=2048)
    assert gated(3072, base) == RowConfig(block=2048, chunks=1, num_warps=4, tail=1024)  # at least 4 warps
    assert gated(5120, base, "hip") == RowConfig(block=8192, chunks=1, num_warps=8)
    assert gated(16384, wide) == RowConfig(block=1024, chunks=16, num_warps=2)


def test_width_launch_rule():
    """The close kernel's launch rule at DiT widths (bf16 / fp16 on CUDA): few rows hold a row whose power
    of two wastes at most 1/16, or below 3072 columns half of it and a smaller tile that do, else 512-wide
    chunks below 3072 columns, 1024 up to 5120, 2048 above; many
    rows the widest chunk the row fills 1.875 times; fp32, ROCm and unswept widths keep the core rule."""
    from sgl_diffusion_core import RowConfig

    rule = testing.backend_module(norm.ln_modulate, "triton").width_config

    def few(D):
        return rule(D, 2, "cuda", n_rows=4096)

    def many(D):
        return rule(D, 2, "cuda", n_rows=75600)

    assert few(1152) == RowConfig(block=1024, chunks=1, num_warps=2, tail=128)  # held: 1024 + 128
    assert few(2240) == RowConfig(block=2048, chunks=1, num_warps=4, tail=256)  # not padded to 4096
    assert few(2432) == RowConfig(block=2048, chunks=1, num_warps=4, tail=512)
    assert few(1600) == RowConfig(block=512, chunks=4, num_warps=1, unroll=4)  # 1024 + 1024 would pad 1/5
    assert few(2600) == RowConfig(block=512, chunks=6, num_warps=1, unroll=6)  # 2048 + 1024: 15% padding
    assert few(1920) == RowConfig(block=2048, chunks=1, num_warps=2)
    assert few(3840) == RowConfig(block=4096, chunks=1, num_warps=4)
    assert few(3072) == RowConfig(block=1024, chunks=3, num_warps=4)
    assert few(5120) == RowConfig(block=1024, chunks=5, num_warps=4)
    assert few(6144) == RowConfig(block=2048, chunks=3, num_warps=4)
    assert many(1152) == RowConfig(block=512, chunks=3, num_warps=1, unroll=3)
    assert many(1920) == RowConfig(block=1024, chunks=2, num_warps=2)
    assert many(3072) == RowConfig(block=1024, chunks=3, num_warps=2)
    assert many(3840) == RowConfig(block=2048, chunks=2, num_warps=4)
    assert many(5120) == RowConfig(block=2048, chunks=3, num_warps=4)
    for D in range(1152, 6145, 64):  # every chunk and tile holds part of the row, padded by at most 1/16 where held
        for cfg in (few(D), many(D)):
            if cfg.tail:
                assert cfg.chunks == 1 and cfg.tail < cfg.block < D <= cfg.block + cfg.tail, (D, cfg)
                assert 16 * D >= 15 * (cfg.block + cfg.tail), (D, cfg)
            else:
                assert cfg.block * (cfg.chunks - 1) < D <= cfg.block * cfg.chunks, (D, cfg)
    core = RowConfig.from_heuristic
    assert rule(5120, 4, "cuda", n_rows=75600) == core(5120, 4, "cuda", n_rows=75600)  # fp32
    assert rule(2240, 2, "hip", n_rows=4096) == core(2240, 2, "hip", n_rows=4096)
    assert rule(1024, 2, "cuda", n_rows=4096) == core(1024, 2, "cuda", n_rows=4096)
    assert rule(8192, 2, "cuda", n_rows=4096) == core(8192, 2, "cuda", n_rows=4096)


def test_bench_width_group(monkeypatch):
    """The benchmark's ``widths`` group: every listed DiT width at batch 1 and 2 and two token counts,
    expanded by name for the row norms and ln_modulate; an unknown name is refused."""
    import sys

    from sgl_diffusion_core import bench

    cases = bench.load_cases(REGISTRY.op("norm.ln_modulate"))
    module = sys.modules[cases.__module__]
    names = module.GROUPS["widths"]
    assert len(names) == 13 * 2 * 2 and "d2240-b2-s4096" in names and "d6144-b1-s32760" in names
    assert module.LN_SHAPES["d2240-b2-s4096"] == (2, 4096, 2240, "per-sample")
    tiny = {"d40-b2-s8": (2, 8, 40, "per-sample")}
    monkeypatch.setitem(module.GROUPS, "widths", tuple(tiny))
    monkeypatch.setattr(module, "LN_SHAPES", {**module.LN_SHAPES, **tiny})
    got = list(cases(torch.device("cpu"), names=["widths"]))
    assert [c.name for c in got] == ["d40-b2-s8"]
    got[0].check()
    with pytest.raises(ValueError, match="unknown"):
        list(cases(torch.device("cpu"), names=["d41-b1-s1"]))
