"""``indexed_scale_shift``: ``x * (scale_offset + scale_table[b, index]) + shift_table[b, index]``, a table
row per token, bit-exact to the eager chain.

``scale_shift`` whose modulation row for token ``(b, s)`` is ``table[b, index[b, s]]``
(image-edit models such as Qwen-Image-Edit modulate reference and target tokens differently
this way): the same kernel (``_scale_shift_triton``), dtype rules and exact contract. How
the index is checked: ``_indexed.py``.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, index_check_mode, is_compiling
from sgl_diffusion_core import IndexOutOfRangeError as IndexOutOfRangeError

from . import _specs as S
from ._indexed import describe_indexed, validate_index
from .scale_shift import Geometry, chain_dtypes, empty_result


def describe_indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
) -> InputDesc:
    """Validate the arguments of ``indexed_scale_shift`` and describe them for backend selection."""
    tables = {"scale_table": scale_table, "shift_table": shift_table}
    desc, g, lay, ix = describe_indexed("x", x, tables, tuple(tables), index)
    geom = None
    if g is not None and not desc.problems:
        dts = chain_dtypes(x, scale_table, shift_table)
        geom = Geometry(g, lay["scale_table"], lay.get("shift_table"), *dts,
                            round_offset=desc.platform == "cpu", index=ix)
    desc.info = {"geom": geom, "empty": isinstance(x, torch.Tensor) and x.numel() == 0}
    return desc


ALSO_EXPORTS = ("IndexOutOfRangeError",)  # what a bad index raises (an UnsupportedInputError and an IndexError)

INDEXED_SCALE_SHIFT = Op(
    "modulate.indexed_scale_shift",
    distribution=S.DISTRIBUTION,
    summary="x * (scale_offset + scale_table[b, index]) + shift_table[b, index] (a table row per token), bit-exact",
    describe=describe_indexed_scale_shift,
    n_tensors=4,
    reference=".indexed_scale_shift_torch:indexed_scale_shift",
    backends=[
        Backend("triton", "._scale_shift_triton", S.INDEXED_TRITON_CAPS, Contract.exact(), priority=10,
                notes=S.TRITON_NOTE + S.INDEX_NOTE, aot="indexed_aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".indexed_scale_shift_torch", S.INDEXED_TORCH_CAPS, Contract.exact(),
                notes=S.TORCH_NOTE + S.TORCH_INDEX_NOTE, executed_on=S.EXECUTED_TORCH),
    ],
    default_exact=True,
    empty=empty_result,
    bench=f"{S.BENCH}:indexed_scale_shift_cases",
)


@INDEXED_SCALE_SHIFT.entry
def indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor:
    """``x * (scale_offset + scale_table[b, index[b, s]]) + shift_table[b, index[b, s]]``, ``torch.equal``
    to that eager chain (contract ``exact``; the pick written ``table[torch.arange(B)[:, None], index]``).

    Same rounding and dtypes as ``scale_shift`` (``scale_offset + row`` in the table's dtype,
    ``x * t1`` in ``promote(x, scale_table)``, ``+ shift`` in ``promote(t2, shift_table)``).

    x: ``[B, S, D]`` bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale_table, shift_table: ``[B, K, D]``, ``[1, K, D]`` or ``[K, D]`` (shared by the batch),
        K >= 1, same K; strided views allowed (e.g. chunks of a modulation projection), last
        dim contiguous. ``shift_table=None`` means no shift.
    index: ``[B, S]``, ``[1, S]`` or ``[S]`` (shared by the batch), int32 | int64, any strides;
        values in ``[0, K)`` (negative values are rejected, not wrapped).
    check_index: ``True`` (default): eager calls check the index and raise
        ``IndexOutOfRangeError`` (an ``UnsupportedInputError`` and an ``IndexError``) naming the
        range found. The check costs one device reduction (one host sync) the first time an
        index tensor is seen; the same tensor, unmodified (its version counter unchanged),
        is not reduced again, so a DiT's index pays it once, not once per block.
        ``"always"`` reduces on every call (for an index written where PyTorch's version
        counter cannot see it: ``.data``, NumPy / DLPack views, custom kernels, CUDA graph
        replay; ``sgl_diffusion_core.forget_index_checks()`` drops every remembered check).
        ``False`` skips the check; so do ``torch.compile`` and CUDA graph capture.
        Unchecked, an out-of-range token reads table row 0 (never out of bounds) and its output
        row is NaN.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x.
    """
    if is_compiling():
        index_check_mode(check_index, INDEXED_SCALE_SHIFT.id)
        return _custom_op(x, scale_table, shift_table, index, float(scale_offset), backend)
    plan = INDEXED_SCALE_SHIFT.plan((x, scale_table, shift_table, index), backend)
    validate_index(index, scale_table.shape[-2], INDEXED_SCALE_SHIFT.id, check_index)
    return plan(x, scale_table, shift_table, index, scale_offset)


# never reads the index values: an out-of-range value is found by the call itself
can_use_indexed_scale_shift = INDEXED_SCALE_SHIFT.can_use
# the chain unguarded: raises on a bad index on CPU
indexed_scale_shift_reference = INDEXED_SCALE_SHIFT.reference


def _fake(x, scale_table, shift_table, index, scale_offset, backend):
    INDEXED_SCALE_SHIFT.validate(x, scale_table, shift_table, index)
    return torch.empty(x.shape, dtype=chain_dtypes(x, scale_table, shift_table)[2], device=x.device)


_custom_op = INDEXED_SCALE_SHIFT.custom_op(
    "indexed_scale_shift", fake=_fake,
    schema="(Tensor x, Tensor scale_table, Tensor? shift_table, Tensor index, float scale_offset, str? backend)"
           " -> Tensor",
)
