"""The reference of ``interpolate`` (its ``torch`` backend): ``out = (b0 * a0 + b1 * a1) + b2 * a2`` with
``a_i = attr[tri[face_id - 1, i]]``, 0 where ``face_id == 0``."""

from __future__ import annotations

import torch


def interpolate(attr: torch.Tensor, face_id: torch.Tensor, bary: torch.Tensor, tri: torch.Tensor) -> torch.Tensor:
    B, H, W = face_id.shape
    attr3 = attr if attr.dim() == 3 else attr[None].expand(B, -1, -1)
    N, C = attr3.shape[1], attr3.shape[2]
    F = tri.shape[0]
    fid = face_id.reshape(B, H * W).long()
    hit = (fid > 0) & (fid <= F)
    if F:
        corners = tri.long()[(fid - 1).clamp(0, F - 1)]
    else:
        corners = torch.zeros(B, H * W, 3, dtype=torch.long, device=face_id.device)
    ok = hit & ((corners >= 0) & (corners < N)).all(-1)
    corners = corners.clamp(0, max(N - 1, 0))
    b = bary.reshape(B, H * W, 3)
    out = torch.zeros(B, H * W, C, dtype=torch.float32, device=attr.device)
    for s in range(B):
        a = attr3[s].float()
        if N == 0:
            continue
        a0, a1, a2 = a[corners[s, :, 0]], a[corners[s, :, 1]], a[corners[s, :, 2]]
        v = (b[s, :, 0:1] * a0 + b[s, :, 1:2] * a1) + b[s, :, 2:3] * a2
        out[s] = torch.where(ok[s, :, None], v, 0.0)
    return out.reshape(B, H, W, C)


def prepare(geom, attr, face_id, bary, tri):
    """The ``torch`` backend's runner: the reference itself."""

    def run(attr, face_id, bary, tri, *_):
        return interpolate(attr, face_id, bary, tri)

    return run
