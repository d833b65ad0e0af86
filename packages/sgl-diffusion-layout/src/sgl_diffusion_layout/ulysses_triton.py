"""Triton backend of the Ulysses / USP layout ops: each one is a strided permutation copy
(``_copy_triton._permute_kernel``) with the geometry computed once per call signature by
``ulysses.describe_*`` (``geom``: a ``_geometry.PermuteGeom`` and the result's shape)."""

from __future__ import annotations

import torch

from ._copy_triton import copy_aot_variants, permute_launches


def prepare_pack_qkv(geom, q, k, v):
    """``ulysses_pack_qkv``: q, k, v into the three ``Dh`` slices of one buffer (one launch when
    they share strides)."""
    g, (W, R, hl, D3) = geom
    launch = permute_launches(g, q.device, q.dtype)
    Dh = D3 // 3
    dtype, device = q.dtype, q.device

    def run(q, k, v, world_size):
        buf = torch.empty((W, R, hl, D3), dtype=dtype, device=device)
        launch((q, k, v), (buf, buf[..., Dh:], buf[..., 2 * Dh:]))
        return buf

    return run


def prepare_unpack_qkv(geom, buf):
    """``ulysses_unpack_qkv``: the three ``Dh`` slices of the received buffer into q, k, v."""
    g, shape = geom
    launch = permute_launches(g, buf.device, buf.dtype)
    Dh = shape[-1]
    dtype, device = buf.dtype, buf.device

    def run(buf, world_size, batch=1):
        outs = tuple(torch.empty(shape, dtype=dtype, device=device) for _ in range(3))
        launch((buf, buf[..., Dh:], buf[..., 2 * Dh:]), outs)
        return outs

    return run


def prepare_permute(geom, x):
    """``ulysses_pack_out``, ``ulysses_unpack_out``, ``usp_merge_heads``, ``usp_split_heads``: one
    tensor permuted into a new contiguous one."""
    g, shape = geom
    launch = permute_launches(g, x.device, x.dtype)
    dtype, device = x.dtype, x.device

    def run(x, *scalars):
        out = torch.empty(shape, dtype=dtype, device=device)
        launch((x,), (out,))
        return out

    return run


_HEADS_SPLIT = {"wan-w1": (40, 128), "wan-w8": (5, 128), "hunyuan-w4": (6, 128)}
_ONE = {"wan-w8": (5, 128), "hunyuan-w1": (24, 128)}


def aot_ulysses_pack_qkv(platform: str = "cuda"):
    """Head tiles of Wan (40 x 128 at world 1, 5 x 128 at world 8) and HunyuanVideo at world 4."""
    return copy_aot_variants(platform, "ulysses_pack_qkv", _HEADS_SPLIT)


def aot_ulysses_unpack_qkv(platform: str = "cuda"):
    return copy_aot_variants(platform, "ulysses_unpack_qkv", _HEADS_SPLIT, nts=(3,))


def aot_ulysses_pack_out(platform: str = "cuda"):
    return copy_aot_variants(platform, "ulysses_pack_out", _ONE, nts=(1,))


def aot_ulysses_unpack_out(platform: str = "cuda"):
    return copy_aot_variants(platform, "ulysses_unpack_out", _ONE, nts=(1,))


def aot_usp_merge_heads(platform: str = "cuda"):
    return copy_aot_variants(platform, "usp_merge_heads", _ONE, nts=(1,))


def aot_usp_split_heads(platform: str = "cuda"):
    return copy_aot_variants(platform, "usp_split_heads", _ONE, nts=(1,))
