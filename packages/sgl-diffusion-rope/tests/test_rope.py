"""The rope family on every runnable backend, against its eager chain and an fp64 computation.

Each backend is checked twice: against the eager chain (``*_reference``, the torch
backend) with its contract — ``torch.equal`` for exact backends, the declared tolerance for
close ones — and, for close backends, against an fp64 evaluation of the same math rounded
once, with a bound of one output ulp (a wrong formula cannot hide under the tolerance).
"""

from __future__ import annotations

import math

import pytest
import torch

import sgl_diffusion_rope as rope
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing

OP = "rope.apply_rope"


def contract(op: str, backend: str):
    return next(s for s in REGISTRY.specs(op) if s.backend == backend).contract


def ulp(dtype: torch.dtype) -> float:
    return {torch.bfloat16: 2**-8, torch.float16: 2**-11, torch.float32: 2**-23}[dtype]


def check(op, backend, out, ref, exact64=None, vs_eager=True):
    """out vs the eager chain (contract) and vs an fp64 value (one ulp, close backends).

    ``vs_eager=False``: the eager chain rounds its intermediates to bf16/fp16 (a table in
    that dtype), so a close backend (fp32 math, one rounding) is held to the fp64 value,
    which the eager chain itself misses by up to an ulp of its largest intermediate.
    """
    c = contract(op, backend)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if c.kind == "exact":
        testing.assert_exact(out, ref)
    else:
        atol, rtol = c.tolerance(out.dtype)
        testing.assert_close(out, ref if vs_eager or exact64 is None else exact64.to(out.dtype), atol=atol, rtol=rtol)
        if exact64 is not None:
            err = (out.double() - exact64).abs()
            bound = ulp(out.dtype) * exact64.abs().clamp_min(1.0) + 1e-6
            assert bool((err <= bound).all()), f"max error {err.max().item():g} vs one ulp of the fp64 value"


def rot64(x, cos, sin, interleaved, r):
    """fp64 rotation of the first r dims; cos/sin [.., r/2] broadcastable to x[..., :r/2]."""
    x = x.double()
    if interleaved:
        a, b = x[..., 0:r:2], x[..., 1:r:2]
    else:
        a, b = x[..., : r // 2], x[..., r // 2 : r]
    c, s = cos.double(), sin.double()
    o1, o2 = a * c - b * s, b * c + a * s
    rot = torch.stack((o1, o2), -1).flatten(-2) if interleaved else torch.cat((o1, o2), -1)
    return torch.cat((rot, x[..., r:]), -1)


def table(S, half, dtype, device, B=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    ang = torch.rand(*((B,) if B else ()), S, half, generator=g, dtype=torch.float64) * 40 - 20
    return ang.cos().to(dtype).to(device), ang.sin().to(dtype).to(device)


def head_view(c, layout):
    c3 = c if c.dim() == 3 else c[None]
    return c3[:, :, None] if layout == "bshd" else c3[:, None]


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype,tdt", [(torch.bfloat16, torch.float32), (torch.bfloat16, torch.bfloat16),
                                       (torch.float16, torch.float32), (torch.float32, torch.float32)])
@pytest.mark.parametrize("Dh", [16, 72])
def test_apply_rope(backend, device, interleaved, dtype, tdt, Dh):
    torch.manual_seed(Dh)
    B, S, H = 2, 5, 3
    x = testing.log_uniform(B, S, H, Dh, dtype=dtype, device=device)
    cos, sin = table(S, Dh // 2, tdt, device)
    out = rope.apply_rope(x, cos, sin, interleaved=interleaved, backend=backend)
    ref = rope.apply_rope_reference(x, cos, sin, interleaved=interleaved)
    want64 = rot64(x, head_view(cos, "bshd"), head_view(sin, "bshd"), interleaved, Dh)
    check(OP, backend, out, ref, want64, vs_eager=tdt == torch.float32)
    assert out.is_contiguous()


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_tables_layouts_and_views(backend, device, interleaved, layout):
    """Full-width tables, per-batch tables, partial rotary, [B, H, S, Dh], views of a fused QKV."""
    torch.manual_seed(1)
    B, S, H, Dh, r = 2, 6, 4, 32, 24
    qkv = testing.log_uniform(B, S, 3, H, Dh, dtype=torch.bfloat16, device=device)
    x = qkv[:, :, 1] if layout == "bshd" else qkv[:, :, 1].transpose(1, 2)
    cos, sin = table(S, r // 2, torch.float32, device, B=B)
    full = (torch.repeat_interleave if interleaved else lambda t, n, dim: torch.cat([t, t], dim))
    cf, sf = full(cos, 2, dim=-1), full(sin, 2, dim=-1)
    want64 = rot64(x, head_view(cos, layout), head_view(sin, layout), interleaved, r)
    for c, s in ((cos, sin), (cf, sf)):
        out = rope.apply_rope(x, c, s, interleaved=interleaved, rotary_dim=r, layout=layout, backend=backend)
        ref = rope.apply_rope_reference(x, c, s, interleaved=interleaved, rotary_dim=r, layout=layout)
        check(OP, backend, out, ref, want64)
        testing.assert_exact(out[..., r:], x[..., r:])  # the tail passes through
    # a batch-1 table broadcasts
    c1, s1 = cos[:1], sin[:1]
    out = rope.apply_rope(x, c1, s1, interleaved=interleaved, rotary_dim=r, layout=layout, backend=backend)
    check(OP, backend, out, rope.apply_rope_reference(x, c1, s1, interleaved=interleaved, rotary_dim=r,
                                                      layout=layout))


def test_inplace(backend, device):
    torch.manual_seed(2)
    B, S, H, Dh = 1, 4, 2, 16
    qkv = testing.log_uniform(B, S, 3, H, Dh, dtype=torch.bfloat16, device=device)
    cos, sin = table(S, 6, torch.float32, device)
    want = rope.apply_rope_reference(qkv[:, :, 0], cos, sin, rotary_dim=12)
    before = qkv.clone()
    q = qkv[:, :, 0]
    res = rope.apply_rope(q, cos, sin, rotary_dim=12, inplace=True, backend=backend)
    assert res is q
    check(OP, backend, q, want)
    testing.assert_exact(qkv[:, :, 1:], before[:, :, 1:])  # k and v untouched
    testing.assert_exact(q[..., 12:], before[:, :, 0, ..., 12:])


def test_complex_freqs(backend, device):
    torch.manual_seed(3)
    B, S, H, Dh = 2, 5, 2, 16
    x = testing.log_uniform(B, S, H, Dh, dtype=torch.bfloat16, device=device)
    g = torch.Generator().manual_seed(0)
    ang = torch.rand(S, Dh // 2, generator=g) * 10
    f = torch.polar(torch.ones_like(ang), ang).to(device)
    out = rope.apply_rope(x, f, backend=backend) if backend != "triton_exact" else None
    ref = rope.apply_rope_reference(x, f)
    if backend == "triton_exact":
        with pytest.raises(UnsupportedInputError, match="complex"):
            rope.apply_rope(x, f, backend=backend)
        return
    check(OP, backend, out, ref, rot64(x, ang.cos()[None, :, None].to(device), ang.sin()[None, :, None].to(device),
                                      True, Dh))
    with pytest.raises(UnsupportedInputError, match="interleaved=False"):
        rope.apply_rope(x, f, interleaved=False, backend=backend)


@pytest.mark.op("rope.apply_rope_qk")
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_apply_rope_qk(backend, device, layout):
    torch.manual_seed(4)
    B, S, Dh = 2, 5, 16
    shape = (lambda H: (B, S, H, Dh)) if layout == "bshd" else (lambda H: (B, H, S, Dh))
    q = testing.log_uniform(*shape(4), dtype=torch.bfloat16, device=device)
    k = testing.log_uniform(*shape(1), dtype=torch.bfloat16, device=device)  # MQA
    cos, sin = table(S, Dh // 2, torch.float32, device)
    qo, ko = rope.apply_rope_qk(q, k, cos, sin, layout=layout, backend=backend)
    qr, kr = rope.apply_rope_qk_reference(q, k, cos, sin, layout=layout)
    check("rope.apply_rope_qk", backend, qo, qr)
    check("rope.apply_rope_qk", backend, ko, kr)


def freqs64(axes, theta):
    return torch.tensor([theta ** (-2 * j / d) for d in axes for j in range(d // 2)], dtype=torch.float64)


@pytest.mark.op("rope.rope_3d")
@pytest.mark.parametrize("interleaved", [True, False])
def test_rope_3d_grid(backend, device, interleaved):
    torch.manual_seed(5)
    T, Hh, W, H, Dh = 3, 4, 5, 2, 32
    axes = (8, 12, 12)
    x = testing.log_uniform(1, T * Hh * W, H, Dh, dtype=torch.bfloat16, device=device)
    out = rope.rope_3d(x, (T, Hh, W), axes, theta=10000.0, interleaved=interleaved, backend=backend)
    ref = rope.rope_3d_reference(x, (T, Hh, W), axes, theta=10000.0, interleaved=interleaved)
    tt, hh, ww = torch.meshgrid(torch.arange(T), torch.arange(Hh), torch.arange(W), indexing="ij")
    pos = torch.stack((tt, hh, ww), -1).reshape(-1, 3).double()
    axis = torch.tensor([a for a, d in enumerate(axes) for _ in range(d // 2)])
    ang = pos[:, axis] * freqs64(axes, 10000.0)
    want64 = rot64(x.cpu(), ang.cos()[None, :, None], ang.sin()[None, :, None], interleaved, Dh)
    check("rope.rope_3d", backend, out, ref, want64.to(device))
    # the same rotation as apply_rope with the table diffusers would build
    via_table = rope.apply_rope(x, ang.cos().float().to(device), ang.sin().float().to(device),
                                interleaved=interleaved, backend=backend)
    atol, rtol = contract("rope.rope_3d", backend).tolerance(out.dtype)
    testing.assert_close(out, via_table, atol=atol, rtol=rtol)


@pytest.mark.op("rope.rope_3d")
def test_rope_3d_position_ids(backend, device):
    """Flux style: text tokens at (0, 0, 0), image tokens at (0, h, w); ids as floats, per batch or shared."""
    torch.manual_seed(6)
    txt, Hh, W, Dh = 3, 2, 4, 32
    axes = (4, 14, 14)
    grid = torch.meshgrid(torch.zeros(1), torch.arange(float(Hh)), torch.arange(float(W)), indexing="ij")
    img = torch.stack(grid, -1)
    ids = torch.cat([torch.zeros(txt, 3), img.reshape(-1, 3)]).to(device)
    x = testing.log_uniform(2, ids.shape[0], 3, Dh, dtype=torch.bfloat16, device=device)
    for p in (ids, ids[None].expand(2, -1, -1).contiguous(), ids.to(torch.int64)):
        out = rope.rope_3d(x, axes_dim=axes, pos_ids=p, interleaved=True, backend=backend)
        ref = rope.rope_3d_reference(x, axes_dim=axes, pos_ids=p, interleaved=True)
        check("rope.rope_3d", backend, out, ref)


def norm64(x, w, norm, eps=1e-6):
    x = x.double()
    if norm == "layer":
        x = x - x.mean(-1, keepdim=True)
    y = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w.double()


@pytest.mark.op("rope.qk_norm_rope")
@pytest.mark.parametrize("norm", ["rms", "layer"])
@pytest.mark.parametrize("wdt", [None, torch.bfloat16, torch.float32])
def test_qk_norm_rope(backend, device, norm, wdt):
    torch.manual_seed(7)
    B, S, Dh, r = 2, 4, 24, 16
    qkv = testing.log_uniform(B, S, 3, 3, Dh, dtype=torch.bfloat16, device=device) * 3 + 0.5
    q, k = qkv[:, :, 0], qkv[:, :, 1]
    qw = kw = None
    if wdt is not None:
        qw = (torch.rand(Dh, device=device) + 0.5).to(wdt)
        kw = (torch.rand(Dh, device=device) + 0.5).to(wdt)
    cos, sin = table(S, r // 2, torch.float32, device)
    op = "rope.qk_norm_rope"
    c64, s64 = head_view(cos, "bshd"), head_view(sin, "bshd")
    want_q = rot64(norm64(q, qw, norm), c64, s64, False, r)
    want_k = rot64(norm64(k, kw, norm), c64, s64, False, r)
    for kw_args in ({"rotary_dim": r}, {"rotary_dim": r, "out_layout": "bhsd"}, {"rotary_dim": r, "inplace": False}):
        qr, kr = rope.qk_norm_rope_reference(q.clone(), k.clone(), qw, kw, cos, sin, norm=norm, **kw_args)
        qi, ki = q.clone(), k.clone()
        qo, ko = rope.qk_norm_rope(qi, ki, qw, kw, cos, sin, norm=norm, backend=backend, **kw_args)
        wq, wk = want_q, want_k
        if kw_args.get("out_layout") == "bhsd":
            assert qo.shape == (B, 3, S, Dh) and qo.is_contiguous()
            wq, wk = want_q.transpose(1, 2), want_k.transpose(1, 2)
        if len(kw_args) == 1:  # default: in place
            assert qo is qi and ko is ki
        check(op, backend, qo, qr, wq.to(device))
        check(op, backend, ko, kr, wk.to(device))


def test_empty(backend, device):
    x = torch.empty(2, 0, 3, 16, dtype=torch.bfloat16, device=device)
    cos, sin = table(0, 8, torch.float32, device)
    assert rope.apply_rope(x, cos, sin, backend=backend).shape == x.shape


def test_errors(device):
    x = torch.randn(2, 5, 3, 16, device=device)
    cos, sin = table(5, 8, torch.float32, device)
    cases = [
        ((x[..., ::2], cos[:, :4], sin[:, :4]), {}, "contiguous"),
        ((x, cos[:4], sin[:4]), {}, "sequence length 5"),
        ((x, cos[:, :5], sin[:, :5]), {}, "neither head_dim"),
        ((x, cos, sin), {"rotary_dim": 6}, "rotary_dim"),
        ((x, cos, sin[:, :4]), {}, "sin must match cos"),
        ((x[0], cos, sin), {}, "4-D"),
        ((x, cos, sin), {"layout": "sbhd"}, "layout"),
        ((x.to(torch.int32), cos, sin), {}, "dtype"),
    ]
    for args, kw, msg in cases:
        with pytest.raises(UnsupportedInputError, match=msg):
            rope.apply_rope(*args, **kw)
        assert not rope.can_use_apply_rope(*args, **kw)
    with pytest.raises(UnsupportedInputError, match="grid_thw"):
        rope.rope_3d(x, (1, 2, 2), (4, 6, 6))
    with pytest.raises(UnsupportedInputError, match="sums to"):
        rope.rope_3d(x, (1, 1, 5), (4, 6, 4), rotary_dim=16)
    with pytest.raises(UnsupportedInputError, match="axes_dim"):
        rope.rope_3d(x, (1, 1, 5), (4, 6))
    with pytest.raises(UnsupportedInputError, match="rotary_dim=12 to rotate the first 12 dims"):
        rope.rope_3d(x, (1, 1, 5), (4, 4, 4))  # 12 of 16 dims: partial rotary only when asked for
    with pytest.raises(UnsupportedInputError, match="cannot change the layout"):
        rope.qk_norm_rope(x, x, None, None, cos, sin, inplace=True, out_layout="bhsd")
    with pytest.raises(UnsupportedInputError, match="norm must be"):
        rope.qk_norm_rope(x, x, None, None, cos, sin, norm="group")
    with pytest.raises(UnsupportedInputError, match="k must match q"):
        rope.apply_rope_qk(x, x[:, :4], cos, sin)
    # in place: an expanded view (stride 0 over heads) or q and k the same tensor would rotate
    # some elements twice; a fused-QKV view (disjoint slices of one tensor) is fine
    expanded = x[:, :, :1].expand(2, 5, 3, 16)
    with pytest.raises(UnsupportedInputError, match="expanded or overlapping"):
        rope.apply_rope(expanded, cos, sin, inplace=True)
    assert rope.apply_rope(expanded, cos, sin).shape == expanded.shape  # out of place: allowed
    overlapping = torch.randn(2 * 5 * 3 * 8 + 8, device=device).as_strided((2, 5, 3, 16), (120, 24, 8, 1))
    with pytest.raises(UnsupportedInputError, match="expanded or overlapping"):
        rope.apply_rope(overlapping, cos, sin, inplace=True)
    rope.apply_rope_qk(x.clone(), x.clone(), cos, sin, inplace=True)  # caches the plan of this signature
    with pytest.raises(UnsupportedInputError, match="same address"):  # checked per call, not per plan
        rope.apply_rope_qk(x, x, cos, sin, inplace=True)
    with pytest.raises(UnsupportedInputError, match="same address"):
        rope.qk_norm_rope(x, x, None, None, cos, sin, inplace=True)
    q, k, _ = torch.randn(2, 5, 3, 3, 16, device=device).unbind(2)
    assert rope.can_use_apply_rope_qk(q, k, cos, sin, inplace=True)
    assert rope.can_use_apply_rope(x, cos, sin)
    assert not rope.can_use_apply_rope("x", cos, sin)
    verdicts = explain("rope.apply_rope", x, cos, sin)
    assert "torch" in str(verdicts)


def test_rope_3d_axes_dim_against_head_dim(device):
    """axes_dim summing past head_dim names axes_dim (not a rotary_dim nobody passed); a partial
    rotary (axes_dim summing to less) needs rotary_dim, and then leaves the tail as it was."""
    x = torch.randn(1, 8, 2, 64, device=device)
    with pytest.raises(UnsupportedInputError) as info:
        rope.rope_3d(x, (1, 2, 4), (16, 16, 40))
    assert "axes_dim (16, 16, 40) sums to 72, more than head_dim 64" in str(info.value)
    assert "rotary_dim" not in str(info.value)
    assert not rope.can_use_rope_3d(x, (1, 2, 4), (16, 16, 16))
    out = rope.rope_3d(x, (1, 2, 4), (16, 16, 16), rotary_dim=48)
    assert torch.equal(out[..., 48:], x[..., 48:]) and not torch.equal(out[..., :48], x[..., :48])
    torch.testing.assert_close(out, rope.rope_3d_reference(x, (1, 2, 4), (16, 16, 16), rotary_dim=48))


def test_opcheck_and_compile(backend, device):
    import torch._dynamo

    B, S, H, Dh = 1, 4, 2, 16
    q = testing.log_uniform(B, S, H, Dh, dtype=torch.bfloat16, device=device)
    k = testing.log_uniform(B, S, H, Dh, dtype=torch.bfloat16, device=device)
    cos, sin = table(S, Dh // 2, torch.float32, device)
    w = torch.ones(Dh, device=device)
    tail = (0.0, None, backend, "apply_rope_qk", None, None, "bshd", None, None, None, 10000.0, None, "table")
    torch.library.opcheck(torch.ops.sgl_diffusion.rope.default, (q, k, cos, sin, None, None, None, *tail))
    torch.library.opcheck(torch.ops.sgl_diffusion.rope_.default, (q.clone(), k.clone(), cos, sin, None, None, None,
                                                                  *tail))
    norm_backend = None if backend == "triton_exact" else backend

    def block(q, k, cos, sin, w):
        q2, k2 = rope.apply_rope_qk(q, k, cos, sin, backend=backend)
        q3, k3 = rope.qk_norm_rope(q2, k2, w, w, cos, sin, out_layout="bhsd", backend=norm_backend)
        return q3 * 2 + k3

    torch._dynamo.reset()
    assert torch._dynamo.explain(block)(q, k, cos, sin, w).graph_break_count == 0
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(q, k, cos, sin, w), block(q, k, cos, sin, w))


def test_inv_freq_matches_diffusers_formula():
    axes, theta = (16, 56, 56), 10000.0
    x = torch.zeros(1, 4, 1, 128)
    got = torch.tensor(testing.geometry(rope.rope_3d, x, (1, 2, 2), axes, theta=theta).inv_freq, dtype=torch.float64)
    want = torch.cat([1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64)[: d // 2] / d) for d in axes])
    assert torch.equal(got, want)
    assert math.isclose(float(got[8]), 1.0)
