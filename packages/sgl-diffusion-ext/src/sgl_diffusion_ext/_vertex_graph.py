"""The parts of ``vertex_inpaint`` every backend shares (torch ops on the input's device): texel lookup of the
UV corners, the initial vertex colours, the weighted vertex graph (CSR) and the write-back to the texture."""

from __future__ import annotations

import torch

MIN_SQ_DIST = 1e-12  # an edge's squared length is clamped to this before the inverse (coincident vertices)


def setup(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx):
    """``(corner_texel [K], corner_vertex [K], colour [V, C], painted [V] bool, rowptr [V + 1], nbr [E], wt [E])``.

    Corners are the faces' (face, k) pairs in order, faces with any index out of range dropped. The texel of
    uv ``(u, v)`` is row ``floor(v H)``, column ``floor(u W)``, clamped (row 0 is v = 0, as ``uv_rasterize``).
    A vertex is painted when one of its corners lies on a known texel; its colour is that of its first such
    corner. Edges are the faces' sides, both directions, once each, sorted by (vertex, neighbour); weight
    ``1 / max(|p_a - p_b|^2, 1e-12)`` in fp32, ``((dx dx + dy dy) + dz dz)``.
    """
    H, W, C = texture.shape
    V, dev = vtx_pos.shape[0], texture.device
    pi, ui = pos_idx.long(), uv_idx.long()
    valid = ((pi >= 0) & (pi < V) & (ui >= 0) & (ui < vtx_uv.shape[0])).all(1)
    pi, ui = pi[valid], ui[valid]
    uv = torch.nan_to_num(vtx_uv.float()[ui.reshape(-1)])
    col = (uv[:, 0] * W).floor().clamp(0, W - 1).long()
    row = (uv[:, 1] * H).floor().clamp(0, H - 1).long()
    texel, cv = row * W + col, pi.reshape(-1)
    K = texel.numel()
    order = torch.arange(K, device=dev)
    known = mask.reshape(-1)[texel] != 0
    first = torch.full((V,), K, dtype=torch.long, device=dev).scatter_reduce(0, cv[known], order[known], "amin")
    painted = first < K
    colour = torch.zeros(V, C, dtype=torch.float32, device=dev)
    colour[painted] = texture.reshape(-1, C)[texel[first[painted]]].float()
    a, b = pi.reshape(-1), pi.roll(-1, dims=1).reshape(-1)
    src, dst = torch.cat([a, b]), torch.cat([b, a])
    keep = src != dst
    key = torch.unique(src[keep] * V + dst[keep])
    src, nbr = key // V, key % V
    rowptr = torch.zeros(V + 1, dtype=torch.long, device=dev)
    rowptr[1:] = torch.cumsum(torch.bincount(src, minlength=V), 0)
    d = vtx_pos.float()[src] - vtx_pos.float()[nbr]
    d2 = (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]) + d[:, 2] * d[:, 2]
    wt = 1.0 / d2.clamp_min(MIN_SQ_DIST)
    return texel, cv, colour, painted, rowptr, nbr, wt


def write_back(texture, mask, texel, cv, colour, painted):
    """``(texture, mask)``: every unknown texel under a corner of a painted vertex takes that vertex's colour
    (the first such corner's, when several share the texel) and becomes known; known texels are kept."""
    H, W, C = texture.shape
    K = texel.numel()
    order = torch.arange(K, device=texture.device)
    fill = (mask.reshape(-1)[texel] == 0) & painted[cv]
    first = torch.full((H * W,), K, dtype=torch.long, device=texture.device)
    first = first.scatter_reduce(0, texel[fill], order[fill], "amin")
    hit = first < K
    out = texture.float().reshape(-1, C).clone()
    out[hit] = colour[cv[first[hit]]]
    return out.reshape(H, W, C), ((mask.reshape(-1) != 0) | hit).reshape(H, W)
