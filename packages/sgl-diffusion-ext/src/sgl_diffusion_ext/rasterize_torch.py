"""The reference of ``rasterize`` and ``uv_rasterize`` (their ``torch`` backend; any device).

It follows the semantics step by step with the same fp32 operations in the same order as the
Triton kernels (see ``rasterize``'s docstring for the math):

1. setup per (sample, face): the rows ``r_i = v_j x v_k`` of adj(M) (M's columns are the vertices'
   clip-space ``(x, y, w)``), the three determinants ``d_i = r_i . v_i``, validity (every w > 0,
   indices in range, the three d_i nonzero and of one sign), a pixel bounding box one pixel wider
   than the projected triangle, clipped to the image;
2. fragments over work items (face, 16x16 tile of its box): ``q = adj(M) (px, py, 1)``, covered when
   every ``q_i`` has the sign of det (or is 0), depth ``z/w = (q . z) / det``, the key
   ``ordered(z/w) << 32 | face`` reduced per pixel with ``scatter_reduce(amin)``;
3. resolve: the winning face's ``q`` recomputed, ``bary = q / (q0 + q1 + q2)``.
"""

from __future__ import annotations

import torch

from ._mesh import pixel_centres, uv_to_clip

KEY_NONE = torch.iinfo(torch.int64).max  # a pixel no fragment reached
TILE = 16
CHUNK = 1 << 20  # fragments evaluated per step (bounds the temporary memory)


def ordered_depth(z: torch.Tensor) -> torch.Tensor:
    """int32 with the order of the fp32 values ``z`` (-0 folded to +0 first): the depth part of the key."""
    bits = (z + 0.0).view(torch.int32)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


def face_setup(pos: torch.Tensor, tri: torch.Tensor, H: int, W: int, flip_y: bool):
    """Per (sample, face), flattened to ``B * F``: ``(rows [BF, 3, 3], det, sgn, z [BF, 3], valid, box [BF, 4])``
    with ``rows[:, i] = (A_i, B_i, C_i)`` and ``box = (x_lo, y_lo, x_hi, y_hi)`` (inclusive pixels)."""
    B, N = pos.shape[0], pos.shape[1]
    t = tri.long()
    in_range = ((t >= 0) & (t < N)).all(dim=1)
    v = pos[:, t.clamp(0, max(N - 1, 0))]  # [B, F, 3, 4]
    x, y, z, w = v.unbind(-1)  # [B, F, 3] each
    rows, dets = [], []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        a = y[..., j] * w[..., k] - w[..., j] * y[..., k]
        b = w[..., j] * x[..., k] - x[..., j] * w[..., k]
        c = x[..., j] * y[..., k] - y[..., j] * x[..., k]
        rows.append(torch.stack([a, b, c], dim=-1))
        dets.append((x[..., i] * a + y[..., i] * b) + w[..., i] * c)
    d0, d1, d2 = dets
    same_sign = ((d0 > 0) & (d1 > 0) & (d2 > 0)) | ((d0 < 0) & (d1 < 0) & (d2 < 0))
    valid = (w > 0).all(dim=-1) & same_sign & in_range[None, :]
    sx, sy = x / w, y / w
    col = (sx + 1.0) * (0.5 * W) - 0.5
    row = ((1.0 - sy) if flip_y else (sy + 1.0)) * (0.5 * H) - 0.5
    lo_c = torch.floor(col.amin(-1).clamp(-2.0, W + 1.0)) - 1.0
    hi_c = torch.ceil(col.amax(-1).clamp(-2.0, W + 1.0)) + 1.0
    lo_r = torch.floor(row.amin(-1).clamp(-2.0, H + 1.0)) - 1.0
    hi_r = torch.ceil(row.amax(-1).clamp(-2.0, H + 1.0)) + 1.0
    box = torch.stack([lo_c.clamp(0, W - 1), lo_r.clamp(0, H - 1), hi_c.clamp(0, W - 1), hi_r.clamp(0, H - 1)], -1)
    box = torch.nan_to_num(box).long()
    empty = (lo_c > W - 1) | (hi_c < 0) | (lo_r > H - 1) | (hi_r < 0)
    valid = valid & ~empty
    sgn = torch.where(d0 > 0, 1.0, -1.0)
    flat = B * tri.shape[0]
    return (torch.stack(rows, dim=2).reshape(flat, 3, 3), d0.reshape(flat), sgn.reshape(flat),
            z.reshape(flat, 3), valid.reshape(flat), box.reshape(flat, 4))


def fragment(rows, det, sgn, z, px, py):
    """``(covered, q [.., 3], depth)`` of pixels ``(px, py)`` against the faces whose setup is given
    (each argument gathered per pixel: rows ``[.., 3, 3]``, det, sgn, z ``[.., 3]``)."""
    q = (rows[..., 0] * px[..., None] + rows[..., 1] * py[..., None]) + rows[..., 2]
    qs = (q[..., 0] + q[..., 1]) + q[..., 2]
    t = q * sgn[..., None]
    covered = (t[..., 0] >= 0) & (t[..., 1] >= 0) & (t[..., 2] >= 0) & (qs != 0)
    num = (q[..., 0] * z[..., 0] + q[..., 1] * z[..., 1]) + q[..., 2] * z[..., 2]
    depth = num / det + 0.0
    covered &= depth == depth
    return covered, q, qs, depth


def _keys(pos, tri, H, W, flip_y, prior, eps):
    """The per-pixel key buffer ``[B * H * W]`` int64 and the face setup."""
    B, F = pos.shape[0], tri.shape[0]
    dev = pos.device
    setup = face_setup(pos, tri, H, W, flip_y)
    rows, det, sgn, z, valid, box = setup
    px, py = pixel_centres(H, W, flip_y, dev)
    keys = torch.full((B * H * W,), KEY_NONE, dtype=torch.int64, device=dev)
    ntx = torch.where(valid, (box[:, 2] - box[:, 0]) // TILE + 1, 0)
    nty = torch.where(valid, (box[:, 3] - box[:, 1]) // TILE + 1, 0)
    count = ntx * nty
    face = torch.repeat_interleave(torch.arange(B * F, device=dev), count)
    local = torch.arange(face.numel(), device=dev) - (torch.cumsum(count, 0) - count)[face]
    eps_t = torch.tensor(eps, dtype=torch.float32, device=dev)
    dy, dx = torch.meshgrid(torch.arange(TILE, device=dev), torch.arange(TILE, device=dev), indexing="ij")
    dx, dy = dx.reshape(-1), dy.reshape(-1)
    step = max(1, CHUNK // (TILE * TILE))
    for s in range(0, face.numel(), step):
        f = face[s:s + step]
        loc = local[s:s + step]
        col = (box[f, 0] + (loc % ntx[f]) * TILE)[:, None] + dx
        row = (box[f, 1] + (loc // ntx[f]) * TILE)[:, None] + dy
        inside = (col <= box[f, 2, None]) & (row <= box[f, 3, None])
        f = f[:, None].expand_as(col)[inside]
        col, row = col[inside], row[inside]
        covered, _, _, depth = fragment(rows[f], det[f], sgn[f], z[f], px[col], py[row])
        pix = (f // F) * (H * W) + row * W + col
        if prior is not None:
            covered &= ~(depth > prior.reshape(-1)[pix] + eps_t)
        key = (ordered_depth(depth).long() << 32) | (f % F)
        keys.scatter_reduce_(0, pix[covered], key[covered], reduce="amin")
    return keys, setup


def rasterize(pos: torch.Tensor, tri: torch.Tensor, resolution, *, flip_y: bool = False,
              depth_prior: torch.Tensor | None = None, occlusion_eps: float = 1e-6, nvdiffrast_layout: bool = False):
    """The reference of ``rasterize`` (same arguments and results)."""
    H, W = (resolution, resolution) if isinstance(resolution, int) else tuple(resolution)
    batched = pos.dim() == 3
    pos3 = pos if batched else pos[None]
    B, F = pos3.shape[0], tri.shape[0]
    prior = None
    if depth_prior is not None:
        prior = depth_prior if depth_prior.dim() == 3 else depth_prior.expand(B, H, W)
    keys, (rows, det, sgn, z, _, _) = _keys(pos3.float(), tri, H, W, flip_y, prior, occlusion_eps)
    hit = keys != KEY_NONE
    f = (keys & 0xFFFFFFFF)[hit]
    pix = torch.nonzero(hit).squeeze(1)
    gf = (pix // (H * W)) * F + f
    px, py = pixel_centres(H, W, flip_y, pos.device)
    _, q, qs, depth = fragment(rows[gf], det[gf], sgn[gf], z[gf], px[pix % W], py[(pix // W) % H])
    bary = q / qs[:, None]
    if nvdiffrast_layout:
        out = torch.zeros(B * H * W, 4, dtype=torch.float32, device=pos.device)
        out[pix] = torch.cat([bary[:, :2], depth[:, None], (f + 1).float()[:, None]], dim=1)
        return out.reshape(B, H, W, 4)
    face_id = torch.zeros(B * H * W, dtype=torch.int32, device=pos.device)
    face_id[pix] = (f + 1).int()
    b = torch.zeros(B * H * W, 3, dtype=torch.float32, device=pos.device)
    b[pix] = bary
    d = torch.full((B * H * W,), float("inf"), dtype=torch.float32, device=pos.device)
    d[pix] = depth
    return face_id.reshape(B, H, W), b.reshape(B, H, W, 3), d.reshape(B, H, W)


def uv_rasterize(uv: torch.Tensor, uv_tri: torch.Tensor, resolution):
    """The reference of ``uv_rasterize``: ``rasterize`` of ``(2u - 1, 2v - 1, 0, 1)``, face ids and barycentrics
    of the one sample."""
    face_id, bary, _ = rasterize(uv_to_clip(uv), uv_tri, resolution)
    return face_id[0], bary[0]


def prepare(geom, pos, tri, depth_prior):
    """The ``torch`` backend's runner of ``rasterize``: the reference itself."""
    res, flip, nv = (geom.H, geom.W), geom.flip_y, geom.nvdiffrast_layout

    def run(pos, tri, depth_prior, occlusion_eps, *_):
        return rasterize(pos, tri, res, flip_y=flip, depth_prior=depth_prior, occlusion_eps=occlusion_eps,
                         nvdiffrast_layout=nv)

    return run


def prepare_uv(geom, uv, uv_tri):
    """The ``torch`` backend's runner of ``uv_rasterize``."""
    res = (geom.H, geom.W)

    def run(uv, uv_tri, *_):
        return uv_rasterize(uv, uv_tri, res)

    return run
