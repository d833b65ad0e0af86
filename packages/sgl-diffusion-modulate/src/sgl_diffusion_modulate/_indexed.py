"""Indexed modulation: each token picks its row of a ``[K, D]`` table. What the two indexed ops share.

``indexed_scale_shift`` and ``indexed_gated_residual`` / ``indexed_gated_residual_`` are
``scale_shift`` and ``gated_residual`` whose modulation row for token ``(b, s)`` is
``table[b, index[b, s]]`` (image-edit models such as Qwen-Image-Edit modulate reference
and target tokens differently this way). They share those ops' kernels, dtype rules and
exact contract.

Index validation, the one data-dependent input problem (see the README):
- eager calls check ``index`` with one device reduction (``torch.aminmax``, one host
  sync) and raise :class:`IndexOutOfRangeError` naming the offending range before any
  kernel runs. The range found is remembered for that tensor and version, so an
  unmodified index is reduced once, not on every call (``check_index="always"``: every
  call); ``check_index=False`` skips the check;
- under ``torch.compile`` and CUDA graph capture a host sync is not allowed, so there is
  no check: every backend reads table row 0 for an out-of-range token (never out of
  bounds) and writes NaN over that token's whole output row (into ``residual`` itself for
  the in-place form). A valid token's result is the same bits either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import ModLayout, RowGeometry, check_index_range, describe_rows, index_check_mode

from ._specs import INDEXED_LAYOUTS

INDEX_DTYPES = (torch.int32, torch.int64)


@dataclass(frozen=True)
class IndexLayout:
    """Where token ``(b, s)`` finds its table row number: ``index + b*sb + s*ss``; tables have K rows."""

    sb: int
    ss: int
    K: int


def _table_layout(name: str, t: torch.Tensor, g: RowGeometry, problems: list[str]) -> tuple[ModLayout, int] | None:
    """A ``[B, K, D]`` / ``[1, K, D]`` / ``[K, D]`` table as a ``ModLayout`` (ss = row stride) and K."""
    shape = list(t.shape)
    want = f"[B, K, D] (B={g.B}), [1, K, D] or [K, D] with D={g.D}"
    if t.dim() not in (2, 3) or shape[-1] != g.D or (t.dim() == 3 and shape[0] not in (1, g.B)):
        problems.append(f"{name} of shape {shape} does not match x of shape {list(g.shape)}; expected {want}")
        return None
    if g.D > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(t.stride())}")
        return None
    K = shape[-2]
    if K == 0:
        problems.append(f"{name} of shape {shape} has no rows (K=0): no index can pick one")
        return None
    per_sample = t.dim() == 3 and shape[0] == g.B and g.B > 1
    tag = INDEXED_LAYOUTS[0] if per_sample else INDEXED_LAYOUTS[1]
    return ModLayout(tag, t.stride(0) if per_sample else 0, t.stride(-2), 1), K


def _index_layout(index: object, g: RowGeometry, K: int, device: torch.device, problems: list[str]):
    if index is None:
        problems.append("index is required (got None)")
        return None
    if not isinstance(index, torch.Tensor):
        problems.append(f"index must be a torch.Tensor, got {type(index).__name__}")
        return None
    if index.device != device:
        problems.append(f"index is on {index.device}, x is on {device}: all tensors must be on one device")
    if index.dtype not in INDEX_DTYPES:
        problems.append(f"index has dtype {index.dtype}; expected torch.int32 or torch.int64")
    shape = list(index.shape)
    if index.dim() == 1 and shape == [g.S]:
        return IndexLayout(0, index.stride(0), K)
    if index.dim() == 2 and shape[1] == g.S and shape[0] in (1, g.B):
        return IndexLayout(index.stride(0) if shape[0] == g.B and g.B > 1 else 0, index.stride(1), K)
    problems.append(f"index of shape {shape} does not match x of shape {list(g.shape)}; "
                    f"expected [B, S] (B={g.B}, S={g.S}), [1, S] or [S]")
    return None


def describe_indexed(name: str, x: object, others: dict[str, object], tables: tuple[str, ...], index: object):
    """Shared first half: x as ``[B, S, D]`` rows, the float operands, the tables (one K), the index.

    ``others`` are the float operands (``tables`` names those that are tables; the first is
    required). Returns ``(desc, g, layouts, ix)``; ``g`` is None when x itself is unusable.
    """
    required = tuple(n for n in others if n not in tables[1:])
    desc, g = describe_rows(name, x, others, required=required)
    if g is None:
        return desc, None, {}, None
    problems = desc.problems
    if g.is_2d:
        problems.append(f"{name} must be [B, S, D] for an indexed op, got shape {list(g.shape)}")
        return desc, None, {}, None
    layouts: dict[str, ModLayout] = {}
    ks: dict[str, int] = {}
    for tname in tables:
        t = others[tname]
        found = _table_layout(tname, t, g, problems) if t is not None else None
        if found is not None:
            layouts[tname], ks[tname] = found
    if len(set(ks.values())) > 1:
        problems.append("the tables must have the same number of rows K (one index picks from all), got "
                        + ", ".join(f"{n} K={k}" for n, k in ks.items()))
    K = next(iter(ks.values()), 1)
    ix = _index_layout(index, g, K, x.device, problems)
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in layouts.values()))
    return desc, g, layouts, ix


def validate_index(index: torch.Tensor, K: int, op: str, check_index: object = True) -> None:
    """Raise :class:`IndexOutOfRangeError` unless every index value lies in ``[0, K)``, as the
    op's ``check_index`` asks (``True``: one device reduction and host sync per index tensor
    and version, ``"always"``: per call, ``False``: none; see
    ``sgl_diffusion_core.check_index_range``); ``ValueError`` for another ``check_index``."""
    mode = index_check_mode(check_index, op)
    if mode is not None:
        check_index_range(index, 0, K, op, name="index", bound="K", meaning="rows of the table",
                          cache=mode == "cached")


