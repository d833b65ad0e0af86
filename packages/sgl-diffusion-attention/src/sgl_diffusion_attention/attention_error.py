"""``attention_error``: how far a fast attention's output is from fp32 attention on the same tensors.

The quality guard of the approximate paths (block-sparse maps, 8-bit kernels, a low-precision
backend): on the caller's own q, k, v it computes the reference in fp32 (the ``torch`` definition of
``attention``, or of ``block_sparse_attention`` when a ``block_map`` says which keys the fast path
was meant to see) and compares the fast output with it. The reference runs query chunk by query
chunk (the definitions' own loop), so production shapes fit a GPU; it costs fp32 copies of q, k, v.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .block_map import BlockMap

ALSO_EXPORTS = ("AttentionError", "attention_error")


@dataclass(frozen=True)
class AttentionError:
    """The distance of an output from the fp32 reference, over every element.

    cosine: cosine similarity of the two outputs as flat vectors (1: same direction).
    rel_l1: ``sum |out - ref| / sum |ref|``.
    max_abs: the largest ``|out - ref|``.
    ref_max: the largest ``|ref|`` (the scale ``max_abs`` is read against).
    """

    cosine: float
    rel_l1: float
    max_abs: float
    ref_max: float

    def __str__(self) -> str:
        return (f"cosine {self.cosine:.6f}, relative L1 {self.rel_l1:.3e}, max |error| {self.max_abs:.3e} "
                f"(max |reference| {self.ref_max:.3e})")


def compare(out: torch.Tensor, ref: torch.Tensor) -> AttentionError:
    """The :class:`AttentionError` of ``out`` against ``ref`` (same shape), accumulated in fp64."""
    if out.shape != ref.shape:
        raise ValueError(f"the output's shape {list(out.shape)} differs from the reference's {list(ref.shape)}")
    a, b = out.double().flatten(), ref.double().flatten()
    diff = a - b
    denom = (a.dot(a) * b.dot(b)).sqrt()
    l1 = b.abs().sum()
    return AttentionError(
        cosine=float(a.dot(b) / denom) if denom > 0 else float(torch.equal(a, b)),
        rel_l1=float(diff.abs().sum() / l1) if l1 > 0 else float(diff.abs().sum()),
        max_abs=float(diff.abs().max()) if diff.numel() else 0.0,
        ref_max=float(b.abs().max()) if b.numel() else 0.0,
    )


def attention_error(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, *,
                    block_map: BlockMap | None = None, block: int | tuple[int, int] | None = None,
                    layout: str = "bshd", scale: float | None = None,
                    kv_lens: torch.Tensor | None = None) -> AttentionError:
    """How far ``out`` is from fp32 attention over ``q, k, v`` (the caller's real tensors).

    ``out``: the fast path's output, shaped like the reference (``[B, S, H, Dh]`` for ``bshd``).
    ``block_map`` (and ``block``): the reference is ``block_sparse_attention``'s definition under that
    map (bshd), i.e. the error of the kernel alone; without it, dense ``attention`` with ``layout``,
    ``scale`` and ``kv_lens``, i.e. the error of the approximation as a whole (a sparse map's included).

    Returns an :class:`AttentionError` (cosine similarity, relative L1, max error). Raises
    ``ValueError`` / ``UnsupportedInputError`` for inputs the reference cannot take.
    """
    for name, t in (("q", q), ("k", k), ("v", v), ("out", out)):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise ValueError(f"{name} must be a floating-point tensor, got "
                             f"{type(t).__name__ if not isinstance(t, torch.Tensor) else t.dtype}")
    q32, k32, v32 = (t.float() for t in (q, k, v))
    if block_map is not None:
        from .block_sparse_attention import block_sparse_attention_reference

        if layout != "bshd" or kv_lens is not None:
            raise ValueError("with a block_map the reference is block_sparse_attention's: bshd, no kv_lens")
        ref = block_sparse_attention_reference(q32, k32, v32, block_map, block=block, scale=scale)
    else:
        from .attention import attention_reference

        if block is not None:
            raise ValueError("block= needs a block_map")
        ref = attention_reference(q32, k32, v32, layout=layout, scale=scale, kv_lens=kv_lens)
    return compare(out, ref)
