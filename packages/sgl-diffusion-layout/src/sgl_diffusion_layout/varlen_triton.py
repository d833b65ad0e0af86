"""Triton backend of the varlen layout ops.

``build_varlen_meta``: per-sample counts and their prefix sum with two tiny torch ops (B
values), then one program per sample walks its mask in ``BLOCK`` chunks with a prefix sum
(``tl.cumsum``), writing the flattened index of every valid token and the inverse map.
``varlen_pack_qkv`` / ``varlen_scatter``: the row gather of ``copy_triton`` (the index is
read once per program; padding rows are written as zeros in the same pass, and the rows of
an out-of-range index, which only an unchecked call lets through, as NaN).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch

from ._plumbing import backend_from_prepare
from .copy_triton import copy_aot_variants, gather_launches
from .varlen_torch import inverse_map

_META_BLOCK = 1024


@triton.jit(do_not_specialize=["S"])
def _varlen_meta_kernel(MASK, CU, IDX, INV, S, sb, ss, BLOCK: tl.constexpr):
    b = tl.program_id(0).to(tl.int64)
    run = tl.load(CU + b).to(tl.int64)
    for s0 in range(0, S, BLOCK):
        s = s0 + tl.arange(0, BLOCK).to(tl.int64)
        inb = s < S
        valid = tl.load(MASK + b * sb + s * ss, mask=inb, other=0) != 0
        m = valid.to(tl.int64)
        pos = run + tl.cumsum(m, 0) - 1
        tok = b * S + s
        tl.store(IDX + pos, tok, mask=inb & valid)
        tl.store(INV + tok, tl.where(valid, pos, -1), mask=inb)
        run += tl.sum(m, 0)


def _prep_meta(geom, mask):
    B, S = geom
    device = mask.device
    launch = PreparedLaunch(_varlen_meta_kernel, (max(B, 1),), {"BLOCK": _META_BLOCK}, device=device, n_ptrs=4,
                            options={"num_warps": 4, "num_stages": 1})
    sb, ss = mask.stride()

    def run(mask):
        seqlens = mask.sum(dim=1, dtype=torch.int32)
        cu = torch.zeros(B + 1, dtype=torch.int32, device=device)
        torch.cumsum(seqlens, 0, out=cu[1:])
        nnz, max_seqlen = (torch.stack([cu[-1], seqlens.max()]).tolist() if B else (0, 0))
        indices = torch.empty(nnz, dtype=torch.int64, device=device)
        inverse = torch.empty(B * S, dtype=torch.int64, device=device)
        if B * S:
            launch(mask.view(torch.uint8), cu, indices, inverse, S, sb, ss)
        return indices, cu, int(max_seqlen), inverse

    return run


def _prep_pack(geom, q, k, v, indices):
    g, shape_tail = geom
    launch = gather_launches(g, q.device, q.dtype)
    dtype, device = q.dtype, q.device

    def run(q, k, v, indices):
        n = indices.shape[0]
        outs = tuple(torch.empty((n, *shape_tail), dtype=dtype, device=device) for _ in range(3))
        launch((q, k, v), outs, indices)
        return outs

    return run


def _prep_scatter(geom, out, idx):
    g, shape, from_indices = geom
    launch = gather_launches(g, out.device, out.dtype)
    dtype, device = out.dtype, out.device
    n_rows = g.rows  # batch * seqlen

    def run(out, idx, batch, seqlen):
        res = torch.empty(shape, dtype=dtype, device=device)
        if from_indices:  # build the inverse map (8 bytes per token) from the valid-token indices
            idx = inverse_map(idx, n_rows)
        launch((out,), (res,), idx)
        return res

    return run


build_varlen_meta = backend_from_prepare(_prep_meta, 1)
varlen_pack_qkv = backend_from_prepare(_prep_pack, 4)
varlen_scatter = backend_from_prepare(_prep_scatter, 2)


def aot_build_varlen_meta(platform: str = "cuda"):
    """The meta kernel (dtype independent)."""
    from sgl_diffusion_core import AotVariant

    sig = {"MASK": "*u8", "CU": "*i32", "IDX": "*i64", "INV": "*i64", "S": "i32", "sb": "i32", "ss": "i32",
           "BLOCK": "constexpr"}
    return [AotVariant(name=f"build_varlen_meta:varlen_meta[block={_META_BLOCK}]", kernel=_varlen_meta_kernel,
                       signature=sig, constexprs={"BLOCK": _META_BLOCK}, num_warps=4,
                       options={"enable_fp_fusion": False})]


def aot_varlen_pack_qkv(platform: str = "cuda"):
    """The row gather at the head tiles of Wan (40 x 128) and HunyuanVideo / FLUX (24 x 128)."""
    return copy_aot_variants(platform, "varlen_pack_qkv", {"wan": (40, 128), "hunyuan": (24, 128)}, gather=True)


def aot_varlen_scatter(platform: str = "cuda"):
    return copy_aot_variants(platform, "varlen_scatter", {"wan": (40, 128), "hunyuan": (24, 128)}, gather=True,
                             nts=(1,))
