"""indexed_scale_shift / indexed_gated_residual(_) are torch.equal to their eager chains, on every backend.

The chains pick a table row per token with advanced indexing, ``table[arange(B)[:, None], index]``
(``*_reference``, unguarded). Grid: K=1 (every token the same row), 2 (Qwen-Image-Edit:
reference / target tokens), 3; D=1 (degenerate), 7 and 130 (masked tails), 3072 (two
column tiles at bf16, the second masked). Out-of-range indices: eager calls raise before
any kernel runs; unchecked calls (``check_index=False``, torch.compile) give NaN rows and
leave every valid row bit-exact.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import UnsupportedInputError, explain, testing

OP = "modulate.indexed_scale_shift"  # conftest: both indexed ops have the same backends
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
B, S = 2, 5

rnd = testing.log_uniform


def _index(K, shape, dtype=torch.int64, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, K, shape, generator=g).to(dtype).to(device)


def check_ss(backend, x, sc, sh, index, **kw):
    out = mod.indexed_scale_shift(x, sc, sh, index, backend=backend, **kw)
    ref = mod.indexed_scale_shift_reference(x, sc, sh, index, **kw)
    assert out.is_contiguous() and out.shape == x.shape
    testing.assert_exact(out, ref)
    return out


def check_gr(backend, r, u, g, index):
    out = mod.indexed_gated_residual(r, u, g, index, backend=backend)
    ref = mod.indexed_gated_residual_reference(r, u, g, index)
    assert out.is_contiguous() and out.shape == r.shape
    testing.assert_exact(out, ref)
    r_ours, r_ref = r.clone(), r.clone()
    assert mod.indexed_gated_residual_(r_ours, u, g, index, backend=backend) is r_ours
    mod.indexed_gated_residual_reference(r_ref, u, g, index, inplace=True)
    testing.assert_exact(r_ours, r_ref)
    return out


def test_reference_is_the_documented_chain(device):
    """The reference is literally x * (1 + table[arange(B)[:, None], index]) + shift (guards the tests' oracle)."""
    x = rnd(B, S, 16, dtype=torch.bfloat16, device=device)
    sc, sh = rnd(B, 3, 16, dtype=torch.bfloat16, device=device), rnd(B, 3, 16, dtype=torch.bfloat16, device=device)
    idx = _index(3, (B, S), device=device)
    ar = torch.arange(B, device=device)[:, None]
    testing.assert_exact(mod.indexed_scale_shift_reference(x, sc, sh, idx), x * (1 + sc[ar, idx]) + sh[ar, idx])
    u = rnd(B, S, 16, dtype=torch.bfloat16, device=device)
    testing.assert_exact(mod.indexed_gated_residual_reference(x, u, sc, idx), x + sc[ar, idx] * u)


@pytest.mark.parametrize("D", [1, 7, 130, 3072])
@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("dtype", DTYPES)
def test_grid(backend, device, D, K, dtype):
    torch.manual_seed(D * 10 + K)
    x = rnd(B, S, D, dtype=dtype, device=device)
    u = rnd(B, S, D, dtype=dtype, device=device)
    tab = rnd(B, K, D, dtype=dtype, device=device, scale=0.3)
    idx = _index(K, (B, S), device=device, seed=D + K)
    check_ss(backend, x, tab, tab.flip(1), idx)
    check_gr(backend, x, u, tab, idx)


@pytest.mark.parametrize("tables", ["per-sample", "b1", "shared", "mixed"])
@pytest.mark.parametrize("index", ["per-sample", "b1", "shared", "strided"])
def test_layouts(backend, device, tables, index):
    """Tables [B, K, D] / [1, K, D] / [K, D] (and one of each), index [B, S] / [1, S] / [S] / a strided view."""
    torch.manual_seed(3)
    K, D = 3, 130
    dt = torch.bfloat16
    x, u = rnd(B, S, D, dtype=dt, device=device), rnd(B, S, D, dtype=dt, device=device)

    def t(*lead):
        return rnd(*lead, K, D, dtype=dt, device=device, scale=0.5)

    sc, sh = {"per-sample": (t(B), t(B)), "b1": (t(1), t(1)), "shared": (t(), t()), "mixed": (t(B), t())}[tables]
    idx = {
        "per-sample": lambda: _index(K, (B, S), device=device),
        "b1": lambda: _index(K, (1, S), device=device),
        "shared": lambda: _index(K, (S,), device=device),
        "strided": lambda: _index(K, (S, 2 * B), device=device).t()[::2],  # [B, S], strides (2, 2B)
    }[index]()
    check_ss(backend, x, sc, sh, idx)
    check_ss(backend, x, sc, None, idx, scale_offset=0.0)
    check_ss(backend, x, sc, sh, idx, scale_offset=0.1)  # not representable in bf16: CPU eager rounds it
    check_gr(backend, x, u, sh, idx)


def test_strided_table_views(backend, device):
    """Tables that are chunks of a modulation projection: row stride != D, batch stride != K*D."""
    torch.manual_seed(4)
    K, D = 2, 130
    x, u = rnd(B, S, D, dtype=torch.bfloat16, device=device), rnd(B, S, D, dtype=torch.bfloat16, device=device)
    proj = rnd(B, K, 6 * D, dtype=torch.bfloat16, device=device, scale=0.3)  # [B, K, 6D] -> 6 chunks
    shift, scale, gate = proj[..., :D], proj[..., D:2 * D], proj[..., 2 * D:3 * D]
    idx = _index(K, (B, S), device=device)
    check_ss(backend, x, scale, shift, idx)
    check_gr(backend, x, u, gate, idx)
    every_other = rnd(B, 2 * K, D, dtype=torch.bfloat16, device=device)[:, ::2]  # row stride 2D
    check_ss(backend, x, every_other, None, idx)
    check_gr(backend, x, u, every_other[0], idx)  # shared view [K, D]
    x_view = rnd(B, S + 3, D + 4, dtype=torch.bfloat16, device=device)[:, 1:S + 1, 2:D + 2]
    check_ss(backend, x_view, scale, shift, idx)
    check_gr(backend, x_view, u, gate, idx)


@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_index_dtypes(backend, device, idt):
    torch.manual_seed(5)
    K, D = 3, 64
    x, u = rnd(B, S, D, dtype=torch.float16, device=device), rnd(B, S, D, dtype=torch.float16, device=device)
    tab = rnd(B, K, D, dtype=torch.float16, device=device)
    idx = _index(K, (B, S), idt, device)
    check_ss(backend, x, tab, tab, idx)
    check_gr(backend, x, u, tab, idx)


@pytest.mark.parametrize(
    "xdt,tdt",
    [(torch.bfloat16, torch.float32), (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
     (torch.float32, torch.bfloat16)],
)
def test_type_promotion(backend, device, xdt, tdt):
    """bf16 x with fp32 tables (Wan-style modulation): eager promotes, out of place to fp32; in place stays bf16."""
    torch.manual_seed(6)
    K, D = 2, 200
    x, u = rnd(B, S, D, dtype=xdt, device=device), rnd(B, S, D, dtype=xdt, device=device)
    sc, sh = rnd(B, K, D, dtype=tdt, device=device, scale=0.2), rnd(K, D, dtype=tdt, device=device)
    idx = _index(K, (B, S), device=device)
    assert check_ss(backend, x, sc, sh, idx).dtype == torch.promote_types(xdt, tdt)
    assert check_gr(backend, x, u, sc, idx).dtype == torch.promote_types(xdt, tdt)
    other = torch.float32 if tdt != torch.float32 else torch.bfloat16
    check_ss(backend, x, sc, sh.to(other), idx)  # shift promotes once more


def test_specials(backend, device):
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3e38, -3e38, 1e-40])
    x = special.repeat(B * 8).reshape(B, 8, 8).to(device)
    tab = torch.stack([special, special.flip(0)]).to(device)
    idx = _index(2, (B, 8), device=device)
    check_ss(backend, x, tab, tab.flip(0), idx)
    check_ss(backend, x.to(torch.bfloat16), tab.to(torch.bfloat16), None, idx)
    check_gr(backend, x, x.flip(2), tab, idx)


@pytest.mark.parametrize("shape", [(0, 3, 64), (2, 0, 64)])
def test_empty(backend, device, shape):
    x = torch.randn(shape, device=device).to(torch.bfloat16)
    tab = torch.randn(2, 64, device=device)
    idx = torch.zeros(shape[:2], dtype=torch.int64, device=device)
    out = mod.indexed_scale_shift(x, tab, tab, idx, backend=backend)
    assert out.shape == x.shape and out.dtype == torch.float32  # bf16 * fp32 promotes
    assert mod.indexed_gated_residual(x, x, tab, idx, backend=backend).shape == x.shape
    assert mod.indexed_gated_residual_(x, x, tab.bfloat16(), idx, backend=backend) is x


# ---- out-of-range index values ------------------------------------------------------------------

BAD = {"negative": -1, "K": 3, "huge": 2**31 - 1}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_bad_index_raises_in_eager(backend, device, bad, idt):
    """Checked (the default): IndexOutOfRangeError naming the range found, before anything is written."""
    K, D = 3, 40
    x, u = rnd(B, S, D, device=device), rnd(B, S, D, device=device)
    tab = rnd(B, K, D, device=device)
    idx = _index(K, (B, S), idt, device)
    idx[1, 3] = BAD[bad]
    msg = rf"index values must lie in \[0, 3\).*got values in \[{min(0, BAD[bad])}|{BAD[bad]}"
    for call in (lambda: mod.indexed_scale_shift(x, tab, tab, idx, backend=backend),
                 lambda: mod.indexed_gated_residual(x, u, tab, idx, backend=backend)):
        with pytest.raises(mod.IndexOutOfRangeError, match=msg) as info:
            call()
        assert isinstance(info.value, IndexError) and isinstance(info.value, UnsupportedInputError)
        assert str(BAD[bad]) in str(info.value)
    before = x.clone()
    with pytest.raises(IndexError):
        mod.indexed_gated_residual_(x, u, tab, idx, backend=backend)
    testing.assert_exact(x, before)  # checked before any kernel ran
    # the predicate describes shapes only; it never reads index values (no sync)
    assert mod.can_use_indexed_scale_shift(x, tab, tab, idx, backend=backend)


def _bad_case(device, dtype=torch.bfloat16):
    K, D = 3, 130
    x, u = rnd(B, S, D, dtype=dtype, device=device), rnd(B, S, D, dtype=dtype, device=device)
    tab = rnd(B, K, D, dtype=dtype, device=device)
    good = _index(K, (B, S), device=device)
    bad = good.clone()
    bad[0, 1], bad[1, 4] = -5, K  # one below, one at K (the first row past the end)
    rows = torch.zeros(B, S, dtype=torch.bool, device=device)
    rows[0, 1] = rows[1, 4] = True
    return x, u, tab, good, bad, rows


def _assert_poisoned(out, ref, rows):
    """NaN over whole bad rows, every other row bit-exact to the reference computed with valid indices."""
    assert out[rows].isnan().all(), out[rows]
    testing.assert_exact(out[~rows], ref[~rows])


@pytest.mark.parametrize("dtype", DTYPES)
def test_bad_index_unchecked_gives_nan_rows(backend, device, dtype):
    """check_index=False (what torch.compile and graph capture get): no out-of-bounds read, NaN rows."""
    x, u, tab, good, bad, rows = _bad_case(device, dtype)
    out = mod.indexed_scale_shift(x, tab, tab, bad, check_index=False, backend=backend)
    _assert_poisoned(out, mod.indexed_scale_shift_reference(x, tab, tab, good), rows)
    out = mod.indexed_gated_residual(x, u, tab, bad, check_index=False, backend=backend)
    _assert_poisoned(out, mod.indexed_gated_residual_reference(x, u, tab, good), rows)
    r = x.clone()
    mod.indexed_gated_residual_(r, u, tab, bad, check_index=False, backend=backend)
    _assert_poisoned(r, mod.indexed_gated_residual_reference(x.clone(), u, tab, good, inplace=True), rows)


def test_bad_index_under_compile_gives_nan_rows(backend, device):
    """Under torch.compile there is no host check: the custom op runs unchecked."""
    import torch._dynamo

    x, u, tab, good, bad, rows = _bad_case(device)

    def block(x, u, tab, idx):
        h = mod.indexed_scale_shift(x, tab, tab, idx, backend=backend)
        return mod.indexed_gated_residual(x, h.to(x.dtype), tab, idx, backend=backend)

    torch._dynamo.reset()
    f = torch.compile(block, fullgraph=True, backend="aot_eager")
    ref = block(x, u, tab, good)
    _assert_poisoned(f(x, u, tab, bad), ref, rows)
    with pytest.raises(IndexError):  # the same call in eager checks
        block(x, u, tab, bad)


def test_an_index_is_reduced_once_until_written(backend, device, monkeypatch):
    """A DiT's index serves every block: the default check reduces it (one host sync) the first
    time, not again while its version counter is unchanged; an in-place write is seen, and the
    next call raises instead of writing NaN rows. ``"always"`` reduces on every call."""
    from sgl_diffusion_core import forget_index_checks

    x, u, tab, good, bad, rows = _bad_case(device)
    reductions = []
    real = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda t, *a, **k: reductions.append(1) or real(t, *a, **k))
    forget_index_checks()
    index = good.clone()
    for _ in range(3):  # three "blocks"
        h = mod.indexed_scale_shift(x, tab, tab, index, backend=backend)
        mod.indexed_gated_residual(x, h, tab, index, backend=backend)
    assert len(reductions) == 1
    index.copy_(bad)  # how a static index is refilled for the next request
    for call in (lambda: mod.indexed_scale_shift(x, tab, tab, index, backend=backend),
                 lambda: mod.indexed_gated_residual_(x.clone(), u, tab, index, backend=backend)):
        with pytest.raises(mod.IndexOutOfRangeError, match=r"got values in \[-5, 3\]"):
            call()
    assert len(reductions) == 3  # a failed check is not remembered
    for _ in range(2):
        mod.indexed_scale_shift(x, tab, tab, good, check_index="always", backend=backend)
    assert len(reductions) == 5
    for value in ("yes", 1, None):
        with pytest.raises(ValueError, match="check_index must be True, False or 'always'"):
            mod.indexed_gated_residual(x, u, tab, good, check_index=value, backend=backend)
    forget_index_checks()


# ---- bad shapes ---------------------------------------------------------------------------------

def _unsupported_ss(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        mod.indexed_scale_shift(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    kw.pop("check_index", None)
    assert not mod.can_use_indexed_scale_shift(*args, **kw)


def test_unsupported(device):
    K, D = 3, 32
    x = torch.randn(B, S, D, device=device)
    tab = torch.randn(B, K, D, device=device)
    idx = _index(K, (B, S), device=device)
    _unsupported_ss("must be [B, S, D] for an indexed op", x[0], tab[0], None, idx[0])
    _unsupported_ss("does not match x", x, torch.randn(B, K, D + 1, device=device), None, idx)
    _unsupported_ss("does not match x", x, torch.randn(B + 1, K, D, device=device), None, idx)
    _unsupported_ss("does not match x", x, torch.randn(D, device=device), None, idx)
    _unsupported_ss("same number of rows K", x, tab, torch.randn(K + 1, D, device=device), idx)
    _unsupported_ss("has no rows (K=0)", x, torch.randn(0, D, device=device), None, idx)
    _unsupported_ss("index of shape [2, 4]", x, tab, None, idx[:, :4])
    _unsupported_ss("index of shape [5, 2]", x, tab, None, idx.t())
    _unsupported_ss("index has dtype torch.float32", x, tab, None, idx.float())
    _unsupported_ss("index has dtype torch.int16", x, tab, None, idx.short())
    _unsupported_ss("index must be a torch.Tensor", x, tab, None, [0, 1])
    _unsupported_ss("index is required", x, tab, None, None)
    _unsupported_ss("scale_table is required", x, None, tab, idx)
    _unsupported_ss("last dim must be contiguous", x, torch.randn(B, K, 2 * D, device=device)[..., ::2], None, idx)
    other = "meta" if device.type == "cpu" else "cpu"
    _unsupported_ss("index is on", x, tab, None, idx.to(other))
    _unsupported_ss("all tensors must be on one device", x, tab.to(other), None, idx)
    _unsupported_ss("unknown backend", x, tab, None, idx, backend="nope")
    assert mod.can_use_indexed_scale_shift(x, tab, None, idx)

    u = torch.randn(B, S, D, device=device)
    with pytest.raises(UnsupportedInputError, match="must have x's shape"):
        mod.indexed_gated_residual(x, u[:, :3], tab, idx)
    with pytest.raises(UnsupportedInputError, match="gate_table is required"):
        mod.indexed_gated_residual(x, u, None, idx)
    with pytest.raises(UnsupportedInputError, match="share memory"):
        mod.indexed_gated_residual_(torch.randn(1, 1, D, device=device).expand(B, S, D), u, tab, idx)
    with pytest.raises(UnsupportedInputError, match="index has dtype torch.bool"):
        mod.indexed_gated_residual(x, u, tab, idx.bool())
    assert not mod.can_use_indexed_gated_residual(x, u, tab, idx[:1, :2])
    assert mod.can_use_indexed_gated_residual(x, u, tab, idx, inplace=True)


def test_exact_by_default(device):
    args = (torch.randn(1, 2, 8, device=device), torch.randn(2, 8, device=device), None,
            torch.zeros(2, dtype=torch.int64, device=device))
    e = explain(OP, *args)
    assert e.chosen is not None and all(v.contract == "exact" for v in e.verdicts)


def test_opcheck_and_compile(backend, device):
    import torch._dynamo

    K, D = 2, 40
    x = rnd(B, 3, D, dtype=torch.bfloat16, device=device)
    u = rnd(B, 3, D, dtype=torch.bfloat16, device=device)
    tab = rnd(B, K, D, dtype=torch.float32, device=device)
    idx = _index(K, (B, 3), torch.int32, device)
    ops = torch.ops.sgl_diffusion
    torch.library.opcheck(ops.indexed_scale_shift.default, (x, tab, tab[0], idx, 1.0, backend))
    torch.library.opcheck(ops.indexed_scale_shift.default, (x, tab, None, idx, 0.0, backend))
    torch.library.opcheck(ops.indexed_gated_residual.default, (x, u, tab, idx, backend))
    torch.library.opcheck(ops.indexed_gated_residual_.default, (x.clone(), u, tab.bfloat16(), idx, backend))

    def block(x, u, m, idx):
        shift, scale, gate = m.chunk(3, dim=-1)  # [B, K, 3D] -> three strided [B, K, D] tables
        h = mod.indexed_scale_shift(x, scale, shift, idx, backend=backend)
        out = mod.indexed_gated_residual(x, h, gate, idx, backend=backend)
        mod.indexed_gated_residual_(out, u, gate, idx, backend=backend)
        return out * 2

    m = rnd(B, K, 3 * D, dtype=torch.float32, device=device)
    torch._dynamo.reset()
    assert torch._dynamo.explain(block)(x, u, m, idx).graph_break_count == 0
    testing.assert_exact(torch.compile(block, fullgraph=True, backend="aot_eager")(x, u, m, idx), block(x, u, m, idx))


def test_several_column_tiles_per_row(device):
    """Both kernels (plain and indexed) on their 1-D grid (TileConfig.grid, a row's tiles
    adjacent) with several rows of several column tiles, the last one masked (D = 40, BLOCK = 16)."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    from sgl_diffusion_core import TileConfig

    ss_prepare = testing.backend_prepare(mod.scale_shift, "triton")
    gr_prepare = testing.backend_prepare(mod.gated_residual, "triton")

    cfg = TileConfig(block=16, num_warps=1)
    K, D = 3, 40
    x, u = rnd(B, S, D, device=device), rnd(B, S, D, device=device)
    tab = rnd(B, K, D, device=device)
    idx = _index(K, (B, S), device=device)
    cases = [
        (ss_prepare, mod.indexed_scale_shift, (x, tab, tab, idx), (1.0,),
         mod.indexed_scale_shift_reference(x, tab, tab, idx)),
        (ss_prepare, mod.scale_shift, (x, tab[:, :1], tab[:, 1:2]), (1.0,),
         mod.scale_shift_reference(x, tab[:, :1], tab[:, 1:2])),
        (gr_prepare, mod.indexed_gated_residual, (x, u, tab, idx), (),
         mod.indexed_gated_residual_reference(x, u, tab, idx)),
        (gr_prepare, mod.gated_residual, (x, u, tab[:, :1]), (),
         mod.gated_residual_reference(x, u, tab[:, :1])),
    ]
    for prepare, op, args, extra, ref in cases:
        run = prepare(testing.geometry(op, *args), *args, config=cfg)
        testing.assert_exact(run(*args, *extra), ref)
