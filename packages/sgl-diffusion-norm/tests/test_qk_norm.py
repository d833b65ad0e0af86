"""qk_norm against its eager chain (the torch backend) and against an fp64 evaluation of the formula.

Two checks per case: the contract (``close`` tolerance of the registry spec for triton, ``torch.equal``
for torch, against ``qk_norm_reference``), and a tighter bound against the formula in fp64 (one
rounding for triton, two for the eager chain with a half-precision weight: the normalized value is
rounded to the weight's dtype before the product), so a wrong formula (a missing eps, a biased
variance, the weight dropped) cannot hide inside the contract tolerance.

Shape grid (CPU lane, Triton interpreter: few rows):
  Dh = 64, 128, 256   production head sizes (power-of-two tile, no masked lanes)
  Dh = 72, 80, 100    odd head sizes (masked tail of the BLOCK_D tile)
  Dh = 1              degenerate head (RMS: x / |x|; layer: 0)
  rows = 2*3*5 = 30 heads: not a multiple of the heads-per-program tile (16 at Dh=128 bf16)
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing, triton_interpret

OP = "norm.qk_norm"
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
UNIT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def spec(backend):
    return next(s for s in REGISTRY.specs(OP) if s.backend == backend)


def truth(x, w, kind, eps):
    """The formula in fp64 (no intermediate rounding)."""
    x = x.double()
    if kind == "rms":
        y = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    else:
        xc = x - x.mean(-1, keepdim=True)
        y = xc / torch.sqrt(xc.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w.double()


def rounds_and_unit(backend, kind, x, w):
    """Roundings the result may carry, and their unit: one for triton and for every chain that rounds
    once; the eager RMS chain with a half weight rounds the normalized value first (two); a half
    weight of another dtype puts the product in that dtype, then casts (three, for both backends,
    which follow the chain); LayerNorm casts a weight of another dtype to x.dtype (two)."""
    half = (torch.float16, torch.bfloat16)
    unit = UNIT[x.dtype]
    if w is None:
        return 1, unit
    if kind == "rms" and w.dtype in half and w.dtype != x.dtype:
        return 3, max(unit, UNIT[w.dtype])
    if kind == "layer" and w.dtype != x.dtype:
        return 2, unit
    if backend == "torch" and kind == "rms" and w.dtype in half:
        return 2, unit
    return 1, unit


def tight_check(out, x, w, kind, eps, backend):
    """|out - truth| <= rounds * u * |truth| + fp32-math slack against the formula in fp64."""
    t = truth(x, w, kind, eps)
    rounds, unit = rounds_and_unit(backend, kind, x, w)
    rtol = rounds * unit + 2e-6
    atol = 2e-6 * float(t.abs().max()) + (2.0**-24 if out.dtype == torch.float16 else 0.0)
    assert_within(out, t, atol, rtol)


def assert_within(out, t, atol, rtol):
    """``|out - t| <= atol + rtol * |t|`` against an fp64 truth, reporting the worst coordinates."""
    err = (out.double() - t).abs()
    bad = ~(err <= atol + rtol * t.abs())
    if bool(bad.any()):
        i = int(torch.where(bad, err, torch.zeros_like(err)).flatten().argmax())
        raise AssertionError(f"{int(bad.sum())} of {out.numel()} elements off the fp64 formula "
                             f"(atol={atol:g}, rtol={rtol:g}); worst: actual {out.flatten()[i].item()!r}, "
                             f"fp64 {t.flatten()[i].item()!r}")


def run_both(backend, q, k, qw=None, kw=None, *, kind="rms", eps=1e-6):
    qo, ko = norm.qk_norm(q, k, qw, kw, norm=kind, eps=eps, backend=backend)
    rq, rk = norm.qk_norm_reference(q, k, qw, kw, norm=kind, eps=eps)
    for out, ref, x, w in ((qo, rq, q, qw), (ko, rk, k, kw)):
        assert out.shape == x.shape and out.dtype == x.dtype and out.is_contiguous()
        if spec(backend).contract.kind == "exact":
            testing.assert_exact(out, ref)
        else:
            atol, rtol = spec(backend).contract.tolerance(out.dtype)
            testing.assert_close(out, ref, atol=atol, rtol=rtol)
        tight_check(out, x, w, kind, eps, backend)
    return qo, ko


def test_cpu_lane_runs_triton_in_interpreter(device):
    import importlib.util

    if device.type == "cpu" and importlib.util.find_spec("triton") is not None:
        assert triton_interpret(), "CPU lane without TRITON_INTERPRET=1: Triton kernels would not be tested"


@pytest.mark.parametrize("D", [64, 72, 100, 128, 256])
@pytest.mark.parametrize("kind", ["rms", "layer"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_head_sizes(backend, device, D, kind, dtype):
    torch.manual_seed(D)
    q = (torch.randn(2, 3, 5, D, device=device) * 3 + 0.5).to(dtype)
    k = torch.randn(2, 3, 5, D, device=device).to(dtype)
    qw = (torch.rand(D, device=device) + 0.5).to(dtype)
    kw = torch.randn(D, device=device).to(dtype)
    run_both(backend, q, k, qw, kw, kind=kind)


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_no_weight_and_odd_80_96(backend, device, kind):
    for D in (80, 96):
        q = torch.randn(1, 4, 3, D, device=device).to(torch.bfloat16)
        k = torch.randn(1, 4, 3, D, device=device).to(torch.bfloat16)
        run_both(backend, q, k, None, None, kind=kind)
        run_both(backend, q, k, torch.randn(D, device=device).to(torch.bfloat16), None, kind=kind, eps=1e-5)


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_fused_qkv_views_and_gqa(backend, device, kind):
    """q and k are views into a fused [B, S, 3*H*Dh] projection (strides of the QKV layout); k of a
    second, GQA-like projection has fewer heads and a token slice (samples and tokens do not merge)."""
    torch.manual_seed(3)
    B, S, H, D = 2, 5, 6, 72
    qkv = torch.randn(B, S, 3 * H * D, device=device).to(torch.bfloat16)
    v = qkv.view(B, S, 3, H, D)
    q = v[:, :, 0]
    assert not q.is_contiguous() and q.stride(-1) == 1
    kv = torch.randn(B, S + 3, 2, 2, D, device=device).to(torch.bfloat16)
    k = kv[:, 1:S + 1, 0]  # Hk = 2 heads; sb != S * ss
    assert k.stride(0) != k.shape[1] * k.stride(1)
    w = torch.randn(D, device=device).to(torch.bfloat16)
    run_both(backend, q, k, w, w, kind=kind)
    run_both(backend, q, v[:, :, 1], w, None, kind=kind)


def test_mixed_dtypes(backend, device):
    """q bf16, k fp16, fp32 weight (outputs keep q's and k's dtypes)."""
    D = 64
    q = torch.randn(2, 2, 3, D, device=device).to(torch.bfloat16)
    k = torch.randn(1, 3, 2, D, device=device).to(torch.float16)
    w32 = torch.randn(D, device=device)
    wbf = torch.randn(D, device=device).to(torch.bfloat16)
    for kind in ("rms", "layer"):
        qo, ko = run_both(backend, q, k, w32, wbf, kind=kind)
        assert qo.dtype == torch.bfloat16 and ko.dtype == torch.float16


@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_inplace_into_qkv(backend, device, kind):
    """inplace=True writes q and k inside the fused buffer, returns them, and leaves v untouched."""
    torch.manual_seed(4)
    B, S, H, D = 1, 7, 3, 128
    qkv = torch.randn(B, S, 3 * H * D, device=device).to(torch.bfloat16)
    v5 = qkv.view(B, S, 3, H, D)
    q, k = v5[:, :, 0], v5[:, :, 1]
    w = torch.randn(D, device=device).to(torch.bfloat16)
    expect = norm.qk_norm(q, k, w, w, norm=kind, backend=backend)
    v_before = v5[:, :, 2].clone()
    qo, ko = norm.qk_norm(q, k, w, w, norm=kind, inplace=True, backend=backend)
    assert qo is q and ko is k
    testing.assert_exact(q, expect[0])
    testing.assert_exact(k, expect[1])
    testing.assert_exact(v5[:, :, 2], v_before)


def test_size_one_dims(backend, device):
    for shape in [(1, 1, 1, 64), (3, 1, 1, 128), (1, 1, 7, 80)]:
        q = torch.randn(shape, device=device).to(torch.bfloat16)
        run_both(backend, q, q.clone(), None, None)
        run_both(backend, q, q.clone(), None, None, kind="layer")
    # Dh = 1: RMS gives x / sqrt(x^2 + eps) (= sign(x) for |x| >> sqrt(eps)), LayerNorm gives 0
    q = torch.randn(2, 3, 2, 1, device=device)
    qo, _ = run_both(backend, q, q, None, None)
    lo, _ = run_both(backend, q, q, None, None, kind="layer")
    assert torch.all(lo == 0)


def test_zero_rows_and_large_magnitudes(backend, device):
    D = 128
    q = torch.zeros(1, 2, 2, D, device=device).to(torch.bfloat16)
    k = (torch.randn(1, 2, 2, D, device=device) * 1e4).to(torch.bfloat16)
    qo, ko = run_both(backend, q, k, None, None)
    assert torch.all(qo == 0)
    run_both(backend, q, k, None, None, kind="layer")


@pytest.mark.parametrize("inplace", [False, True])
def test_empty(backend, device, inplace):
    q = torch.randn(2, 0, 4, 64, device=device).to(torch.bfloat16)
    k = torch.randn(0, 3, 4, 64, device=device).to(torch.bfloat16)
    qo, ko = norm.qk_norm(q, k, inplace=inplace, backend=backend)
    assert qo.shape == q.shape and ko.shape == k.shape
    # one empty, one not: only k is normalized
    k2 = torch.randn(1, 3, 2, 64, device=device).to(torch.bfloat16)
    qo, ko = norm.qk_norm(q, k2, backend=backend)
    assert qo.numel() == 0
    atol, rtol = spec(backend).contract.tolerance(torch.bfloat16)
    testing.assert_close(ko, norm.qk_norm_reference(q, k2)[1], atol=atol, rtol=rtol)


def _assert_unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        norm.qk_norm(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not norm.can_use_qk_norm(*args, **kw)
    return info.value


def test_unsupported_inputs(device):
    q = torch.randn(1, 2, 3, 64, device=device)
    k = torch.randn(1, 2, 3, 64, device=device)
    _assert_unsupported("norm must be 'rms' or 'layer'", q, k, norm="l2")
    _assert_unsupported("q must be [B, S, H, Dh]", q[0], k)
    _assert_unsupported("same head size", q, torch.randn(1, 2, 3, 32, device=device))
    _assert_unsupported("last dim (Dh) must be contiguous", torch.randn(1, 2, 3, 128, device=device)[..., ::2], k)
    _assert_unsupported("q_weight must be a contiguous [Dh]", q, k, torch.randn(63, device=device))
    _assert_unsupported("k_weight must be a contiguous [Dh]", q, k, None, torch.randn(128, device=device)[::2])
    _assert_unsupported("dtype torch.int32", q.to(torch.int32), k)
    _assert_unsupported("must be a torch.Tensor", q, 1.0)
    _assert_unsupported("expanded or overlapping", q[:, :1].expand(1, 4, 3, 64), k, inplace=True)
    # heads half overlapping (head stride 32 < Dh = 64): no zero stride, still written twice in place
    halves = torch.randn(2 * 3 * 32 + 32, device=device).as_strided((1, 2, 3, 64), (192, 96, 32, 1))
    _assert_unsupported("expanded or overlapping", halves, k, inplace=True)
    norm.qk_norm(q.clone(), k.clone(), inplace=True)  # caches the plan of this signature
    _assert_unsupported("same address", q, q, inplace=True)  # checked per call, not per plan
    other = torch.device("meta") if device.type == "cpu" else torch.device("cpu")
    _assert_unsupported("all tensors must be on one device", q, k.to(other))
    _assert_unsupported("unknown backend", q, k, backend="nope")
    # an expanded (zero-stride) q is fine when not written in place
    assert norm.can_use_qk_norm(q[:, :1].expand(1, 4, 3, 64), k)


def test_exact_request(device):
    """exact=True: only the eager chain honours it; an explicit triton backend then raises."""
    q = torch.randn(1, 2, 3, 64, device=device).to(torch.bfloat16)
    e = explain(OP, q, q, exact=True)
    assert e.chosen == "torch"
    out = norm.qk_norm(q, q, exact=True)
    testing.assert_exact(out[0], norm.qk_norm_reference(q, q)[0])
    if "triton" in testing.runnable_backends(OP, device):
        _assert_unsupported("exact", q, q, backend="triton", exact=True)


def test_opcheck(backend, device):
    q = torch.randn(2, 3, 4, 72, device=device).to(torch.bfloat16)
    k = torch.randn(2, 3, 2, 72, device=device).to(torch.bfloat16)
    w = torch.randn(72, device=device).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.sgl_diffusion.qk_norm.default, (q, k, w, None, "rms", 1e-6, None, backend))
    torch.library.opcheck(torch.ops.sgl_diffusion.qk_norm.default, (q, k, None, w, "layer", 1e-5, None, backend))
    torch.library.opcheck(torch.ops.sgl_diffusion.qk_norm_.default,
                          (q.clone(), k.clone(), w, w, "rms", 1e-6, None, backend))


@pytest.mark.parametrize("inplace", [False, True])
def test_compile_fullgraph_no_graph_break(backend, device, inplace):
    import torch._dynamo

    B, S, H, D = 1, 4, 2, 64

    def attn_prep(qkv, w):
        q, k, v = qkv.view(B, S, 3, H, D).unbind(2)
        q, k = norm.qk_norm(q, k, w, w, inplace=inplace, backend=backend)
        return q * 2.0 + k, v

    torch._dynamo.reset()
    qkv = torch.randn(B, S, 3 * H * D, device=device).to(torch.bfloat16)
    w = torch.randn(D, device=device).to(torch.bfloat16)
    expl = torch._dynamo.explain(attn_prep)(qkv.clone(), w)
    assert expl.graph_break_count == 0, expl.break_reasons
    compiled = torch.compile(attn_prep, fullgraph=True, backend="aot_eager")
    a, b = qkv.clone(), qkv.clone()
    ra, rb = compiled(a, w), attn_prep(b, w)
    testing.assert_exact(ra[0], rb[0])
    testing.assert_exact(a, b)  # the in-place writes land in the same places


def test_eager_call_skips_custom_op_dispatch(device, monkeypatch):
    q = torch.randn(1, 2, 2, 16, device=device)
    calls = []
    op = torch.ops.sgl_diffusion.qk_norm
    monkeypatch.setattr(torch.ops.sgl_diffusion, "qk_norm", lambda *a: calls.append(a) or op(*a), raising=False)
    norm.qk_norm(q, q)
    assert calls == []
