"""rasterize's binned path (``triton_binned``, and ``triton`` when the rule picks it) against the reference: face
ids equal, floats within the declared tolerance, at the interpreter's 16x16 bins and the GPU's 8x8 bins, with
bins overflowing their capacity (pairs past it go through the per-face path and must not be lost).

Sizes: at most 64x48 pixels and 150 faces; a capacity of 1 or 2 faces per bin makes most bins overflow at
these sizes, which is the case a GPU meets only on dense meshes."""

from __future__ import annotations

import pytest
import torch
from _meshes import grid_mesh, random_mesh

import sgl_diffusion_ext as ext
from sgl_diffusion_core import REGISTRY, testing

OP = "ext.rasterize"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton_binned")
ATOL, RTOL = CLOSE.tolerance(torch.float32)


@pytest.fixture(scope="module")
def mod():
    if "triton_binned" not in testing.runnable_backends(OP, torch.device("cpu")):
        pytest.skip("needs triton under TRITON_INTERPRET=1")
    return testing.backend_module(ext.rasterize, "triton")


def run_binned(mod, pos, tri, H, W, *, tile=(16, 16), cap=None, flip_y=False, nv=False, prior=None, eps=1e-6,
               chunk=16):
    """The binned path of one call through make_runner, with the given bin, capacity and faces per step."""
    B = pos.shape[0] if pos.dim() == 3 else 1
    F = tri.shape[0]
    cfg = mod.RasterConfig(True, tile, cap or mod.bin_capacity(F, -(-H // tile[1]) * -(-W // tile[0]), B), 2, chunk)
    ps = pos.stride()
    pos_strides = ps if pos.dim() == 3 else (0, *ps)
    prior_strides = None
    if prior is not None:
        prior_strides = prior.stride() if prior.dim() == 3 else (0, *prior.stride())
    run = mod.make_runner(B, pos.shape[-2], F, H, W, flip_y, nv, pos_strides, tri.stride(), prior_strides,
                          pos.device, cfg)
    return run(pos, tri, prior, eps)


def most_faces_per_bin(pos, tri, H, W, tile):
    """The largest number of (face, bin) pairs one bin receives (from the reference's face boxes)."""
    ref = testing.backend_module(ext.rasterize, "torch")
    pos3 = pos if pos.dim() == 3 else pos[None]
    _, _, _, _, valid, box = ref.face_setup(pos3, tri, H, W, False)
    counts: dict[tuple[int, int, int], int] = {}
    F = tri.shape[0]
    for g in torch.nonzero(valid).flatten().tolist():
        x0, y0, x1, y1 = box[g].tolist()
        for by in range(y0 // tile[1], y1 // tile[1] + 1):
            for bx in range(x0 // tile[0], x1 // tile[0] + 1):
                k = (g // F, by, bx)
                counts[k] = counts.get(k, 0) + 1
    return max(counts.values(), default=0)


def check(out, ref):
    testing.assert_exact(out[0], ref[0])
    testing.assert_close(out[1], ref[1], atol=ATOL, rtol=RTOL)
    testing.assert_close(out[2], ref[2], atol=ATOL, rtol=RTOL)


# chunk 16: the NVIDIA build's faces per step, 8: the AMD build's (BIN_CHUNK)
@pytest.mark.parametrize("seed, tile, flip_y, chunk", [(10, (16, 16), False, 16), (11, (8, 8), True, 8)])
def test_random_meshes_batched(mod, seed, tile, flip_y, chunk):
    pos, tri = random_mesh(120, seed, B=2)
    out = run_binned(mod, pos, tri, 48, 64, tile=tile, flip_y=flip_y, chunk=chunk)
    check(out, ext.rasterize_reference(pos, tri, (48, 64), flip_y=flip_y))


@pytest.mark.parametrize("cap, tile", [(1, (16, 16)), (2, (8, 8)), (3, (16, 16))])
def test_overflowing_bins_lose_no_face(mod, cap, tile):
    """Bins receive far more faces than they list: the rest go through the per-face path, the result is the
    reference's."""
    pos, tri = random_mesh(150, 12, size=0.35)
    assert most_faces_per_bin(pos[0], tri, 40, 56, tile) > 4 * cap  # the case overflows, and by much
    out = run_binned(mod, pos[0], tri, 40, 56, tile=tile, cap=cap)
    check(out, ext.rasterize_reference(pos[0], tri, (40, 56)))


def test_overflow_with_depth_prior_and_nvdiffrast_layout(mod):
    pos, tri = random_mesh(100, 13, B=2, size=0.4)
    ref_fid, _, ref_depth = ext.rasterize_reference(pos, tri, (32, 48))
    prior = torch.where(ref_fid > 0, ref_depth, 0.0)[0] + 0.05  # [H, W], drops some fragments of both samples
    ref = ext.rasterize_reference(pos, tri, (32, 48), depth_prior=prior, occlusion_eps=0.0)
    out = run_binned(mod, pos, tri, 32, 48, cap=2, prior=prior, eps=0.0)
    check(out, ref)
    assert int((ref[0] > 0).sum()) < int((ref_fid > 0).sum())  # the prior did drop fragments
    packed = run_binned(mod, pos, tri, 32, 48, cap=2, prior=prior, eps=0.0, nv=True)
    want = ext.rasterize_reference(pos, tri, (32, 48), depth_prior=prior, occlusion_eps=0.0, nvdiffrast_layout=True)
    assert torch.equal(packed[..., 3], want[..., 3])
    testing.assert_close(packed[..., :3], want[..., :3], atol=ATOL, rtol=RTOL)


def test_faces_spanning_many_bins_off_screen_and_empty_bins(mod):
    """Two screen-filling faces behind small ones, a face larger than the screen, faces wholly off screen (left,
    right, above, behind the camera): every 8x8 bin of 64x48 holds a big face, bins far from the small faces
    hold nothing else."""
    quad, qtri, _ = grid_mesh(1, z=0.5)
    big = torch.tensor([[-5, -5, 0.7, 1], [5, -5, 0.7, 1], [0, 6, 0.7, 1]], dtype=torch.float32)
    off = torch.tensor([[-3, 0, 0, 1], [-2, 0.5, 0, 1], [-2.5, -0.5, 0, 1],
                        [2.2, 0, 0, 1], [3, 0.3, 0, 1], [2.5, 1, 0, 1],
                        [0, 1.5, 0, 1], [0.5, 2, 0, 1], [-0.5, 2, 0, 1],
                        [0, 0, 0, 1], [0.5, 0, 0, 1], [0, 0.5, 0, -1]], dtype=torch.float32)
    small, stri = random_mesh(40, 14, size=0.1, spread=0.5)
    pos = torch.cat([quad, big, off, small[0]])
    n0, n1, n2 = quad.shape[0], quad.shape[0] + 3, quad.shape[0] + 3 + off.shape[0]
    tri = torch.cat([qtri, torch.tensor([[n0, n0 + 1, n0 + 2]]), torch.arange(n1, n2).reshape(-1, 3),
                     stri + n2]).to(torch.int32)
    ref = ext.rasterize_reference(pos, tri, (48, 64))
    assert bool((ref[0] > 0).all())  # the screen-filling faces cover every pixel
    for tile in ((8, 8), (16, 16)):
        for cap in (None, 2):
            check(run_binned(mod, pos, tri, 48, 64, tile=tile, cap=cap), ref)
    off_only = tri[3:7].contiguous()  # the faces off screen or behind the camera: every bin empty
    out = run_binned(mod, pos, off_only, 48, 64, tile=(8, 8))
    assert int(out[0].count_nonzero()) == 0 and bool((out[2] == float("inf")).all())


def test_uv_atlas_on_the_binned_path(mod):
    _, tri, uv = grid_mesh(5)
    uv = uv * 0.9 + 0.05
    clip = testing.backend_module(ext.uv_rasterize, "torch")
    out = run_binned(mod, clip.uv_to_clip(uv), tri, 40, 40, tile=(8, 8), cap=2)
    ref = ext.uv_rasterize_reference(uv, tri, 40)
    testing.assert_exact(out[0][0], ref[0])
    testing.assert_close(out[1][0], ref[1], atol=ATOL, rtol=RTOL)


def test_the_rule(mod):
    cpu = torch.device("cpu")
    rule = mod.RasterConfig.from_heuristic
    # the per-face path at every size (the faster one measured); the binned path only when forced
    assert not any(rule(b, f, r, r, cpu).binned for b, f, r in ((1, 40, 64), (1, 10**6, 2048), (2, 2 * 10**5, 2048)))
    assert rule(1, 10, 8, 8, cpu, "binned").binned and not rule(1, 10**6, 2048, 2048, cpu, "perface").binned
    with pytest.raises(ValueError, match="path"):
        rule(1, 10, 8, 8, cpu, "tiles")
    bins = 256 * 256  # 2048^2 in 8x8 bins
    assert mod.bin_capacity(1_000_000, bins) == 512 and mod.bin_capacity(40_000, bins) == 64
    assert mod.bin_capacity(200_000, bins) == 128
    huge = 2048 * 2048  # 16384^2 in 8x8 bins: the list stays within LIST_ENTRIES
    assert mod.bin_capacity(1_000_000, huge, B=2) * 2 * huge <= mod.LIST_ENTRIES


def test_forced_backends_agree(backend, device):
    """Every rasterize backend, the two forced Triton paths included, gives the reference's face ids."""
    pos, tri = random_mesh(80, 15, size=0.3)
    out = ext.rasterize(pos.to(device), tri.to(device), (36, 52), backend=backend)
    check([t.cpu() for t in out], ext.rasterize_reference(pos, tri, (36, 52)))


def test_public_triton_backend_follows_the_rule(mod, monkeypatch):
    """``backend="triton"`` asks the rule once per call signature and runs the path it picks (a rule that picks
    the binned path for some sizes patched in, so that both paths run)."""
    picked = []
    rule = mod.RasterConfig.from_heuristic.__func__

    def spy(cls, B, F, H, W, device, path=None):
        cfg = rule(cls, B, F, H, W, device, path or ("binned" if F >= 50 and H * W >= 32 * 32 else "perface"))
        picked.append(cfg.binned)
        return cfg

    monkeypatch.setattr(mod.RasterConfig, "from_heuristic", classmethod(spy))
    pos, tri = random_mesh(61, 16)  # sizes no other test uses: each call below builds its plan
    small = tri[:41].contiguous()
    for t, res, binned in ((tri, (33, 41), True), (tri, (25, 23), False), (small, (33, 41), False)):
        out = ext.rasterize(pos[0], t, res, backend="triton")
        check(out, ext.rasterize_reference(pos[0], t, res))
        assert picked == [binned]
        picked.clear()



# a sliver (its third vertex 1e-6 of the edge length off the line of the other two, perspective w): at 64x64 its
# box is columns 15-23, rows 47-51, and the fp32 edge values of pixel (column 14, row 50), outside the box but
# inside the box's 16x16 bins, round to "covered"
SLIVER = [["-0x1.43fdc8p-1", "0x1.826802p-1", "0x1.54ea04p-1", "0x1.54ea04p+0"],
          ["-0x1.35de22p-2", "0x1.021b1ep-1", "0x1.db5972p-2", "0x1.db5972p-1"],
          ["-0x1.81cd5p-2", "0x1.21567cp-1", "0x1.07527p-1", "0x1.07527p+0"]]


def test_binned_path_tests_only_pixels_inside_the_face_box(mod):
    """A bin holds pixels beyond the box of a face listed in it; a sliver's rounded edge values cover one of
    them. The per-face path and the reference never test it, so the binned path must not either."""
    pos = torch.tensor([[float.fromhex(e) for e in v] for v in SLIVER], dtype=torch.float32)
    tri = torch.tensor([[0, 1, 2]], dtype=torch.int32)
    ref = testing.backend_module(ext.rasterize, "torch")
    rows, det, sgn, z, valid, box = ref.face_setup(pos[None], tri, 64, 64, False)
    px, py = ref.pixel_centres(64, 64, False, torch.device("cpu"))
    # the premise: a valid face whose edge values cover a pixel of its bins outside its box
    assert bool(valid[0]) and box[0].tolist() == [15, 47, 23, 51]
    covered, *_ = ref.fragment(rows[0], det[0], sgn[0], z[0], px[14], py[50])
    assert bool(covered)
    expected = ext.rasterize_reference(pos, tri, 64)
    assert int(expected[0][0, 50, 14]) == 0
    check(run_binned(mod, pos, tri, 64, 64), expected)
