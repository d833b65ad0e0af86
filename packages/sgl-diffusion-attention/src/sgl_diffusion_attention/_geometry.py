"""What ``describe_attention`` derives from the arguments of ``attention`` (no backend, no Triton).

Value checks (``kv_lens`` in ``[1, Sk]``, ``cu_seqlens`` non-decreasing from 0 to the packed
length, ``max_seqlen_q`` at least the longest query segment) read the tensors' values, so they
run only where that costs no device sync: on CPU tensors, outside tracing. On a GPU the kernels
never read or write outside the tensors for any value, and a sample whose value is out of range
gets NaN rows (see ``attention``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LAYOUTS = ("bshd", "bhsd", "thd")


@dataclass(frozen=True)
class Strides:
    """Element strides of one ``[B, S, H, Dh]``-like operand: per sample, per token, per head."""

    sb: int
    ss: int
    sh: int


@dataclass(frozen=True)
class Geometry:
    """One call of ``attention``: sizes, strides, features; what every backend needs besides the tensors.

    Varlen (``layout="thd"``): ``B`` is the number of segments, ``Sq`` / ``Sk`` the packed lengths
    (``total_q`` / ``total_k``) and every ``sb`` is 0 (a segment starts at its ``cu_seqlens`` row).
    """

    layout: str
    B: int
    Sq: int
    Sk: int
    Hq: int
    Hk: int
    Dh: int
    dtype: torch.dtype
    q: Strides
    k: Strides
    v: Strides
    o: Strides  # of ``out`` when given, else of the new contiguous output
    out_shape: tuple[int, ...]
    lse_shape: tuple[int, ...]  # [B, Hq, Sq]; varlen [Hq, total_q]
    kv_lens: bool
    varlen: bool
    return_lse: bool
    scale: float
    max_seqlen_q: int | None
    given_out: bool
    kv_lens_host: bool = False  # kv_lens on the CPU for a GPU call: its values are known on the host
    cu_host: bool = False  # cu_seqlens on the CPU for a GPU call: the offsets are known on the host


def strides_of(t: torch.Tensor | tuple[int, ...], layout: str) -> Strides:
    """The strides of a tensor of this layout (or a tuple of its element strides) as :class:`Strides`."""
    st = t if isinstance(t, tuple) else t.stride()
    if layout == "bshd":
        return Strides(st[0], st[1], st[2])
    if layout == "bhsd":
        return Strides(st[0], st[2], st[1])
    return Strides(0, st[0], st[1])  # thd: [total, H, Dh]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def sizes_of(t: torch.Tensor, layout: str) -> tuple[int, int, int, int]:
    """``(B, S, H, Dh)`` of a 4-D operand (``B`` = 1 for a packed ``[total, H, Dh]`` one)."""
    if layout == "bshd":
        return tuple(t.shape)
    if layout == "bhsd":
        b, h, s, d = t.shape
        return b, s, h, d
    total, h, d = t.shape
    return 1, total, h, d


def is_traced(t: torch.Tensor) -> bool:
    """A fake or meta tensor (tracing, ``torch.compile``): no values to read."""
    from torch._subclasses.fake_tensor import is_fake

    return t.device.type == "meta" or is_fake(t) or torch.compiler.is_compiling()


def _readable(t: object) -> bool:
    return isinstance(t, torch.Tensor) and t.device.type == "cpu" and not is_traced(t)


def segments_problem(name: str, offsets: list[int], total: int) -> str | None:
    """Why ``cu_seqlens`` values (read on the host) are not non-decreasing from 0 to the packed length, or None."""
    if not offsets or offsets[0] != 0 or offsets[-1] != total or any(a > b for a, b in zip(offsets, offsets[1:])):
        return f"{name} must be non-decreasing from 0 to the packed length {total}; got {offsets}"
    return None


def value_problems(kv_lens, cu_q, cu_k, Sk: int, total_q: int, total_k: int,
                   max_seqlen_q: int | None = None) -> list[str]:
    """Problems of the index values, for the tensors that can be read without a device sync."""
    out: list[str] = []
    if _readable(kv_lens) and kv_lens.numel():
        vals = kv_lens.tolist()  # a batch's lengths: cheaper read as a list than reduced as a tensor
        lo, hi = min(vals), max(vals)
        if lo < 1 or hi > Sk:
            out.append(f"kv_lens values must lie in [1, Sk={Sk}] (keys per sample); got values in [{lo}, {hi}]")
    for name, cu, total in (("cu_seqlens_q", cu_q, total_q), ("cu_seqlens_k", cu_k, total_k)):
        if _readable(cu) and cu.numel():
            vals = cu.tolist()
            why = segments_problem(name, vals, total)
            if why:
                out.append(why)
            elif cu is cu_q and max_seqlen_q is not None and len(vals) > 1:
                longest = max(b - a for a, b in zip(vals, vals[1:]))
                if longest > max_seqlen_q:
                        out.append(f"max_seqlen_q={max_seqlen_q} is below the longest query segment ({longest})")
    return out


def check_operands(named: dict[str, object], layout: str, problems: list[str]) -> bool:
    """Types, one device, one float dtype, rank, contiguous head dim of the named operands (the first
    is the reference: ``q``, or ``o1``); False when their shapes cannot be read."""
    for name, t in named.items():
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if problems:
        return False
    if layout not in LAYOUTS:
        problems.append(f"layout must be 'bshd', 'bhsd' or 'thd' (varlen), got {layout!r}")
        return False
    first, ref = next(iter(named.items()))
    rank = 3 if layout == "thd" else 4
    shape_name = {"bshd": "[B, S, H, Dh]", "bhsd": "[B, H, S, Dh]", "thd": "[total, H, Dh]"}[layout]
    for name, t in named.items():
        if t.dim() != rank:
            problems.append(f"{name} must be {rank}-D {shape_name} for layout={layout!r}, got shape {list(t.shape)}")
        elif t.shape[-1] > 1 and t.stride(-1) != 1:
            problems.append(f"{name}: the head dim (last) must be contiguous (stride 1), "
                            f"got strides {list(t.stride())}")
        if t.device != ref.device:
            problems.append(f"{name} is on {t.device}, {first} is on {ref.device}: all tensors must be on one device")
        if not t.dtype.is_floating_point:
            problems.append(f"{name} has dtype {t.dtype}; expected bfloat16, float16 or float32")
        elif t.dtype != ref.dtype:
            problems.append(f"{name} has dtype {t.dtype}, {first} has {ref.dtype}: "
                            f"{', '.join(named)} must share one dtype")
    return not problems


def check_shapes(q, k, v, layout: str, problems: list[str]) -> tuple[int, ...] | None:
    """``(B, Sq, Sk, Hq, Hk, Dh)`` when q, k and v agree, else None with the reasons."""
    B, Sq, Hq, Dh = sizes_of(q, layout)
    Bk, Sk, Hk, Dk = sizes_of(k, layout)
    if tuple(v.shape) != tuple(k.shape):
        problems.append(f"v of shape {list(v.shape)} must have k's shape {list(k.shape)}")
    if Bk != B:
        problems.append(f"k has batch {Bk}, q has {B}")
    if Dk != Dh:
        problems.append(f"k has head dim {Dk}, q has {Dh}: q, k and v must share the head dim")
    if Hk == 0 or Hq % Hk:
        problems.append(f"k/v have {Hk} heads, q has {Hq}: the k/v heads must divide the q heads (GQA)")
    return None if problems else (B, Sq, Sk, Hq, Hk, Dh)


def check_index(name: str, t, device, dtypes: tuple[torch.dtype, ...], length: int, problems: list[str]) -> None:
    if not isinstance(t, torch.Tensor):
        problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        return
    if t.device != device:
        problems.append(f"{name} is on {t.device}, q is on {device}: all tensors must be on one device")
    if t.dtype not in dtypes:
        problems.append(f"{name} has dtype {t.dtype}; expected {' or '.join(str(d) for d in dtypes)}")
    if t.dim() != 1 or t.shape[0] != length or (length > 1 and t.stride(0) != 1):
        problems.append(f"{name} must be a contiguous 1-D tensor of {length} values, got shape {list(t.shape)}")


def check_out(out, shape: tuple[int, ...], dtype: torch.dtype, device, problems: list[str]) -> None:
    from sgl_diffusion_core import writable_problem

    if not isinstance(out, torch.Tensor):
        problems.append(f"out must be a torch.Tensor, got {type(out).__name__}")
        return
    if tuple(out.shape) != tuple(shape) or out.dtype != dtype or out.device != device:
        problems.append(f"out must be a {dtype} tensor of shape {list(shape)} on {device}, "
                        f"got {out.dtype} {list(out.shape)} on {out.device}")
        return
    if out.shape[-1] > 1 and out.stride(-1) != 1:
        problems.append(f"out: the head dim (last) must be contiguous (stride 1), got strides {list(out.stride())}")
    why = writable_problem("out", out)
    if why:
        problems.append(why)


def _span(t: torch.Tensor) -> tuple[int, int]:
    size = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + size * t.element_size()


def overlap_problem(out, q, k, v) -> str | None:
    """``out`` sharing memory with q, k or v (the kernels read k and v while writing out)."""
    if out is None or out.numel() == 0 or is_traced(out):
        return None
    a0, a1 = _span(out)
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.numel() and not is_traced(t):
            b0, b1 = _span(t)
            if a0 < b1 and b0 < a1:
                return f"out overlaps {name} in memory: the output must not share memory with q, k or v"
    return None


def long_rows(Sq: int, Sk: int, Dh: int, q: Strides, k: Strides, v: Strides, o: Strides) -> bool:
    """A sample spans 2**31 elements or more (the Triton kernel's in-sample offsets are 32-bit)."""
    return any(S * st.ss + Dh >= 2**31 for S, st in ((Sq, q), (Sk, k), (Sk, v), (Sq, o)))


def bshd_lse_custom_ops(op, name: str, schema: str, keyed: tuple[str, ...]) -> tuple:
    """``torch.ops.sgl_diffusion.<name>`` (-> out) and ``<name>_lse`` (-> (out, lse)) of a bshd attention
    op: ``schema`` lists the op's tensors, then the scalars ``keyed`` (its describe options, in order),
    then ``backend``; one fake validates them and allocates ``out`` like q and lse fp32 ``[B, Hq, Sq]``."""
    n = op.n_tensors

    def fake(args: tuple, return_lse: bool):
        tensors, scalars = args[:n], args[n:n + len(keyed)]
        op.validate(*tensors, options=(*zip(keyed, scalars), ("return_lse", return_lse)))
        q = tensors[0]
        o = q.new_empty(q.shape)
        return (o, q.new_empty((q.shape[0], q.shape[2], q.shape[1]), dtype=torch.float32)) if return_lse else o

    plain = op.custom_op(name, fake=lambda *args: fake(args, False), schema=schema + " -> Tensor",
                         options={"return_lse": False}, keyed=keyed)
    with_lse = op.custom_op(f"{name}_lse", fake=lambda *args: fake(args, True), schema=schema + " -> (Tensor, Tensor)",
                            options={"return_lse": True}, keyed=keyed)
    return plain, with_lse
