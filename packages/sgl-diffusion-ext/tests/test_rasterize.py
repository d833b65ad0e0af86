"""rasterize: the reference against a brute-force rasterizer, every backend against the reference, and each
documented semantic on its own case.

Sizes: 64^2 pixels at most and at most 200 faces (the interpreter runs every work item in Python); the
random meshes use small faces so each covers a few 16x16 tiles, as the faces of a real mesh do."""

from __future__ import annotations

import pytest
import torch
from _meshes import brute_force, grid_mesh, random_mesh

import sgl_diffusion_ext as ext
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing

OP = "ext.rasterize"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")
ATOL, RTOL = CLOSE.tolerance(torch.float32)


def check_against_reference(out, ref):
    face_id, bary, depth = out
    testing.assert_exact(face_id, ref[0])
    testing.assert_close(bary, ref[1], atol=ATOL, rtol=RTOL)
    testing.assert_close(depth, ref[2], atol=ATOL, rtol=RTOL)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reference_matches_brute_force(seed):
    pos, tri = random_mesh(60, seed)
    face_id, _, _ = ext.rasterize_reference(pos[0], tri, (40, 56))
    want, margin = brute_force(pos[0], tri, 40, 56)
    differ = face_id[0] != want
    assert bool((margin[differ] < 1e-5).all()), f"{int(differ.sum())} pixels differ away from any boundary or tie"
    assert int(differ.sum()) <= 3
    assert 0.1 < float((want > 0).float().mean()) < 0.95  # the case covers and misses pixels


def test_backend_matches_reference(backend, device):
    pos, tri = random_mesh(100, seed=3, B=2)
    pos = pos.to(device)
    out = ext.rasterize(pos, tri.to(device), (48, 64), backend=backend)
    ref = ext.rasterize_reference(pos.cpu(), tri, (48, 64))
    check_against_reference([t.cpu() for t in out], ref)
    assert out[0].dtype == torch.int32 and out[0].shape == (2, 48, 64) and out[1].shape == (2, 48, 64, 3)
    hit = ref[0] > 0
    testing.assert_close(ref[1][hit].sum(-1), torch.ones(int(hit.sum())), atol=1e-5, rtol=0)
    assert bool((ref[2][~hit] == float("inf")).all()) and bool((ref[1][~hit] == 0).all())


@pytest.mark.parametrize("binned", [False, True])
def test_gpu_tile_rule_under_interpreter(binned):
    """The 8x8 tile and bin of the GPU launch rule (the interpreter otherwise runs 16x16 ones)."""
    if "triton" not in testing.runnable_backends(OP, torch.device("cpu")):
        pytest.skip("needs triton under TRITON_INTERPRET=1")
    mod = testing.backend_module(ext.rasterize, "triton")
    pos, tri = random_mesh(40, seed=4)
    cfg = mod.RasterConfig(binned, (8, 8), mod.bin_capacity(40, 3 * 5), 2)
    run = mod.make_runner(1, pos.shape[1], 40, 24, 40, False, False, (0, 4, 1), (3, 1), None, pos.device, cfg)
    out = run(pos[0], tri, None, 1e-6)
    check_against_reference(out, ext.rasterize_reference(pos[0], tri, (24, 40)))


def test_shared_edges_covered_by_both(backend, device):
    """Two faces sharing the diagonal of the screen: pixel centres on it are covered by each face alone, and
    together the faces leave no pixel uncovered."""
    pos = torch.tensor([[-1, -1, 0, 1], [1, -1, 0, 1], [1, 1, 0, 1], [-1, 1, 0, 1]], dtype=torch.float32)
    lower, upper = torch.tensor([[0, 1, 2]], dtype=torch.int32), torch.tensor([[0, 2, 3]], dtype=torch.int32)
    on_diag = torch.eye(16, dtype=torch.bool)
    for t in (lower, upper):
        fid = ext.rasterize(pos.to(device), t.to(device), 16, backend=backend)[0][0].cpu()
        assert bool((fid[on_diag] == 1).all())
        assert int((fid == 1).sum()) == 16 * 17 // 2
    both = ext.rasterize(pos.to(device), torch.cat([lower, upper]).to(device), 16, backend=backend)[0][0].cpu()
    assert bool((both > 0).all())
    assert bool((both[on_diag] == 1).all())  # a tie in depth on the diagonal: the lower face index


def test_zero_area_faces_never_cover(backend, device):
    pos = torch.tensor([[-1, -1, 0, 1], [0.5, 0.5, 0, 1], [0.25, 0.25, 0, 1], [1, -1, 0, 1]], dtype=torch.float32)
    tri = torch.tensor([[0, 1, 2], [0, 0, 3], [3, 1, 1], [0, 3, 0]], dtype=torch.int32)  # collinear, repeated
    fid = ext.rasterize(pos.to(device), tri.to(device), 32, backend=backend)[0]
    assert int(fid.count_nonzero()) == 0


def test_faces_behind_the_camera_are_skipped(backend, device):
    pos = torch.tensor([[-1, -1, 0, 1], [1, -1, 0, 1], [0, 1, 0, 1], [0, 1, 0, -1], [0, 1, 0, 0]],
                       dtype=torch.float32)
    tri = torch.tensor([[0, 1, 3], [0, 1, 4], [0, 1, 2]], dtype=torch.int32)
    fid = ext.rasterize(pos.to(device), tri.to(device), 16, backend=backend)[0].cpu()
    assert set(fid.unique().tolist()) == {0, 3}


def test_depth_ties_go_to_the_lowest_face(backend, device):
    pos, tri, _ = grid_mesh(1)
    tri2 = torch.cat([tri[1:], tri[:1], tri]).contiguous()  # face 2 and 3 duplicate faces 1 and 0
    fid = ext.rasterize(pos.to(device), tri2.to(device), 8, backend=backend)[0].cpu()
    assert set(fid.unique().tolist()) == {1, 2}


def test_nearest_depth_wins_and_depth_prior(backend, device):
    near, _, _ = grid_mesh(1, z=-0.5)
    far, tri, _ = grid_mesh(1, z=0.25)
    pos = torch.cat([far, near])
    tri2 = torch.cat([tri, tri + 4]).to(device)
    fid, _, depth = ext.rasterize(pos.to(device), tri2, 8, backend=backend)
    assert bool((fid > 2).all()) and bool((depth == -0.5).all())
    prior = torch.full((8, 8), 0.0, device=device)
    prior[:, :4] = -0.75  # drops both on the left half
    fid, _, depth = ext.rasterize(pos.to(device), tri2, 8, depth_prior=prior, backend=backend)
    assert bool((fid[0, :, :4] == 0).all()) and bool((fid[0, :, 4:] > 2).all())
    fid, _, _ = ext.rasterize(pos.to(device), tri2, 8, depth_prior=prior[None] + 0.5, occlusion_eps=0.0,
                              backend=backend)
    assert bool((fid[0, :, :4] > 2).all())  # -0.5 <= -0.75 + 0.5 + 0 holds


def test_partly_off_screen_flip_y_and_single_pixel(backend, device):
    pos = torch.tensor([[-3, -3, 0.1, 1], [3, -3, 0.1, 1], [-3, 0.5, 0.1, 1]], dtype=torch.float32)
    tri = torch.tensor([[0, 1, 2]], dtype=torch.int32)
    fid = ext.rasterize(pos.to(device), tri.to(device), 16, backend=backend)[0][0].cpu()
    flipped = ext.rasterize(pos.to(device), tri.to(device), 16, flip_y=True, backend=backend)[0][0].cpu()
    assert fid[0, 0] == 1 and fid[15, 0] == 0 and fid[0, 8] == 0  # row 0 is the bottom
    assert torch.equal(flipped, fid.flip(0))
    one = ext.rasterize(pos.to(device), tri.to(device), 1, backend=backend)
    assert one[0].shape == (1, 1, 1) and int(one[0]) == 0  # the centre (0, 0) lies outside
    one = ext.rasterize(pos.to(device), tri.to(device), (1, 1), flip_y=True, backend=backend)
    assert int(one[0]) == 0


def test_empty_mesh_and_empty_batch(backend, device):
    pos = torch.zeros(0, 4, device=device)
    fid, bary, depth = ext.rasterize(pos, torch.zeros(0, 3, dtype=torch.int32, device=device), 4, backend=backend)
    assert int(fid.count_nonzero()) == 0 and bool((depth == float("inf")).all()) and fid.shape == (1, 4, 4)
    out = ext.rasterize(torch.zeros(0, 3, 4, device=device), torch.zeros(1, 3, dtype=torch.int32, device=device),
                        4, backend=backend)
    assert out[0].shape == (0, 4, 4)


def test_nvdiffrast_layout(backend, device):
    pos, tri = random_mesh(30, seed=5)
    pos = pos.to(device)
    packed = ext.rasterize(pos, tri.to(device), (16, 24), nvdiffrast_layout=True, backend=backend).cpu()
    fid, bary, depth = ext.rasterize_reference(pos.cpu(), tri, (16, 24))
    hit = fid > 0
    assert torch.equal(packed[..., 3], fid.float())
    assert torch.equal(packed[..., :2], bary[..., :2]) and torch.equal(packed[..., 2], torch.where(hit, depth, 0.0))


def test_out_of_range_index_skipped_without_check():
    """Below the public check (what a GPU call sees): a face with an index >= N is skipped, never read."""
    pos, tri = random_mesh(8, seed=6)
    bad = tri.clone()
    bad[2, 1] = 10_000
    bad[5, 0] = -7
    for backend in testing.runnable_backends(OP, torch.device("cpu")):
        prepare = testing.backend_prepare(ext.rasterize, backend)
        geom = testing.geometry(ext.rasterize, pos[0], tri, 32)
        fid = prepare(geom, pos[0], bad, None)(pos[0], bad, None, 1e-6)[0]
        assert not bool(((fid == 3) | (fid == 6)).any())
        keep = torch.tensor([i for i in range(8) if i not in (2, 5)])
        ref = ext.rasterize_reference(pos[0], tri[keep].contiguous(), 32)[0]
        assert torch.equal(fid > 0, ref > 0)


@pytest.mark.parametrize(
    "case, match",
    [
        (lambda: (torch.zeros(3, 3), torch.zeros(1, 3, dtype=torch.int32), 8), "pos must be"),
        (lambda: (torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int64), 8), "tri must be int32"),
        (lambda: (torch.zeros(3, 4), torch.tensor([[0, 1, 3]], dtype=torch.int32), 8), r"tri values .*\[0, 3\]"),
        (lambda: (torch.zeros(3, 4), torch.tensor([[0, -1, 2]], dtype=torch.int32), 8), "tri values"),
        (lambda: (torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int32), 0), r"\[1, 16384\]"),
        (lambda: (torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int32), (8, 16385)), r"\[1, 16384\]"),
        (lambda: (torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int32), (8,)), "pair"),
    ],
)
def test_bad_input_raises(case, match):
    with pytest.raises(UnsupportedInputError, match=match):
        ext.rasterize(*case())
    assert not ext.can_use_rasterize(*case())


def test_bad_depth_prior_and_devices():
    pos, tri = torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int32)
    with pytest.raises(UnsupportedInputError, match="depth_prior must have shape"):
        ext.rasterize(pos, tri, 8, depth_prior=torch.zeros(4, 4))
    with pytest.raises(UnsupportedInputError, match="one device"):
        ext.rasterize(pos, tri.to("meta"), 8)


def test_index_checked_on_every_call():
    pos, tri = torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.int32)
    ext.rasterize(pos, tri, 4, backend="torch")
    with pytest.raises(UnsupportedInputError, match="tri values"):
        ext.rasterize(pos, tri + 3, 4, backend="torch")  # same signature, new values
