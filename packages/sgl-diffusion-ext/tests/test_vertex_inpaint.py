"""vertex_inpaint: the Triton backend (Jacobi order) against a Jacobi oracle and the reference (Gauss-Seidel
order), the measured difference of the two orders, the rules on small meshes, bad input."""

from __future__ import annotations

import pytest
import torch
from _meshes import grid_mesh

import sgl_diffusion_ext as ext
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "ext.vertex_inpaint"


def grid_case(n: int, res: int, painted, C: int = 3, seed: int = 0):
    """An n x n grid (2 n^2 faces, shared vertices, the same index for position and uv) on a res x res texture
    whose known texels are those of the vertices ``painted(row, col)`` selects."""
    pos, tri, uv = grid_mesh(n)
    uv = uv * (1 - 1 / res)  # keep u = 1 inside the last texel column
    g = torch.Generator().manual_seed(seed)
    tex = torch.rand(res, res, C, generator=g)
    mask = torch.zeros(res, res, dtype=torch.bool)
    r, c = torch.meshgrid(torch.arange(n + 1), torch.arange(n + 1), indexing="ij")
    sel = painted(r.reshape(-1), c.reshape(-1))
    rows = (uv[:, 1] * res).floor().long()
    cols = (uv[:, 0] * res).floor().long()
    mask[rows[sel], cols[sel]] = True
    return tex, mask, pos[:, :3].contiguous(), uv.contiguous(), tri, tri.clone()


def jacobi(colour, painted, rowptr, nbr, wt):
    """The Jacobi oracle: every sweep reads the previous sweep's state; sums in CSR order as the kernel's."""
    colour, painted = colour.clone(), painted.clone()
    while True:
        prev_c, prev_p, changed = colour.clone(), painted.clone(), False
        for v in (~prev_p).nonzero().flatten().tolist():
            s, ws, hit = torch.zeros(colour.shape[1]), torch.zeros(()), False
            for e in range(int(rowptr[v]), int(rowptr[v + 1])):
                if prev_p[nbr[e]]:
                    s, ws, hit = s + wt[e] * prev_c[nbr[e]], ws + wt[e], True
            if hit:
                colour[v], painted[v], changed = s / ws, True, True
        if not changed:
            return colour, painted


def reference_module():
    return testing.backend_module(ext.vertex_inpaint, "torch")  # its setup / write-back (G) and sweeps


def vertex_colours(case, order):
    ref = reference_module()
    texel, cv, colour, painted, rowptr, nbr, wt = ref.G.setup(*case)
    return (ref.gauss_seidel if order == "gs" else jacobi)(colour, painted, rowptr, nbr, wt)


def corner(k):
    return lambda r, c: (r < k) & (c < k)


def test_triton_equals_jacobi_oracle(device):
    case = grid_case(8, 32, corner(3))
    mod = testing.backend_module(ext.vertex_inpaint, "triton")
    assert mod.CHECK_EVERY == 8
    out_t, out_m = ext.vertex_inpaint(*[t.to(device) for t in case], backend="triton")
    G = reference_module().G
    texel, cv, *_ = G.setup(*case)
    colour, painted = vertex_colours(case, "jacobi")
    ref_t, ref_m = G.write_back(case[0], case[1], texel, cv, colour, painted)
    testing.assert_exact(out_t.cpu(), ref_t)
    assert torch.equal(out_m.cpu(), ref_m)


@pytest.mark.parametrize("n, res", [(6, 16), (10, 64)])
def test_backend_matches_reference_one_edge_from_paint(backend, device, n, res):
    # unpainted: the vertices of odd row and odd column, no two of them adjacent (the orders agree there)
    case = grid_case(n, res, lambda r, c: (r % 2 == 0) | (c % 2 == 0), seed=n)
    out_t, out_m = ext.vertex_inpaint(*[t.to(device) for t in case], backend=backend)
    ref_t, ref_m = ext.vertex_inpaint_reference(*case)
    testing.assert_close(out_t.cpu(), ref_t, atol=1e-5, rtol=1e-5)
    assert torch.equal(out_m.cpu(), ref_m)
    assert torch.equal(out_t.cpu()[case[1]], case[0][case[1]])  # known texels kept exactly
    assert int(ref_m.sum()) == (n + 1) ** 2  # every vertex's texel known


def test_gauss_seidel_vs_jacobi_difference_measured():
    """The figures vertex_inpaint's docstring states: a 16 x 16 grid painted in one 4 x 4 corner."""
    case = grid_case(16, 64, corner(4), C=1, seed=1)
    gs_c, gs_p = vertex_colours(case, "gs")
    ja_c, ja_p = vertex_colours(case, "jacobi")
    assert torch.equal(gs_p, ja_p) and bool(gs_p.all())  # the same vertices painted
    d = (gs_c - ja_c).abs().flatten()
    assert round(float(d.max()), 2) == 0.14
    assert round(float(d.mean()), 2) == 0.04


def test_rules_on_a_small_mesh(backend, device):
    # one face painted at two corners: the third takes the inverse-squared-distance mean of the two
    tex = torch.zeros(4, 4, 1)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    pos = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [5.0, 5.0, 5.0]])
    uv = torch.tensor([[0.1, 0.1], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9]])
    tri = torch.tensor([[0, 1, 2]], dtype=torch.int32)
    tex[0, 0], tex[0, 3] = 1.0, 2.0
    mask[0, 0] = mask[0, 3] = True
    out_t, out_m = ext.vertex_inpaint(*[t.to(device) for t in (tex, mask, pos, uv, tri, tri)], backend=backend)
    out_t, out_m = out_t.cpu(), out_m.cpu()
    w1, w2 = 1 / 2.0**2, 1 / 5.0  # |v2 - v0|^2 = 4, |v2 - v1|^2 = 5
    assert float(out_t[3, 0, 0]) == pytest.approx((w1 * 1.0 + w2 * 2.0) / (w1 + w2), rel=1e-6)
    assert bool(out_m[3, 0]) and not bool(out_m[3, 3])  # vertex 3 is in no face: its texel stays unknown
    assert int(out_m.sum()) == 3


def test_empty_and_unpainted(backend, device):
    tex, mask, pos, uv, tri, _ = grid_case(2, 8, lambda r, c: r < 0)
    out_t, out_m = ext.vertex_inpaint(*[t.to(device) for t in (tex, mask, pos, uv, tri, tri)], backend=backend)
    assert torch.equal(out_t.cpu(), tex) and not bool(out_m.any())  # nothing painted, nothing to spread
    no = torch.zeros(0, 3, dtype=torch.int32)
    out_t, out_m = ext.vertex_inpaint(*[t.to(device) for t in (tex, mask, pos, uv, no, no)], backend=backend)
    assert torch.equal(out_t.cpu(), tex)


def test_bad_input():
    tex, mask, pos, uv, tri, _ = grid_case(2, 8, corner(1))
    with pytest.raises(UnsupportedInputError, match="pos_idx values"):
        ext.vertex_inpaint(tex, mask, pos, uv, tri + 100, tri)
    with pytest.raises(UnsupportedInputError, match="int32"):
        ext.vertex_inpaint(tex, mask, pos, uv, tri.long(), tri)
    with pytest.raises(UnsupportedInputError, match="mask must have shape"):
        ext.vertex_inpaint(tex, mask[:4], pos, uv, tri, tri)
    with pytest.raises(UnsupportedInputError, match="vtx_pos"):
        ext.vertex_inpaint(tex, mask, pos[:, :2], uv, tri, tri)
