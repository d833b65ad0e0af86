"""GPU lane: the Triton backends at production sizes against the torch reference on the same GPU (face ids
equal, floats within the declared tolerance): a 40k-face sphere and 40k random overlapping triangles at 512²,
both rasterizer paths at 2048² (on 1M faces also against each other), bins
overflowing at scale, the UV atlas of a 40k-face sphere at 2048², uv_inpaint of a 2048² texture with 56 % holes,
the whole bake of examples/bake.py at 2048², and vertex_inpaint on that atlas against Jacobi sweeps.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from _meshes import random_mesh, sphere

import sgl_diffusion_ext as ext
from sgl_diffusion_core import REGISTRY, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

DEV = torch.device("cuda")


def tol(op: str) -> tuple[float, float]:
    spec = next(s for s in REGISTRY.specs(f"ext.{op}") if s.backend == "triton")
    return spec.contract.tolerance(torch.float32)


def sphere_clip(n_lat: int, n_lon: int):
    """A 2 * n_lat * n_lon-face sphere in front of a perspective camera: clip-space pos, tri, uv (on the GPU)."""
    p, uv, tri = sphere(n_lat, n_lon)
    w = 2.0 - p[:, 2:3]
    pos = torch.cat([p[:, :2] * 2.0, p[:, 2:3] * 0.5 + 0.5 * w, w], dim=1)
    return pos.to(DEV), tri.to(DEV), uv.to(DEV)


def assert_raster_equal(out, ref, op="rasterize"):
    atol, rtol = tol(op)
    assert torch.equal(out[0], ref[0]), f"face ids differ at {int((out[0] != ref[0]).sum())} pixels"
    for a, e in zip(out[1:], ref[1:]):
        testing.assert_close(a, e, atol=atol, rtol=rtol)


@pytest.mark.parametrize("flip_y", [False, True])
def test_rasterize_sphere_40k(flip_y):
    pos, tri, _ = sphere_clip(100, 200)
    assert tri.shape[0] == 40_000
    out = ext.rasterize(pos, tri, 512, flip_y=flip_y, backend="triton")
    ref = ext.rasterize_reference(pos, tri, 512, flip_y=flip_y)
    assert int((ref[0] > 0).sum()) > 512 * 512 // 4  # the sphere covers a good part of the image
    assert_raster_equal(out, ref)


def test_rasterize_random_overlapping_40k_batched_with_prior():
    pos, tri = random_mesh(40_000, seed=3, B=2, size=0.05)
    pos, tri = pos.to(DEV), tri.to(DEV)
    out = ext.rasterize(pos, tri, (512, 384), backend="triton")
    ref = ext.rasterize_reference(pos, tri, (512, 384))
    assert_raster_equal(out, ref)
    prior = ref[2].clamp(max=1.0) + 0.01  # drops nothing nearer than the nearest fragment + 0.01
    out = ext.rasterize(pos, tri, (512, 384), depth_prior=prior, occlusion_eps=0.0, backend="triton")
    ref = ext.rasterize_reference(pos, tri, (512, 384), depth_prior=prior, occlusion_eps=0.0)
    assert_raster_equal(out, ref)


def test_rasterize_nvdiffrast_layout_40k():
    pos, tri, _ = sphere_clip(100, 200)
    out = ext.rasterize(pos, tri, 512, nvdiffrast_layout=True, backend="triton")
    ref = ext.rasterize_reference(pos, tri, 512, nvdiffrast_layout=True)
    assert torch.equal(out[..., 3], ref[..., 3])
    atol, rtol = tol("rasterize")
    testing.assert_close(out[..., :3], ref[..., :3], atol=atol, rtol=rtol)


def test_interpolate_on_the_sphere_render():
    pos, tri, uv = sphere_clip(100, 200)
    face_id, bary, _ = ext.rasterize_reference(pos, tri, 512)
    attr = torch.cat([pos, uv, uv], dim=1).contiguous()  # 8 channels
    out = ext.interpolate(attr, face_id, bary, tri, backend="triton")
    testing.assert_exact(out, ext.interpolate_reference(attr, face_id, bary, tri))


def test_uv_rasterize_atlas_2048():
    _, tri, uv = sphere_clip(100, 200)
    out = ext.uv_rasterize(uv, tri, 2048, backend="triton")
    ref = ext.uv_rasterize_reference(uv, tri, 2048)
    assert float((ref[0] > 0).float().mean()) > 0.99  # the sphere's atlas covers the square
    assert_raster_equal(out, ref, "uv_rasterize")


@pytest.mark.parametrize("method", ["pushpull", "diffuse"])
def test_uv_inpaint_2048_56pct_holes(method):
    g = torch.Generator().manual_seed(0)
    tex = torch.rand(2048, 2048, 3, generator=g).to(DEV)
    known = (torch.rand(2048, 2048, generator=g) > 0.56).to(DEV)
    out = ext.uv_inpaint(tex, known, method=method, iterations=16, backend="triton")
    ref = ext.uv_inpaint_reference(tex, known, method=method, iterations=16)
    atol, rtol = tol("uv_inpaint")
    testing.assert_close(out, ref, atol=atol, rtol=rtol)
    assert torch.equal(out[known], tex[known])
    assert bool(out.isfinite().all())


@pytest.mark.parametrize("flip_y", [False, True])
def test_rasterize_binned_and_perface_paths_at_2048(flip_y):
    """Both Triton paths against the reference on a 40k-face sphere at 2048², where the rule picks the binned one."""
    pos, tri, _ = sphere_clip(100, 200)
    ref = ext.rasterize_reference(pos, tri, 2048, flip_y=flip_y)
    for backend in ("triton", "triton_binned", "triton_perface"):
        assert_raster_equal(ext.rasterize(pos, tri, 2048, flip_y=flip_y, backend=backend), ref)


def test_rasterize_1m_faces_both_paths():
    """1M faces at 2048²: the binned and the per-face path give the same pixels, and the reference's."""
    pos, tri, _ = sphere_clip(500, 1000)
    binned = ext.rasterize(pos, tri, 2048, backend="triton_binned")
    perface = ext.rasterize(pos, tri, 2048, backend="triton_perface")
    assert int((binned[0] > 0).sum()) > 2048 * 2048 // 4
    for name, a, b in zip(("face_id", "bary", "depth"), binned, perface):
        assert torch.equal(a, b), f"{name}: the paths differ at {int((a != b).sum())} elements"
    assert_raster_equal(binned, ext.rasterize_reference(pos, tri, 2048))


def test_rasterize_binned_overflow_at_scale():
    """Bins of capacity 4 on 40k random overlapping triangles (most bins overflow): still the reference's result."""
    mod = testing.backend_module(ext.rasterize, "triton")
    pos, tri = random_mesh(40_000, seed=5, B=2, size=0.05)
    pos, tri = pos.to(DEV), tri.to(DEV)
    cfg = mod.RasterConfig.from_heuristic(2, tri.shape[0], 512, 384, DEV, "binned")
    run = mod.make_runner(2, pos.shape[1], tri.shape[0], 512, 384, False, False, pos.stride(), tri.stride(), None,
                          DEV, replace(cfg, cap=4))
    assert_raster_equal(run(pos, tri, None, 1e-6), ext.rasterize_reference(pos, tri, (512, 384)))


def test_bake_example_2048_matches_the_reference():
    path = Path(__file__).resolve().parents[1] / "examples" / "bake.py"
    spec = importlib.util.spec_from_file_location("_ext_bake_example_gpu", path)
    bake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bake)
    mesh = bake.bumpy_sphere(100, 200, DEV)
    out = bake.bake(mesh, 2048, 2048)
    ref = bake.bake(mesh, 2048, 2048, backend="torch")
    assert torch.equal(out[2], ref[2])
    for a, e in zip(out, ref):
        testing.assert_close(a.float(), e.float(), atol=1e-5, rtol=1e-5)


def jacobi_sweeps(colour, painted, rowptr, nbr, wt):
    """Jacobi order, vectorized: each sweep paints every unpainted vertex with a painted neighbour from the state
    before the sweep (the kernel's order; sums in another order, so close, not bit-equal)."""
    colour, painted = colour.clone(), painted.clone()
    src = torch.repeat_interleave(torch.arange(colour.shape[0], device=colour.device), rowptr.diff())
    while True:
        use = painted[nbr] & ~painted[src]
        if not bool(use.any()):
            return colour, painted
        s = torch.zeros_like(colour).index_add_(0, src[use], wt[use, None] * colour[nbr[use]])
        ws = torch.zeros(colour.shape[0], dtype=wt.dtype, device=wt.device).index_add_(0, src[use], wt[use])
        hit = torch.zeros_like(painted)
        hit[src[use]] = True
        colour[hit] = s[hit] / ws[hit, None]
        painted |= hit


def test_vertex_inpaint_sphere_atlas_2048_in_jacobi_order():
    """A 40k-face sphere's atlas at 2048², the vertices on the camera's side painted (the benchmark's case): the
    kernel against Jacobi sweeps of the reference's graph on the same GPU; the texels it fills are exactly those
    of the reference (Gauss-Seidel order paints the same vertices)."""
    p, uv, tri = sphere(100, 200)
    p, uv, tri = p.to(DEV), uv.to(DEV), tri.to(DEV)
    g = torch.Generator().manual_seed(0)
    tex = torch.rand(2048, 2048, 3, generator=g).to(DEV)
    rows = (uv[:, 1] * 2048).floor().clamp(0, 2047).long()
    cols = (uv[:, 0] * 2048).floor().clamp(0, 2047).long()
    mask = torch.zeros(2048, 2048, dtype=torch.bool, device=DEV)
    mask[rows[p[:, 2] > 0], cols[p[:, 2] > 0]] = True
    args = (tex, mask, p.contiguous(), uv.contiguous(), tri, tri)
    out_t, out_m = ext.vertex_inpaint(*args, backend="triton")
    G = testing.backend_module(ext.vertex_inpaint, "torch").G
    texel, cv, colour, painted, rowptr, nbr, wt = G.setup(*args)
    assert 0 < int(painted.sum()) < painted.numel()
    colour, painted = jacobi_sweeps(colour, painted, rowptr, nbr, wt)
    ref_t, ref_m = G.write_back(tex, mask, texel, cv, colour, painted)
    assert torch.equal(out_m, ref_m)
    assert int(out_m.sum()) > int(mask.sum())
    testing.assert_close(out_t, ref_t, atol=1e-5, rtol=1e-5)
    assert torch.equal(out_t[mask], tex[mask])
