"""Varlen metadata, q/k/v packing and scatter are torch.equal to their eager chains on every backend.

Masks: ragged (a sample with no valid token, a fully valid one, holes), all valid, none
valid, B=1, and S=1100 (two 1024-wide chunks of the meta kernel's prefix sum, the second
masked). q/k/v: contiguous, a permuted [B, H, S, Dh] tensor read through its strides, and
q/k/v with different strides. Bad index values: one below the range, the first past its
end, one far past it (2^62); checked they raise, unchecked they give NaN rows.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import IndexOutOfRangeError, UnsupportedInputError, testing

OP = "layout.varlen_pack_qkv"


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


def masks(device):
    g = torch.Generator().manual_seed(0)
    ragged = torch.rand(4, 9, generator=g) < 0.5
    ragged[1] = False  # a sample with zero valid tokens
    ragged[2] = True  # a fully valid sample
    return {
        "ragged": ragged,
        "full": torch.ones(2, 5, dtype=torch.bool),
        "none": torch.zeros(3, 4, dtype=torch.bool),
        "b1-prefix": torch.arange(7) < 4,
        "long": torch.rand(2, 1100, generator=g) < 0.7,
        "strided": (torch.rand(9, 3, generator=g) < 0.5).t(),
        # 4 samples of 3 chunks (the Triton backend's 1024-token chunks): a zero-token and a full
        # sample between ragged ones, chunk boundaries inside runs
        "chunks": torch.stack([torch.rand(2500, generator=g) < 0.6, torch.zeros(2500, dtype=torch.bool),
                               torch.ones(2500, dtype=torch.bool), torch.rand(2500, generator=g) < 0.1]),
        # more than 1024 chunks: the second kernel's sum over earlier chunks takes two steps
        "many": torch.rand(1100, 3, generator=g) < 0.5,
    }


def _mask(name, device):
    m = masks(device)[name]
    return (m[None] if m.dim() == 1 else m).to(device)


@pytest.mark.parametrize("name", ["ragged", "full", "none", "b1-prefix", "long", "strided", "chunks", "many"])
def test_meta_matches_eager(backend, device, name):
    mask = _mask(name, device)
    idx, cu, mx, inv = lay.build_varlen_meta(mask, backend=backend)
    r_idx, r_cu, r_mx, r_inv = lay.build_varlen_meta_reference(mask)
    assert idx.dtype == torch.int64 and cu.dtype == torch.int32 and inv.dtype == torch.int64
    testing.assert_exact(idx, r_idx)
    testing.assert_exact(cu, r_cu)
    testing.assert_exact(inv, r_inv)
    assert mx == r_mx and isinstance(mx, int)
    # independent facts: nonzero order, counts, inverse of indices
    testing.assert_exact(idx, torch.nonzero(mask.reshape(-1)).flatten())
    assert cu[-1].item() == int(mask.sum()) and mx == (int(mask.sum(1).max()) if mask.shape[0] else 0)


@pytest.mark.parametrize("name", ["ragged", "full", "none", "b1-prefix"])
@pytest.mark.parametrize("layout", ["contiguous", "bhsd-view", "mixed"])
def test_pack_and_scatter(backend, device, name, layout):
    torch.manual_seed(1)
    mask = _mask(name, device)
    B, S = mask.shape
    H, Dh = 3, 24
    if layout == "contiguous":
        q, k, v = (rnd(B, S, H, Dh, device=device) for _ in range(3))
    elif layout == "bhsd-view":
        q, k, v = (rnd(B, H, S, Dh, device=device).transpose(1, 2) for _ in range(3))
    else:
        q = rnd(B, S, H, Dh, device=device)
        k = rnd(B, H, S, Dh, device=device).transpose(1, 2)
        v = rnd(B, S, H, 2 * Dh, device=device)[..., Dh:]
    idx, cu, mx, inv = lay.build_varlen_meta_reference(mask)
    packed = lay.varlen_pack_qkv(q, k, v, idx, backend=backend)
    for got, t in zip(packed, (q, k, v)):
        assert got.is_contiguous()
        testing.assert_exact(got, t.reshape(B * S, H, Dh).index_select(0, idx))
    o = packed[0]
    for key in (inv, idx):
        out = lay.varlen_scatter(o, key, B, S, backend=backend)
        testing.assert_exact(out, lay.varlen_scatter_reference(o, key, B, S))
        testing.assert_exact(out[mask], q[mask])  # valid tokens back in place
        assert not out[~mask].any()  # zeros at padding


def test_scatter_strided_out(backend, device):
    mask = _mask("ragged", device)
    B, S = mask.shape
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    o = rnd(idx.numel(), 6, 40, dtype=torch.float32, device=device)[:, ::2, 8:32]  # strided heads, offset
    testing.assert_exact(lay.varlen_scatter(o, inv, B, S, backend=backend), lay.varlen_scatter_reference(o, inv, B, S))


def test_bad_inputs(backend, device):
    q = rnd(2, 4, 2, 8, device=device)
    with pytest.raises(UnsupportedInputError, match="1-D int64"):
        lay.varlen_pack_qkv(q, q, q, torch.arange(3, dtype=torch.int32, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match="expected torch.bool"):
        lay.build_varlen_meta(torch.ones(2, 3, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match=r"\[B, S\]"):
        lay.build_varlen_meta(torch.ones(6, dtype=torch.bool, device=device), backend=backend)
    o = rnd(5, 2, 8, device=device)
    with pytest.raises(UnsupportedInputError, match="has 4 entries"):
        lay.varlen_scatter(o, torch.arange(4, device=device), 2, 4, backend=backend)
    assert not lay.can_use_varlen_scatter(o, torch.arange(4, device=device), 2, 4, backend=backend)
    assert lay.can_use_varlen_scatter(o, torch.arange(5, device=device), 2, 4, backend=backend)


# bad values of each index argument: below the range, its first value past the end, far past it
BAD = {"negative": -2, "end": None, "huge": 2**62}


def _bad(idx, where, value, end):
    bad = idx.clone()
    bad[where] = end if value is None else value
    return bad


@pytest.mark.parametrize("bad", list(BAD))
def test_bad_index_raises_in_eager(backend, device, bad):
    """Checked (the default), every backend: IndexOutOfRangeError naming the range found, for
    the pack's indices and for both forms of the scatter's index."""
    mask = _mask("ragged", device)
    B, S = mask.shape
    q = rnd(B, S, 2, 8, device=device)
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    o = rnd(idx.numel(), 2, 8, device=device)
    n, rows = idx.numel(), B * S
    cases = [
        (lambda i: lay.varlen_pack_qkv(q, q, q, i, backend=backend), idx, rows,
         rf"indices values must lie in \[0, {rows}\) \(B\*S = tokens of q, k, v\)"),
        (lambda i: lay.varlen_scatter(o, i, B, S, backend=backend), inv, n,
         rf"inverse_or_indices \(the inverse map\) values must lie in \[-1, {n}\)"),
        (lambda i: lay.varlen_scatter(o, i, B, S, backend=backend), idx, rows,
         rf"inverse_or_indices \(the valid-token indices\) values must lie in \[0, {rows}\)"),
    ]
    for call, good, end, msg in cases:
        value = -1 if bad == "negative" and good is idx else BAD[bad]  # -1 is the inverse map's padding
        wrong = _bad(good, 3, value, end)
        with pytest.raises(IndexOutOfRangeError, match=msg) as info:
            call(wrong)
        assert isinstance(info.value, IndexError) and isinstance(info.value, UnsupportedInputError)
        assert f"got values in [{int(wrong.min())}, {int(wrong.max())}]" in str(info.value)
    # the predicates describe shapes only; they never read index values (no sync)
    assert lay.can_use_varlen_pack_qkv(q, q, q, _bad(idx, 3, BAD[bad], rows), backend=backend)
    assert lay.can_use_varlen_scatter(o, _bad(inv, 3, BAD[bad], n), B, S, backend=backend)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_bad_index_unchecked_gives_nan_rows(backend, device, dtype):
    """check_index=False (what torch.compile and graph capture get), every backend: an
    out-of-range index reads nothing and gives NaN, never a zero row; every other row is the
    same bits as with valid indices, padding stays zero."""
    mask = _mask("ragged", device)
    B, S = mask.shape
    q, k = rnd(B, S, 3, 24, dtype=dtype, device=device), rnd(B, S, 3, 24, dtype=dtype, device=device)
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    n, rows = idx.numel(), B * S
    bad = idx.clone()
    bad[1], bad[4] = -1, rows  # one below, one at B*S (the first token past the end)
    hit = torch.zeros(n, dtype=torch.bool, device=device)
    hit[1] = hit[4] = True
    ref = lay.varlen_pack_qkv_reference(q, k, q, idx)
    for got, want in zip(lay.varlen_pack_qkv(q, k, q, bad, check_index=False, backend=backend), ref):
        assert got[hit].isnan().all()
        testing.assert_exact(got[~hit], want[~hit])

    o = ref[0]
    bad_inv = inv.clone()
    p_lo, p_hi = idx[0], idx[2]  # two valid tokens get entries out of range
    bad_inv[p_lo], bad_inv[p_hi] = -7, n
    out = lay.varlen_scatter(o, bad_inv, B, S, check_index=False, backend=backend).view(rows, 3, 24)
    want = lay.varlen_scatter_reference(o, inv, B, S).view(rows, 3, 24)
    poisoned = torch.zeros(rows, dtype=torch.bool, device=device)
    poisoned[p_lo] = poisoned[p_hi] = True
    assert out[poisoned].isnan().all()
    testing.assert_exact(out[~poisoned], want[~poisoned])
    assert not out[~mask.reshape(-1)].any()  # padding rows: zeros

    # the indices form: an index out of range names no row of the result, so all of it is NaN
    assert lay.varlen_scatter(o, bad, B, S, check_index=False, backend=backend).isnan().all()


def test_bad_index_under_compile_gives_nan_rows(backend, device):
    """Under torch.compile there is no host check: the custom ops run unchecked."""
    mask = _mask("ragged", device)
    B, S = mask.shape
    q = rnd(B, S, 2, 16, device=device)
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    bad, bad_inv = idx.clone(), inv.clone()
    bad[0] = B * S
    bad_inv[idx[1]] = -3

    def f(q, i, inv):
        packed = lay.varlen_pack_qkv(q, q, q, i, backend=backend)
        return packed[0], lay.varlen_scatter(packed[0], inv, B, S, backend=backend)

    packed, out = torch.compile(f, fullgraph=True, backend="aot_eager")(q, bad, bad_inv)
    ref = lay.varlen_pack_qkv_reference(q, q, q, idx)[0]
    assert packed[0].isnan().all()
    testing.assert_exact(packed[1:], ref[1:])
    b1, s1 = divmod(int(idx[1]), S)
    assert out[b1, s1].isnan().all()


def test_indices_are_reduced_once_until_written(backend, device, monkeypatch):
    """The metadata of one mask serves every attention layer: the default check reduces each
    index tensor (one host sync) once, not again while it is unmodified; an in-place write
    is seen and the next call raises. ``"always"`` reduces on every call."""
    from sgl_diffusion_core import forget_index_checks

    mask = _mask("ragged", device)
    B, S = mask.shape
    q = rnd(B, S, 2, 16, device=device)
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    reductions = []
    real = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda t, *a, **k: reductions.append(1) or real(t, *a, **k))
    forget_index_checks()
    for _ in range(3):  # three "layers"
        packed = lay.varlen_pack_qkv(q, q, q, idx, backend=backend)
        lay.varlen_scatter(packed[0], inv, B, S, backend=backend)
    assert len(reductions) == 2  # idx once, inv once
    inv[idx[1]] = idx.numel()  # the inverse map now points past the packed rows
    with pytest.raises(IndexOutOfRangeError, match="inverse map"):
        lay.varlen_scatter(packed[0], inv, B, S, backend=backend)
    idx[0] = -1
    with pytest.raises(IndexOutOfRangeError, match="min -1 < 0"):
        lay.varlen_pack_qkv(q, q, q, idx, backend=backend)
    assert len(reductions) == 4
    fresh = lay.build_varlen_meta_reference(mask)[0]
    for _ in range(2):
        lay.varlen_pack_qkv(q, q, q, fresh, check_index="always", backend=backend)
    assert len(reductions) == 6
    with pytest.raises(ValueError, match="check_index must be True, False or 'always'"):
        lay.varlen_scatter(packed[0], fresh, B, S, check_index="once", backend=backend)
    forget_index_checks()


def test_indices_into_no_tokens(backend, device):
    """q, k, v with no tokens (B*S = 0) and indices to pick: no index can be valid, a shape problem."""
    q = rnd(2, 0, 2, 8, device=device)
    with pytest.raises(UnsupportedInputError, match=r"no tokens \(B\*S = 0\)"):
        lay.varlen_pack_qkv(q, q, q, torch.zeros(3, dtype=torch.int64, device=device), check_index=False,
                            backend=backend)
    empty = lay.varlen_pack_qkv(q, q, q, torch.zeros(0, dtype=torch.int64, device=device), backend=backend)
    assert [t.shape for t in empty] == [(0, 2, 8)] * 3


def test_reference_is_the_bare_chain(device):
    """The references are the eager chains unguarded: on CPU eager indexing raises on a bad index."""
    if device.type != "cpu":
        pytest.skip("eager indexing asserts on the device (fatal) rather than raising there")
    q = rnd(1, 4, 2, 8, device=device)
    with pytest.raises((IndexError, RuntimeError)):
        lay.varlen_pack_qkv_reference(q, q, q, torch.tensor([0, 4], device=device))
    with pytest.raises((IndexError, RuntimeError)):
        lay.varlen_scatter_reference(q[0], torch.tensor([0, 1, 2, 9], device=device), 1, 3)


def test_compile_fullgraph(backend, device):
    """Data-dependent sizes: the meta op traces with an unbacked size (needs capture_scalar_outputs
    for max_seqlen); pack and scatter then trace as usual."""
    mask = _mask("ragged", device)
    B, S = mask.shape
    q = rnd(B, S, 2, 16, device=device)

    def f(mask, q):
        idx, cu, mx, inv = lay.build_varlen_meta(mask, backend=backend)
        packed = lay.varlen_pack_qkv(q, q, q, idx, backend=backend)
        return lay.varlen_scatter(packed[0], inv, B, S, backend=backend), cu, mx

    with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        out, cu, mx = torch.compile(f, fullgraph=True, backend="aot_eager")(mask, q)
    ref = lay.build_varlen_meta_reference(mask)
    testing.assert_exact(cu, ref[1])
    assert mx == ref[2]
    testing.assert_exact(out, torch.where(mask[:, :, None, None], q, torch.zeros_like(q)))
