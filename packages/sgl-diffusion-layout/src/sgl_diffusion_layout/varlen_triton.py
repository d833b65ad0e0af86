"""Triton backend of the varlen layout ops.

``build_varlen_meta``: two launches over ``BLOCK``-token chunks of the mask, one program per
chunk (a sample's chunks never cross into the next sample). The first counts each chunk's
valid tokens and adds them to its sample's length (``tl.atomic_add``); one device-to-host read
of the ``B`` lengths gives ``nnz`` (the size of ``indices``) and ``max_seqlen``. The second
finds its chunk's first packed row by summing the counts of all earlier chunks (one masked
vector load: a few hundred values at video sizes), then writes its tokens' flattened indices
and inverse map with a prefix sum (``tl.cumsum``), and the last chunk of each sample its
``cu_seqlens`` entry. (Chunks, because one program per sample walking its whole mask took
234 us for a ``[2, 75600]`` mask on the H200, eager 142 us: two programs, 74 steps each.)
``varlen_pack_qkv`` / ``varlen_scatter``: the row gather of ``_copy_triton`` (the index is
read once per program; padding rows are written as zeros in the same pass, and the rows of
an out-of-range index, which only an unchecked call lets through, as NaN).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch

from ._copy_triton import copy_aot_variants, gather_launches
from .varlen_torch import inverse_map

_META_BLOCK = 1024  # tokens per program (a [2, 75600] mask: 148 programs)
_META_PREFIX = 1024  # earlier chunks' counts summed per step by the second kernel
# the mask is read as bytes at a strided token step (ss): one byte per token and lane
_META_NARROW = "the boolean mask is read one byte per token at a runtime token stride"


@triton.jit(do_not_specialize=["S", "NC"])
def _varlen_count_kernel(MASK, COUNTS, SEQ, S, NC, sb, ss, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    b = pid // NC
    s = (pid - b * NC) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    valid = tl.load(MASK + b * sb + s * ss, mask=s < S, other=0) != 0
    n = tl.sum(valid.to(tl.int32), 0)
    tl.store(COUNTS + pid, n)
    tl.atomic_add(SEQ + b, n, sem="relaxed")


@triton.jit(do_not_specialize=["S", "NC"])
def _varlen_meta_kernel(MASK, COUNTS, CU, IDX, INV, S, NC, sb, ss, BLOCK: tl.constexpr, PREFIX: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    b = pid // NC
    c = pid - b * NC
    run = tl.zeros([PREFIX], tl.int64)
    for p0 in range(0, pid, PREFIX):  # counts of every earlier chunk (earlier samples included)
        p = p0 + tl.arange(0, PREFIX)
        run += tl.load(COUNTS + p, mask=p < pid, other=0).to(tl.int64)
    first = tl.sum(run, 0)
    s = c * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    inb = s < S
    valid = tl.load(MASK + b * sb + s * ss, mask=inb, other=0) != 0
    m = valid.to(tl.int64)
    pos = first + tl.cumsum(m, 0) - 1
    tok = b * S + s
    tl.store(IDX + pos, tok, mask=inb & valid)
    tl.store(INV + tok, tl.where(valid, pos, -1), mask=inb)
    if c == NC - 1:
        tl.store(CU + b + 1, (first + tl.sum(m, 0)).to(tl.int32))
    if pid == 0:
        tl.store(CU, 0)


def prepare_build_varlen_meta(geom, mask):
    """The runner of ``build_varlen_meta`` for one mask signature (``max_seqlen`` a 0-d int64
    tensor where ``geom.max_as_tensor``: the custom op's form)."""
    B, S, as_tensor = geom.B, geom.S, geom.max_as_tensor
    device = mask.device
    nc = triton.cdiv(S, _META_BLOCK)
    opts = {"num_warps": 4, "num_stages": 1}
    count = PreparedLaunch(
        _varlen_count_kernel, (max(B * nc, 1),), {"BLOCK": _META_BLOCK}, device=device, n_ptrs=3, options=opts
    )
    meta = PreparedLaunch(
        _varlen_meta_kernel,
        (max(B * nc, 1),),
        {"BLOCK": _META_BLOCK, "PREFIX": _META_PREFIX},
        device=device,
        n_ptrs=5,
        options=opts,
    )
    sb, ss = mask.stride()

    def run(mask):
        inverse = torch.empty(B * S, dtype=torch.int64, device=device)
        if not B * S:  # no tokens: no launch, no device read
            mx = torch.tensor(0, dtype=torch.int64) if as_tensor else 0
            return (torch.empty(0, dtype=torch.int64, device=device),
                    torch.zeros(B + 1, dtype=torch.int32, device=device), mx, inverse)
        m8 = mask.view(torch.uint8)
        counts = torch.empty(B * nc, dtype=torch.int32, device=device)
        seqlens = torch.zeros(B, dtype=torch.int32, device=device)
        count(m8, counts, seqlens, S, nc, sb, ss)
        lens = seqlens.tolist()  # the one device-to-host read
        cu = torch.empty(B + 1, dtype=torch.int32, device=device)
        indices = torch.empty(sum(lens), dtype=torch.int64, device=device)
        meta(m8, counts, cu, indices, inverse, S, nc, sb, ss)
        mx = max(lens)
        return indices, cu, torch.tensor(mx, dtype=torch.int64) if as_tensor else mx, inverse

    return run


def prepare_varlen_pack_qkv(geom, q, k, v, indices):
    g, shape_tail = geom
    launch = gather_launches(g, q.device, q.dtype)
    dtype, device = q.dtype, q.device

    def run(q, k, v, indices):
        n = indices.shape[0]
        outs = tuple(torch.empty((n, *shape_tail), dtype=dtype, device=device) for _ in range(3))
        launch((q, k, v), outs, indices)
        return outs

    return run


def prepare_varlen_scatter(geom, out, idx):
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


def aot_build_varlen_meta(platform: str = "cuda"):
    """The two meta kernels (dtype independent)."""
    from sgl_diffusion_core import AotVariant

    common = {"MASK": "*u8", "S": "i32", "NC": "i32", "sb": "i32", "ss": "i32", "BLOCK": "constexpr"}
    count_sig = {"MASK": "*u8", "COUNTS": "*i32", "SEQ": "*i32", **common}
    meta_sig = {
        "MASK": "*u8",
        "COUNTS": "*i32",
        "CU": "*i32",
        "IDX": "*i64",
        "INV": "*i64",
        **common,
        "PREFIX": "constexpr",
    }
    opts = {"enable_fp_fusion": False}
    return [
        AotVariant(
            name=f"build_varlen_meta:varlen_count[block={_META_BLOCK}]",
            kernel=_varlen_count_kernel,
            signature=count_sig,
            constexprs={"BLOCK": _META_BLOCK},
            num_warps=4,
            options=opts,
            divisible_by_16=("MASK", "COUNTS", "SEQ"),
            narrow_loads=_META_NARROW,
        ),
        AotVariant(
            name=f"build_varlen_meta:varlen_meta[block={_META_BLOCK}]",
            kernel=_varlen_meta_kernel,
            signature=meta_sig,
            constexprs={"BLOCK": _META_BLOCK, "PREFIX": _META_PREFIX},
            num_warps=4,
            options=opts,
            divisible_by_16=("MASK", "COUNTS", "CU", "IDX", "INV"),
            narrow_loads=_META_NARROW,
        ),
    ]


def aot_varlen_pack_qkv(platform: str = "cuda"):
    """The row gather at the head tiles of Wan (40 x 128) and HunyuanVideo / FLUX (24 x 128)."""
    return copy_aot_variants(platform, "varlen_pack_qkv", {"wan": (40, 128), "hunyuan": (24, 128)}, gather=True)


def aot_varlen_scatter(platform: str = "cuda"):
    return copy_aot_variants(
        platform, "varlen_scatter", {"wan": (40, 128), "hunyuan": (24, 128)}, gather=True, nts=(1,)
    )
