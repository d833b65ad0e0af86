"""interpolate and uv_rasterize: every backend against the reference, the formula in fp64, the UV atlas."""

from __future__ import annotations

import pytest
import torch
from _meshes import grid_mesh, random_mesh, sphere

import sgl_diffusion_ext as ext
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "ext.interpolate"


def test_interpolate_matches_reference_and_formula(backend, device):
    pos, tri = random_mesh(50, seed=7, B=2)
    fid, bary, _ = ext.rasterize_reference(pos, tri, (20, 28))
    attr = torch.randn(2, pos.shape[1], 5, generator=torch.Generator().manual_seed(0))
    out = ext.interpolate(attr.to(device), fid.to(device), bary.to(device), tri.to(device), backend=backend).cpu()
    testing.assert_exact(out, ext.interpolate_reference(attr, fid, bary, tri))
    f = (fid.long() - 1).clamp(min=0)
    corners = tri.long()[f]  # [B, H, W, 3]
    a = torch.stack([attr[b][corners[b]] for b in range(2)]).double()  # [B, H, W, 3, C]
    want = (bary.double()[..., None] * a).sum(-2) * (fid > 0)[..., None]
    testing.assert_close(out, want.float(), atol=1e-6, rtol=1e-6)
    assert bool((out[fid == 0] == 0).all())


def test_interpolate_shared_attr_strided_and_wide(backend, device):
    pos, tri = random_mesh(20, seed=8)
    fid, bary, _ = ext.rasterize_reference(pos, tri, 16)
    attr = torch.randn(40, pos.shape[1], generator=torch.Generator().manual_seed(1)).t()  # [N, 40], strided
    out = ext.interpolate(attr.to(device), fid.to(device), bary.to(device), tri.to(device), backend=backend).cpu()
    testing.assert_exact(out, ext.interpolate_reference(attr, fid, bary, tri))


def test_interpolate_out_of_range_skipped_without_check():
    pos, tri = random_mesh(10, seed=9)
    fid, bary, _ = ext.rasterize_reference(pos, tri, 16)
    attr = torch.randn(pos.shape[1], 3)
    bad_tri, bad_fid = tri.clone(), fid.clone()
    bad_tri[int(fid.max()) - 1, 0] = 99
    bad_fid[0, 0, :4] = 50
    for backend in testing.runnable_backends(OP, torch.device("cpu")):
        geom = testing.geometry(ext.interpolate, attr, fid, bary, tri)
        out = testing.backend_prepare(ext.interpolate, backend)(geom, attr, bad_fid, bary, bad_tri)(
            attr, bad_fid, bary, bad_tri)
        zero = (bad_fid == 0) | (bad_fid == fid.max()) | (bad_fid == 50)
        ref = ext.interpolate_reference(attr, fid, bary, tri)
        assert bool((out[zero] == 0).all()) and torch.equal(out[~zero], ref[~zero])


def test_interpolate_bad_input():
    fid = torch.zeros(1, 2, 2, dtype=torch.int32)
    bary = torch.zeros(1, 2, 2, 3)
    tri = torch.zeros(1, 3, dtype=torch.int32)
    with pytest.raises(UnsupportedInputError, match="face_id values"):
        ext.interpolate(torch.zeros(3, 2), fid + 2, bary, tri)
    with pytest.raises(UnsupportedInputError, match="bary must have shape"):
        ext.interpolate(torch.zeros(3, 2), fid, bary[:, :1], tri)
    with pytest.raises(UnsupportedInputError, match="face_id must be int32"):
        ext.interpolate(torch.zeros(3, 2), fid.long(), bary, tri)


def test_uv_rasterize_matches_reference(backend, device):
    _, uv, tri = sphere(6, 10)
    fid, bary = ext.uv_rasterize(uv.to(device), tri.to(device), (32, 48), backend=backend)
    ref = ext.uv_rasterize_reference(uv, tri, (32, 48))
    testing.assert_exact(fid.cpu(), ref[0])
    testing.assert_close(bary.cpu(), ref[1], atol=1e-6, rtol=1e-6)
    assert fid.shape == (32, 48) and bool((ref[0] > 0).all())  # the sphere's atlas tiles the unit square


def test_uv_rasterize_texel_centres_and_overlap():
    """A texel is covered by the UV face holding its centre (row 0 at v = 0); overlapping islands: lowest face."""
    _, tri, uv = grid_mesh(2)
    fid, bary = ext.uv_rasterize(uv, tri, 8, backend="torch")
    # quads row-major, faces (a, b, d) of quads 0..3 then (a, d, c): texel (0, 7) in quad 1's lower-right face,
    # (7, 0) in quad 2's upper-left face (index 6); (0, 0) lies on quad 0's diagonal: both faces, the lower wins
    assert fid[0, 7] == 2 and fid[7, 0] == 7 and fid[0, 0] == 1
    u = (torch.arange(8) + 0.5) / 8
    attr = torch.cat([uv, torch.zeros(uv.shape[0], 1)], 1)
    got = ext.interpolate(attr, fid[None], bary[None], tri)[0]
    testing.assert_close(got[..., 0], u[None, :].expand(8, 8), atol=1e-6, rtol=0)
    testing.assert_close(got[..., 1], u[:, None].expand(8, 8), atol=1e-6, rtol=0)
    twice = torch.cat([tri, tri]).contiguous()
    assert torch.equal(ext.uv_rasterize(uv, twice, 8)[0], fid)
