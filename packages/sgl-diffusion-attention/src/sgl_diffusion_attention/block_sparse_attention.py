"""``block_sparse_attention``: attention that visits only the key blocks a :class:`BlockMap` lists.

Backends: ``block_sparse_attention_triton`` (CUDA and ROCm: the dense Triton kernel's structure
walking the map) and ``block_sparse_attention_torch`` (the definition: dense fp32 attention under
the map's token mask). Maps come from ``block_map`` (``video_block_map``, ``block_map_from_mask``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Backend,
    Contract,
    InputDesc,
    Op,
    UnsupportedInputError,
    device_arch,
    dtype_name,
    is_compiling,
    tensor_platform,
)

from . import _geometry as G
from . import _specs as S
from .block_map import BlockMap, block_pair


@dataclass(frozen=True)
class SparseGeometry:
    """One call: sizes, strides (bshd), the map's blocks, features."""

    B: int
    Sq: int
    Sk: int
    Hq: int
    Hk: int
    Dh: int
    dtype: torch.dtype
    q: G.Strides
    k: G.Strides
    v: G.Strides
    o: G.Strides
    out_shape: tuple[int, ...]
    block: tuple[int, int]
    n_kv_blocks: int
    scale: float
    return_lse: bool


def _map_problems(q, kv_blocks, kv_counts, Sk: int, nq: int, nk: int, n_kv_blocks, problems: list[str]) -> None:
    if n_kv_blocks != nk:
        problems.append(f"the map has {n_kv_blocks} key blocks; Sk = {Sk} keys need {nk}")
    G.check_index("kv_counts", kv_counts, q.device, (torch.int32,), nq, problems)
    if not isinstance(kv_blocks, torch.Tensor):
        problems.append(f"kv_blocks must be a torch.Tensor, got {type(kv_blocks).__name__}")
        return
    if kv_blocks.device != q.device:
        problems.append(f"kv_blocks is on {kv_blocks.device}, q is on {q.device}: all tensors must be on one device")
    if (kv_blocks.dtype != torch.int32 or kv_blocks.dim() != 2 or kv_blocks.shape[0] != nq
            or kv_blocks.shape[1] < 1 or not kv_blocks.is_contiguous()):
        problems.append(f"kv_blocks must be a contiguous int32 [n_q_blocks={nq}, width >= 1] tensor, got "
                        f"{kv_blocks.dtype} {list(kv_blocks.shape)}")


def map_value_problems(kv_blocks, kv_counts, n_kv_blocks: int) -> list[str]:
    """Counts in ``[0, width]``, listed entries strictly increasing in ``[0, n_kv_blocks)``: CPU tensors only."""
    if kv_counts.device.type != "cpu" or G.is_traced(kv_counts) or G.is_traced(kv_blocks) or not kv_counts.numel():
        return []
    width = kv_blocks.shape[1]
    counts = kv_counts.long()
    if int(counts.min()) < 0 or int(counts.max()) > width:
        return [f"kv_counts values must lie in [0, width={width}]; got values in "
                f"[{int(counts.min())}, {int(counts.max())}]"]
    listed = torch.arange(width) < counts[:, None]
    blocks = kv_blocks.long()
    if bool((listed & ((blocks < 0) | (blocks >= n_kv_blocks))).any()):
        return [f"kv_blocks entries (the first kv_counts of each row) must lie in [0, {n_kv_blocks})"]
    if width > 1 and bool((listed[:, 1:] & (blocks[:, 1:] <= blocks[:, :-1])).any()):
        return ["kv_blocks entries of a row must be strictly increasing (each key block listed once)"]
    return []


def describe_block_sparse_tensors(q, k, v, kv_blocks, kv_counts, *, block_m=64, block_n=64, n_kv_blocks=None,
                                  scale=None, return_lse=False) -> InputDesc:
    """Validate ``block_sparse_attention``'s tensors (the map unpacked) for backend selection."""
    problems: list[str] = []
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                              or not math.isfinite(scale)):
        problems.append(f"scale must be a finite number or None (1/sqrt(Dh)), got {scale!r}")
    if not isinstance(return_lse, bool):
        problems.append(f"return_lse must be a bool, got {return_lse!r}")
    if problems or not G.check_operands({"q": q, "k": k, "v": v}, "bshd", problems):
        plat = tensor_platform(q.device) if isinstance(q, torch.Tensor) else None
        return InputDesc(platform=plat, problems=problems)
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    desc = InputDesc(plat, arch, (dtype_name(q.dtype),), q.shape[-1], (), problems)
    sizes = G.check_shapes(q, k, v, "bshd", problems)
    if sizes is None:
        return desc
    B, Sq, Sk, Hq, Hk, Dh = sizes
    bm, bn = block_m, block_n
    nq, nk = -(-Sq // bm), -(-Sk // bn)
    _map_problems(q, kv_blocks, kv_counts, Sk, nq, nk, n_kv_blocks, problems)
    if not problems:
        problems += map_value_problems(kv_blocks, kv_counts, nk)
    if problems:
        return desc
    out_shape = tuple(q.shape)
    o = G.strides_of(G.contiguous_strides(out_shape), "bshd")
    geom = SparseGeometry(B, Sq, Sk, Hq, Hk, Dh, q.dtype, G.strides_of(q, "bshd"), G.strides_of(k, "bshd"),
                          G.strides_of(v, "bshd"), o, out_shape, (bm, bn), nk,
                          1.0 / math.sqrt(Dh) if scale is None else float(scale), return_lse)
    tags = [S.BSHD, S.head_dim_tag(Dh)]
    tags += [S.LSE] if return_lse else []
    tags += [S.GQA] if Hk != Hq else []
    tags += [S.LONG_ROWS] if G.long_rows(Sq, Sk, Dh, geom.q, geom.k, geom.v, o) else []
    desc.layouts = tuple(tags)
    desc.info = {"geom": geom, "empty": B == 0 or Sq == 0 or Sk == 0 or Hq == 0 or Dh == 0, "device": q.device}
    return desc


def _unpack(block_map, block) -> tuple[torch.Tensor, torch.Tensor, tuple[tuple[str, object], ...]] | str:
    """The map's tensors and the plan options, or the problem."""
    if not isinstance(block_map, BlockMap):
        return f"block_map must be a BlockMap (video_block_map, block_map_from_mask), got {type(block_map).__name__}"
    try:
        bm, bn = block_pair(block_map.block)
        if block is not None and block_pair(block) != (bm, bn):
            return f"block={block!r} differs from the map's blocks {block_map.block}"
    except ValueError as e:
        return str(e)
    return block_map.kv_blocks, block_map.kv_counts, (("block_m", bm), ("block_n", bn),
                                                       ("n_kv_blocks", block_map.n_kv_blocks))


def describe_block_sparse_attention(q, k, v, block_map, *, block=None, scale=None, return_lse=False) -> InputDesc:
    """Validate the arguments of ``block_sparse_attention`` and describe them for backend selection."""
    got = _unpack(block_map, block)
    if isinstance(got, str):
        plat = tensor_platform(q.device) if isinstance(q, torch.Tensor) else None
        return InputDesc(platform=plat, problems=[got])
    kv_blocks, kv_counts, opts = got
    return describe_block_sparse_tensors(q, k, v, kv_blocks, kv_counts, **dict(opts), scale=scale,
                                         return_lse=return_lse)


def per_call(q, k, v, kv_blocks, kv_counts, *, n_kv_blocks=None, **_) -> str | None:
    """What the plan key cannot see: the map's values (CPU tensors only)."""
    found = map_value_problems(kv_blocks, kv_counts, n_kv_blocks)
    return found[0] if found else None


def empty_result(geom: SparseGeometry):
    """No query, head or head dim: empty outputs; no key: output 0 and lse -inf (an empty key set)."""

    def run(q, *_):
        o = torch.zeros(geom.out_shape, dtype=geom.dtype, device=q.device)
        if not geom.return_lse:
            return o
        return o, torch.full((geom.B, geom.Hq, geom.Sq), float("-inf"), dtype=torch.float32, device=q.device)

    return run


BLOCK_SPARSE_ATTENTION = Op(
    "attention.block_sparse_attention",
    distribution=S.DISTRIBUTION,
    summary="softmax(q k^T * scale) v over the key blocks a block map lists per query block (bshd, GQA, lse)",
    describe=describe_block_sparse_attention,
    describe_tensors=describe_block_sparse_tensors,
    n_tensors=5,
    reference=".block_sparse_attention_torch:block_sparse_attention",
    backends=[
        Backend("triton", ".block_sparse_attention_triton", S.SPARSE_TRITON_CAPS, S.ATTENTION_CLOSE, priority=10,
                notes=S.SPARSE_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".block_sparse_attention_torch", S.TORCH_CAPS, Contract.exact(), notes=S.SPARSE_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    per_call=per_call,
    bench=f"{S.SPARSE_BENCH}:block_sparse_attention_cases",
)


@BLOCK_SPARSE_ATTENTION.entry
def block_sparse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_map: BlockMap,
    *,
    block: tuple[int, int] | None = None,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q @ k^T * scale + bias) @ v`` per (sample, head), ``bias`` 0 where the map lists the
    pair's blocks and -inf elsewhere: query ``i`` attends to key ``j`` iff ``block_map`` lists key block
    ``j // block_n`` for query block ``i // block_m`` (dense attention under ``token_mask(block_map, Sq,
    Sk)``). A query whose block lists no key block gets output 0 and lse -inf.

    q: ``[B, Sq, Hq, Dh]``; k, v: ``[B, Sk, Hk, Dh]`` with ``Hk`` dividing ``Hq`` (GQA: q head h reads
        k/v head ``h // (Hq // Hk)``). One dtype: bf16 | fp16 (fp32 on the ``torch`` backend). Any
        strides with the head dim contiguous (views of a fused QKV projection are read in place).
    block_map: a :class:`BlockMap` on q's device with ``cdiv(Sq, block_m)`` rows and
        ``cdiv(Sk, block_n)`` key blocks, shared by every sample and head. Its values are checked on
        the CPU; on a GPU they are not read on the host, and a row whose count or entries are out of
        range gets NaN output, never a read outside k or v (entries must be increasing, as the
        builders make them).
    block: ``(block_m, block_n)``; None takes the map's, anything else must equal it.
    scale: default ``1 / sqrt(Dh)``.
    return_lse: also return the log-sum-exp (natural log) of each query's kept scores, fp32 ``[B, Hq, Sq]``.
    backend: ``None`` (``triton`` on CUDA / ROCm, ``torch`` elsewhere), ``"triton"`` or ``"torch"``.

    Returns the output (contiguous ``[B, Sq, Hq, Dh]``, q's dtype) or ``(out, lse)``. Raises
    ``UnsupportedInputError`` naming every backend's reason when no backend can serve the inputs.
    """
    got = _unpack(block_map, block)
    if isinstance(got, str):
        raise UnsupportedInputError(f"{BLOCK_SPARSE_ATTENTION.id}: unsupported input:\n  - {got}")
    kv_blocks, kv_counts, opts = got
    if is_compiling():
        args = (q, k, v, kv_blocks, kv_counts, *(value for _, value in opts), scale, backend)
        return _custom_op_lse(*args) if return_lse else _custom_op(*args)
    opts = (*opts, ("scale", scale), ("return_lse", return_lse))
    return BLOCK_SPARSE_ATTENTION.plan((q, k, v, kv_blocks, kv_counts), backend, None, opts)(
        q, k, v, kv_blocks, kv_counts)


can_use_block_sparse_attention = BLOCK_SPARSE_ATTENTION.can_use
block_sparse_attention_reference = BLOCK_SPARSE_ATTENTION.reference


_SCHEMA = ("(Tensor q, Tensor k, Tensor v, Tensor kv_blocks, Tensor kv_counts, int block_m, int block_n, "
           "int n_kv_blocks, float? scale, str? backend)")
_KEYED = ("block_m", "block_n", "n_kv_blocks", "scale")
_custom_op, _custom_op_lse = G.bshd_lse_custom_ops(BLOCK_SPARSE_ATTENTION, "block_sparse_attention", _SCHEMA, _KEYED)
