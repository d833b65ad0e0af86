"""Varlen attention layouts, one family defined in this file (``varlen.py``):
``build_varlen_meta`` (padding mask -> packed-token metadata), ``varlen_pack_qkv`` (q/k/v
packing) and ``varlen_scatter`` (the packed attention output back to ``[B, S, H, Dh]``).
Contract ``exact`` (``torch.equal`` to the eager chains in ``varlen_torch``). Backends:
``varlen_triton`` and ``varlen_torch``.

Index values, the one data-dependent input problem, follow the indexed modulation ops:
eager calls check them (``check_index_range``: one ``aminmax`` and one host sync the first
time an index tensor is seen, none again while it is unmodified) and raise
``IndexOutOfRangeError`` before any kernel runs, on every backend;
``check_index=False``, ``torch.compile`` and CUDA graph capture skip the check, and there
every backend writes NaN where an out-of-range index points (never a silent zero row,
never an out-of-bounds read).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import (
    InputDesc,
    Op,
    check_index_range,
    device_arch,
    index_check_mode,
    is_compiling,
    tensor_platform,
)

from . import _specs as S
from ._common import check_dims, check_int, check_last_contiguous, fake_outputs, new_desc
from ._geometry import GatherGeom, MetaGeom, contiguous_strides

OP_PACK = "layout.varlen_pack_qkv"
OP_SCATTER = "layout.varlen_scatter"


def describe_build_varlen_meta(mask, max_as_tensor=False):
    """Validate ``build_varlen_meta``'s argument: a ``[B, S]`` bool mask (``max_as_tensor``: the
    custom op's form, ``max_seqlen`` as a tensor)."""
    problems: list[str] = []
    if not isinstance(mask, torch.Tensor):
        return InputDesc(platform=None, problems=[f"mask must be a torch.Tensor, got {type(mask).__name__}"])
    plat = tensor_platform(mask.device)
    desc = InputDesc(plat, device_arch(plat, mask.device.index) if plat in ("cuda", "hip") else None,
                     (), None, (), problems)
    if mask.dtype != torch.bool:
        problems.append(f"mask has dtype {mask.dtype}; expected torch.bool (True = a valid token)")
    if mask.dim() != 2:
        problems.append(f"mask must be [B, S] (2-D), got shape {list(mask.shape)}")
    if problems:
        return desc
    B, S = mask.shape
    desc.info = {"geom": MetaGeom(B, S, max_as_tensor)}
    return desc


def describe_varlen_pack_qkv(q, k, v, indices):
    """Validate the arguments of ``varlen_pack_qkv``; ``info["geom"]``: (GatherGeom, (H, Dh))."""
    problems: list[str] = []
    desc, device = new_desc({"q": q, "k": k, "v": v}, problems)
    if problems:
        return desc
    if not all(check_dims(n, t, 4, "[B, S, H, Dh]", problems) for n, t in (("q", q), ("k", k), ("v", v))):
        return desc
    if k.shape != q.shape or v.shape != q.shape:
        problems.append(f"q, k, v must have one shape, got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
        return desc
    for n, t in (("q", q), ("k", k), ("v", v)):
        check_last_contiguous(n, t, problems)
    _check_index("indices", indices, device, problems)
    if problems:
        return desc
    B, S, H, Dh = q.shape
    nnz = indices.shape[0]
    if isinstance(nnz, int) and isinstance(B * S, int) and nnz and not B * S:  # (no guard when traced)
        problems.append(f"indices has {nnz} entries, but q, k, v have no tokens (B*S = 0): no index can pick one")
        return desc
    d = contiguous_strides((1, H, Dh))
    src = tuple((t.stride(0), t.stride(1), t.stride(2)) for t in (q, k, v))
    g = GatherGeom(nnz, B * S, S, H, Dh, src, ((d[0], d[1]),) * 3, lo=0)
    desc.last_dim = Dh
    desc.info = {"geom": (g, (H, Dh)), "shapes": ((nnz, H, Dh),) * 3}
    return desc


def _check_index(name, idx, device, problems):
    if not isinstance(idx, torch.Tensor):
        problems.append(f"{name} must be a torch.Tensor, got {type(idx).__name__}")
    elif idx.dtype != torch.int64 or idx.dim() != 1:
        problems.append(f"{name} must be a 1-D int64 tensor, got {idx.dtype} of shape {list(idx.shape)}")
    elif device is not None and idx.device != device:
        problems.append(f"{name} is on {idx.device}, the data on {device}: all tensors must be on one device")
    elif isinstance(idx.shape[0], int) and idx.shape[0] > 1 and idx.stride(0) != 1:  # (no guard when traced)
        problems.append(f"{name} must be contiguous, got stride {idx.stride(0)}")


def describe_varlen_scatter(out, inverse_or_indices, batch, seqlen):
    """Validate the arguments of ``varlen_scatter``; ``info["geom"]``: (GatherGeom, shape, from_indices)."""
    problems: list[str] = []
    desc, device = new_desc({"out": out}, problems)
    if problems or not check_dims("out", out, 3, "[nnz, H, Dh]", problems):
        return desc
    check_last_contiguous("out", out, problems)
    _check_index("inverse_or_indices", inverse_or_indices, device, problems)
    ok = check_int("batch", batch, problems) & check_int("seqlen", seqlen, problems)
    if problems or not ok:
        return desc
    n, H, Dh = out.shape
    rows = batch * seqlen
    m = inverse_or_indices.shape[0]
    from_indices = m != rows
    if from_indices and m != n:
        problems.append(f"inverse_or_indices has {m} entries: expected batch * seqlen = {rows} (the inverse "
                        f"map) or out.shape[0] = {n} (the indices of the valid tokens)")
        return desc
    shape = (batch, seqlen, H, Dh)
    d = contiguous_strides(shape)
    # R2 = n: row i of out is (i // n, i % n) = (0, i) (the launcher uses max(n, 1)); -1 = padding
    g = GatherGeom(rows, n, n, H, Dh, ((0, out.stride(0), out.stride(1)),), ((d[1], d[2]),), lo=-1)
    desc.last_dim = Dh
    desc.info = {"geom": (g, shape, from_indices), "shapes": shape}
    return desc


def _op(name: str, summary: str, describe, n_tensors: int, note: str) -> Op:
    return Op(
        f"layout.{name}",
        distribution=S.DISTRIBUTION,
        summary=summary,
        describe=describe,
        n_tensors=n_tensors,
        reference=f".varlen_torch:{name}",
        backends=S.backends(f".varlen_triton:prepare_{name}", f".varlen_torch:prepare_{name}", note,
                            aot=f"aot_{name}"),
        default_exact=True,
        bench=f"{S.BENCH}:{name}_cases",
    )


BUILD_VARLEN_META = _op("build_varlen_meta", "[B, S] bool mask -> (indices, cu_seqlens, max_seqlen, inverse)",
                        describe_build_varlen_meta, 1, S.META_NOTE)
VARLEN_PACK_QKV = _op("varlen_pack_qkv", "t.reshape(B*S, H, Dh).index_select(0, indices) for q, k, v",
                      describe_varlen_pack_qkv, 4, S.GATHER_NOTE)
VARLEN_SCATTER = _op("varlen_scatter", "packed [nnz, H, Dh] -> [B, S, H, Dh], zeros at padding",
                     describe_varlen_scatter, 2, S.GATHER_NOTE)


def _check_scatter_index(out, idx, rows, mode):
    if idx.shape[0] == rows:  # read as the inverse map (see varlen_scatter)
        check_index_range(idx, -1, out.shape[0], OP_SCATTER, name="inverse_or_indices (the inverse map)",
                          bound="nnz", meaning="rows of out; -1 = padding", cache=mode == "cached")
    else:
        check_index_range(idx, 0, rows, OP_SCATTER, name="inverse_or_indices (the valid-token indices)",
                          bound="batch*seqlen", meaning="tokens of the result", cache=mode == "cached")



@BUILD_VARLEN_META.entry
def build_varlen_meta(mask: torch.Tensor, *,
                      backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]:
    """``(indices, cu_seqlens, max_seqlen, inverse)`` of a padding mask, for varlen attention.

    mask: ``[B, S]`` bool, True = a valid token (any strides).
    indices: int64 ``[nnz]``, ``torch.nonzero(mask.reshape(-1)).flatten()`` (flattened
        ``b*S + s`` of every valid token, in order).
    cu_seqlens: int32 ``[B+1]``, ``0`` then the cumulative valid counts per sample.
    max_seqlen: Python int, the largest valid count (0 for B = 0).
    inverse: int64 ``[B*S]``, the packed row of every token, ``-1`` for padding
        (``inverse[indices] = arange(nnz)``): what ``varlen_scatter`` reads.
    Data dependent: the result sizes need one device-to-host read (as ``torch.nonzero``
    does). Under ``torch.compile`` the op traces with an unbacked size and ``max_seqlen``
    becomes ``.item()`` of a tensor (set ``torch._dynamo.config.capture_scalar_outputs``).
    Contract ``exact``.
    """
    if is_compiling():
        idx, cu, mx, inv = _meta_op(mask, backend)
        return idx, cu, mx.item(), inv
    return BUILD_VARLEN_META.plan((mask,), backend)(mask)


@VARLEN_PACK_QKV.entry
def varlen_pack_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, indices: torch.Tensor, *,
                    check_index: bool | str = True,
                    backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``t.reshape(B*S, H, Dh).index_select(0, indices)`` for t in q, k, v.

    q, k, v: ``[B, S, H, Dh]``, one shape and dtype, last dim contiguous; other strides are
        read as they are (a permuted ``[B, H, S, Dh]`` tensor passed as ``.transpose(1, 2)``
        costs no copy).
    indices: int64 ``[nnz]`` from ``build_varlen_meta``, contiguous; values in ``[0, B*S)``
        (negative values are rejected, not wrapped).
    check_index: ``True`` (default): eager calls check ``indices`` and raise
        ``IndexOutOfRangeError`` (an ``UnsupportedInputError`` and an ``IndexError``) naming
        the range found, on every backend. One device reduction (one host sync) the first
        time an index tensor is seen; the same tensor, unmodified (version counter
        unchanged), is not reduced again. ``"always"`` reduces on every call (see
        ``sgl_diffusion_core.forget_index_checks`` for writes the version counter misses).
        ``False`` skips the check; so do ``torch.compile`` and CUDA graph capture. Unchecked,
        an out-of-range index reads nothing and its row of each result is NaN (never out of
        bounds, never a zero row).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.
    Returns three new contiguous ``[nnz, H, Dh]`` tensors. Contract ``exact``.
    """
    mode = index_check_mode(check_index, OP_PACK)
    if is_compiling():
        return _pack_op(q, k, v, indices, backend)
    plan = VARLEN_PACK_QKV.plan((q, k, v, indices), backend)
    if mode is not None:
        check_index_range(indices, 0, q.shape[0] * q.shape[1], OP_PACK, name="indices", bound="B*S",
                          meaning="tokens of q, k, v", cache=mode == "cached")
    return plan(q, k, v, indices)


@VARLEN_SCATTER.entry
def varlen_scatter(out: torch.Tensor, inverse_or_indices: torch.Tensor, batch: int, seqlen: int, *,
                   check_index: bool | str = True, backend: str | None = None) -> torch.Tensor:
    """The packed attention output back to ``[batch, seqlen, H, Dh]``, zeros at padding.

    out: ``[nnz, H, Dh]``, last dim contiguous, any row/head strides.
    inverse_or_indices: int64, either the ``inverse`` map of ``build_varlen_meta``
        (``batch*seqlen`` entries, ``-1`` = padding; one pass, the fast form) or its
        ``indices`` (``nnz`` entries; the inverse map is built first). A tensor with
        ``batch*seqlen`` entries is always read as the inverse map (for a full mask the two
        are the same tensor). Under ``torch.compile`` pass the inverse map (its size is
        static; the indices' size is data dependent). Values: the inverse map in
        ``[-1, nnz)``, the indices in ``[0, batch*seqlen)``.
    check_index: as in :func:`varlen_pack_qkv`. Unchecked, an inverse-map entry out of range
        gives a NaN row; an out-of-range index (which names no row of the result) makes the
        whole result NaN.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.
    Eager chain: ``torch.zeros(B*S, H, Dh).index_copy_(0, indices, out).view(B, S, H, Dh)``
    (for the inverse map: rows ``p`` with ``inverse[p] >= 0`` get ``out[inverse[p]]``).
    Returns a new contiguous tensor. Contract ``exact``.
    """
    mode = index_check_mode(check_index, OP_SCATTER)
    if is_compiling():
        return _scatter_op(out, inverse_or_indices, batch, seqlen, backend)
    plan = VARLEN_SCATTER.plan((out, inverse_or_indices), backend, None, (("batch", batch), ("seqlen", seqlen)))
    if mode is not None:
        _check_scatter_index(out, inverse_or_indices, batch * seqlen, mode)
    return plan(out, inverse_or_indices, batch, seqlen)


# the predicates describe shapes only: they never read index values (no sync)
can_use_build_varlen_meta = BUILD_VARLEN_META.can_use
can_use_varlen_pack_qkv = VARLEN_PACK_QKV.can_use
can_use_varlen_scatter = VARLEN_SCATTER.can_use
build_varlen_meta_reference = BUILD_VARLEN_META.reference
# the chains unguarded: they raise on a bad index on CPU
varlen_pack_qkv_reference = VARLEN_PACK_QKV.reference
varlen_scatter_reference = VARLEN_SCATTER.reference


def _meta_fake(mask, backend):
    BUILD_VARLEN_META.checked(mask)
    B, S = mask.shape
    nnz = torch.library.get_ctx().new_dynamic_size()
    return (mask.new_empty(nnz, dtype=torch.int64), mask.new_empty(B + 1, dtype=torch.int32),
            torch.empty((), dtype=torch.int64), mask.new_empty(B * S, dtype=torch.int64))


def _pack_fake(q, k, v, indices, backend):
    return fake_outputs(VARLEN_PACK_QKV.checked(q, k, v, indices), q)


def _scatter_fake(out, inverse_or_indices, batch, seqlen, backend):
    desc = VARLEN_SCATTER.checked(out, inverse_or_indices, options=(("batch", batch), ("seqlen", seqlen)))
    return fake_outputs(desc, out)


_meta_op = BUILD_VARLEN_META.custom_op(
    "build_varlen_meta", fake=_meta_fake, options={"max_as_tensor": True},
    schema="(Tensor mask, str? backend) -> (Tensor, Tensor, Tensor, Tensor)",
)
_pack_op = VARLEN_PACK_QKV.custom_op(
    "varlen_pack_qkv", fake=_pack_fake,
    schema="(Tensor q, Tensor k, Tensor v, Tensor indices, str? backend) -> (Tensor, Tensor, Tensor)",
)
_scatter_op = VARLEN_SCATTER.custom_op(
    "varlen_scatter", fake=_scatter_fake, keyed=("batch", "seqlen"),
    schema="(Tensor out, Tensor inverse_or_indices, int batch, int seqlen, str? backend) -> Tensor",
)
