"""Small procedural meshes for the ext tests (plain torch, CPU)."""

from __future__ import annotations

import math

import torch


def random_mesh(F: int, seed: int, *, B: int = 1, size: float = 0.25, spread: float = 1.2):
    """F separate small triangles in clip space (projected centres within +-spread, so some lie partly off
    screen), each vertex with its own w in [0.5, 2]; pos ``[B, 3F, 4]`` fp32, tri ``[F, 3]`` int32."""
    g = torch.Generator().manual_seed(seed)
    centre = (torch.rand(B, F, 1, 2, generator=g) * 2 - 1) * spread
    xy = centre + (torch.rand(B, F, 3, 2, generator=g) * 2 - 1) * size
    z = torch.rand(B, F, 3, 1, generator=g) * 1.8 - 0.9
    w = torch.rand(B, F, 3, 1, generator=g) * 1.5 + 0.5
    pos = torch.cat([xy * w, z * w, w], dim=-1).reshape(B, 3 * F, 4)
    tri = torch.arange(3 * F, dtype=torch.int32).reshape(F, 3)
    return pos, tri


def grid_mesh(n: int, *, z: float = 0.0):
    """An n x n quad grid over the square [-1, 1]^2 (two triangles per quad, shared edges), w = 1:
    pos ``[(n+1)^2, 4]``, tri ``[2 n^2, 3]`` int32, uv ``[(n+1)^2, 2]``."""
    t = torch.linspace(0, 1, n + 1)
    v, u = torch.meshgrid(t, t, indexing="ij")
    uv = torch.stack([u.reshape(-1), v.reshape(-1)], dim=1)
    pos = torch.cat([uv * 2 - 1, torch.full((uv.shape[0], 1), z), torch.ones(uv.shape[0], 1)], dim=1)
    i = torch.arange(n)
    a = (i[:, None] * (n + 1) + i[None, :]).reshape(-1)
    b, c, d = a + 1, a + n + 1, a + n + 2
    tri = torch.cat([torch.stack([a, b, d], 1), torch.stack([a, d, c], 1)]).to(torch.int32)
    return pos, tri, uv


def sphere(n_lat: int, n_lon: int):
    """A UV sphere of radius 0.6: positions ``[V, 3]``, uv ``[V, 2]`` and faces ``[F, 3]`` int32 (one vertex list
    for both: the seam column is duplicated)."""
    lat = torch.linspace(0, math.pi, n_lat + 1)
    lon = torch.linspace(0, 2 * math.pi, n_lon + 1)
    la, lo = torch.meshgrid(lat, lon, indexing="ij")
    p = torch.stack([torch.sin(la) * torch.cos(lo), torch.cos(la), torch.sin(la) * torch.sin(lo)], -1) * 0.6
    uv = torch.stack([lo / (2 * math.pi), 1 - la / math.pi], -1)
    i = torch.arange(n_lat)[:, None] * (n_lon + 1) + torch.arange(n_lon)[None, :]
    a, b, c, d = i, i + 1, i + n_lon + 1, i + n_lon + 2
    tri = torch.cat([torch.stack([a, c, b], -1).reshape(-1, 3), torch.stack([b, c, d], -1).reshape(-1, 3)])
    return p.reshape(-1, 3), uv.reshape(-1, 2), tri.to(torch.int32)


def brute_force(pos: torch.Tensor, tri: torch.Tensor, H: int, W: int):
    """An independent rasterizer: per pixel, per face, fp64 screen-space barycentrics (divide by w first),
    perspective-corrected; nearest z/w, ties to the lowest face. Returns ``(face_id, margin)`` ``[H, W]``:
    margin = how far the decision is from flipping (min |screen bary| of the faces near a boundary, depth
    gap to the runner-up); 0 means ambiguous in fp32."""
    p = pos.double()
    face_id = torch.zeros(H, W, dtype=torch.int32)
    margin = torch.full((H, W), float("inf"), dtype=torch.float64)
    xs = (2 * torch.arange(W, dtype=torch.float64) + 1 - W) / W
    ys = (2 * torch.arange(H, dtype=torch.float64) + 1 - H) / H
    py, px = torch.meshgrid(ys, xs, indexing="ij")
    best = torch.full((H, W), float("inf"), dtype=torch.float64)
    second = best.clone()
    for f in range(tri.shape[0]):
        v = p[tri[f].long()]
        if not bool((v[:, 3] > 0).all()):
            continue
        s = v[:, :2] / v[:, 3:4]
        area = (s[1, 0] - s[0, 0]) * (s[2, 1] - s[0, 1]) - (s[2, 0] - s[0, 0]) * (s[1, 1] - s[0, 1])
        if area == 0:
            continue
        lam = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            lam.append(((s[j, 0] - px) * (s[k, 1] - py) - (s[k, 0] - px) * (s[j, 1] - py)) / area)
        lam = torch.stack(lam, -1)
        near_edge = lam.abs().amin(-1)
        inside = (lam >= 0).all(-1)
        persp = lam / v[:, 3]
        persp = persp / persp.sum(-1, keepdim=True)
        depth = (persp * v[:, 2]).sum(-1) / (persp * v[:, 3]).sum(-1)
        margin = torch.minimum(margin, torch.where(near_edge < 1e-5, near_edge, float("inf")))
        win = inside & (depth < best)
        second = torch.where(inside & ~win, torch.minimum(second, depth), torch.where(win, best, second))
        best = torch.where(win, depth, best)
        face_id = torch.where(win, f + 1, face_id)
    gap = (second - best).abs()
    margin = torch.minimum(margin, torch.where(gap < 1e-5, gap, float("inf")))
    return face_id, margin
