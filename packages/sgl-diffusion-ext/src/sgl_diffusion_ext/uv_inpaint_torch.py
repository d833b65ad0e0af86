"""The reference of ``uv_inpaint`` (its ``torch`` backend): the push-pull pyramid and the diffusion, with the
same fp32 operations in the same order as the Triton kernels.

push: level k+1 texel = mean of its known children (``((c00 + c01) + c10) + c11`` over known ones, divided by
their count), known when any child is; pull: an unknown texel of level k takes the bilinear value of the
filled level k+1 at its centre (weights 0.25 / 0.75 per axis, edges clamped):
``wr0 * (wc0 * c[r0, c0] + wc1 * c[r0, c1]) + wr1 * (wc0 * c[r1, c0] + wc1 * c[r1, c1])``; known texels keep
their value. diffuse: then ``iterations`` Jacobi steps ``hole = (((up + down) + left) + right) * 0.25``.
"""

from __future__ import annotations

import torch


def push(col: torch.Tensor, known: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One level down: ``(colour [B, hc, wc, C], known [B, hc, wc])`` of ``col [B, h, w, C]``, ``known [B, h, w]``."""
    B, h, w, C = col.shape
    hc, wc = (h + 1) // 2, (w + 1) // 2
    c = torch.zeros(B, 2 * hc, 2 * wc, C, dtype=torch.float32, device=col.device)
    k = torch.zeros(B, 2 * hc, 2 * wc, dtype=torch.bool, device=col.device)
    c[:, :h, :w] = torch.where(known[..., None], col, 0.0)
    k[:, :h, :w] = known
    s = ((c[:, 0::2, 0::2] + c[:, 0::2, 1::2]) + c[:, 1::2, 0::2]) + c[:, 1::2, 1::2]
    kf = k.float()
    n = ((kf[:, 0::2, 0::2] + kf[:, 0::2, 1::2]) + kf[:, 1::2, 0::2]) + kf[:, 1::2, 1::2]
    has = n > 0
    return torch.where(has[..., None], s / torch.where(has, n, 1.0)[..., None], 0.0), has


def _axis(n_fine: int, n_coarse: int, device):
    i = torch.arange(n_fine, device=device)
    r0 = (i + 1) // 2 - 1
    w1 = torch.where(i % 2 == 0, 0.75, 0.25)
    return r0.clamp(0, n_coarse - 1), (r0 + 1).clamp(0, n_coarse - 1), 1.0 - w1, w1


def pull(col: torch.Tensor, known: torch.Tensor, coarse: torch.Tensor) -> torch.Tensor:
    """Level k filled: its known texels, and the bilinear value of the filled coarse level elsewhere."""
    B, h, w, C = col.shape
    r0, r1, wr0, wr1 = _axis(h, coarse.shape[1], col.device)
    c0, c1, wc0, wc1 = _axis(w, coarse.shape[2], col.device)
    wc0, wc1 = wc0[None, :, None], wc1[None, :, None]
    top = coarse[:, r0]
    bot = coarse[:, r1]
    v = (wr0[:, None, None] * (wc0 * top[:, :, c0] + wc1 * top[:, :, c1])
         + wr1[:, None, None] * (wc0 * bot[:, :, c0] + wc1 * bot[:, :, c1]))
    return torch.where(known[..., None], col, v)


def diffuse(col: torch.Tensor, known: torch.Tensor, iterations: int) -> torch.Tensor:
    """``iterations`` Jacobi steps of the 4-neighbour mean on the unknown texels (edges clamped)."""
    for _ in range(iterations):
        up = torch.cat([col[:, :1], col[:, :-1]], 1)
        down = torch.cat([col[:, 1:], col[:, -1:]], 1)
        left = torch.cat([col[:, :, :1], col[:, :, :-1]], 2)
        right = torch.cat([col[:, :, 1:], col[:, :, -1:]], 2)
        col = torch.where(known[..., None], col, (((up + down) + left) + right) * 0.25)
    return col


def uv_inpaint(texture: torch.Tensor, mask: torch.Tensor, *, method: str = "pushpull",
               iterations: int = 16) -> torch.Tensor:
    """The reference of ``uv_inpaint`` (same arguments and result)."""
    batched = texture.dim() == 4
    col = (texture if batched else texture[None]).float()
    known = (mask if mask.dim() == 3 else mask[None].expand(col.shape[0], -1, -1)) != 0
    levels = [(col, known)]
    while levels[-1][0].shape[1] > 1 or levels[-1][0].shape[2] > 1:
        levels.append(push(*levels[-1]))
    filled = torch.where(levels[-1][1][..., None], levels[-1][0], 0.0)
    for c, k in reversed(levels[:-1]):
        filled = pull(c, k, filled)
    if method == "diffuse":
        filled = diffuse(filled, known, iterations)
    return filled if batched else filled[0]


def prepare(geom, texture, mask):
    """The ``torch`` backend's runner: the reference itself."""
    method, iterations = geom.method, geom.iterations

    def run(texture, mask, *_):
        return uv_inpaint(texture, mask, method=method, iterations=iterations)

    return run
