"""What the four rope ops share: the validation of their arguments and the geometry it derives.

``apply_rope``, ``apply_rope_qk``, ``rope_3d`` and ``qk_norm_rope`` are one formula (a
rotation of head_dim pairs, optionally after a per-head norm) over one argument set:
q (and k), the angles (a cos/sin table, a complex ``freqs_cis``, or positions from which
the kernel computes them), the norm weights. :func:`describe_rope` validates that set
and derives the :class:`Geometry` every backend reads; each op's ``describe_<op>``
(``rope.py``) calls it with that op's arguments, and the eager references
(``rope_torch``) call it too. The backends compute on the whole set,
``(q, k, cos, sin, pos, q_weight, k_weight, eps)``; :func:`union` and :func:`runner`
map each op's own arguments onto it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from sgl_diffusion_core import (
    InputDesc,
    UnsupportedInputError,
    check_tensors,
    device_arch,
    same_memory,
    tensor_platform,
    writable_problem,
)

LAYOUTS = ("bshd", "bhsd")
ANGLES = {"table": 0, "grid": 1, "pos": 2}
NORMS = {None: 0, "rms": 1, "layer": 2}
POS_DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class Heads:
    """One of q / k: head count, strides (batch, sequence, head) and its logical shape."""

    H: int
    sb: int
    ss: int
    sh: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Table:
    """Where cos/sin values sit: strides (batch, sequence, column) and sin's element offset."""

    sb: int = 0
    ss: int = 0
    sc: int = 1
    s_off: int = 0


@dataclass(frozen=True)
class Geometry:
    op: str  # the op whose arguments the backends receive ("apply_rope", ..., see union())
    B: int
    S: int
    Dh: int
    r: int  # rotary dims (even), r <= Dh
    layout: str
    out_layout: str
    q: Heads
    k: Heads | None
    q_out: Heads
    k_out: Heads | None
    interleaved: bool
    angles: int  # 0 table, 1 grid_thw, 2 position ids
    full_table: bool  # table width r (one value per position) instead of r/2 (one per pair)
    complex_table: bool
    table: Table
    pos_strides: tuple[int, int, int]
    grid_hw: tuple[int, int]
    axis_bounds: tuple[int, int]  # pair index where axis 1 and axis 2 start
    inv_freq: tuple[float, ...]  # per pair, fp64 values (grid / position-id angles)
    axes_dim: tuple[int, ...]
    theta: float
    norm: int  # 0 none, 1 rms, 2 layer
    inplace: bool
    exact: bool  # the kernel's per-op rounding mode (chosen by the selected backend's contract)
    t: torch.dtype  # dtype of the eager chain's intermediates (promote(x, table))
    out: torch.dtype


@dataclass
class _Angles:
    """Where the angles come from, as validation finds it (the angle fields of :class:`Geometry`)."""

    r: int | None
    interleaved: bool | None
    full: bool = False
    table: Table = field(default_factory=Table)
    pos_strides: tuple[int, int, int] = (0, 0, 0)
    grid_hw: tuple[int, int] = (1, 1)
    bounds: tuple[int, int] = (0, 0)
    freqs: tuple[float, ...] = ()
    axes: tuple[int, ...] = ()


def inv_freq(axes_dim: tuple[int, ...], theta: float) -> tuple[float, ...]:
    """Per pair: ``theta ** (-2j / d)`` for each axis of width ``d`` in turn (fp64, as diffusers)."""
    out: list[float] = []
    for d in axes_dim:
        out.extend(1.0 / theta ** (2 * j / d) for j in range(d // 2))
    return tuple(out)


def aliasing(q: torch.Tensor, k: torch.Tensor | None, *_: object, inplace: bool = False, **__: object) -> str | None:
    """In place, q and k must not start at the same address: checked on every call (the plan
    cache keys on shapes and strides, not addresses) as the ops' ``per_call``."""
    if inplace and k is not None and same_memory(q, k):
        return ("inplace=True with q and k starting at the same address (the same tensor?): their shared "
                "elements would be rotated twice")
    return None


def _heads(name: str, x: torch.Tensor, layout: str, problems: list[str]) -> Heads | None:
    if x.dim() != 4:
        problems.append(f"{name} must be 4-D [B, S, H, Dh] (layout='bshd') or [B, H, S, Dh] (layout='bhsd'), "
                        f"got shape {list(x.shape)}")
        return None
    if x.shape[-1] > 1 and x.stride(-1) != 1:
        problems.append(f"{name}: last dim (head_dim) must be contiguous (stride 1), got strides {list(x.stride())}")
        return None
    if layout == "bshd":
        return Heads(x.shape[2], x.stride(0), x.stride(1), x.stride(2), tuple(x.shape))
    return Heads(x.shape[1], x.stride(0), x.stride(2), x.stride(1), tuple(x.shape))


def _dense(H: int, B: int, S: int, Dh: int, layout: str) -> Heads:
    if layout == "bshd":
        return Heads(H, S * H * Dh, H * Dh, Dh, (B, S, H, Dh))
    return Heads(H, H * S * Dh, Dh, S * Dh, (B, H, S, Dh))


def _start(q, k, cos, sin, pos_ids, q_weight, k_weight, layout, out_layout) -> InputDesc:
    """The description's platform, dtypes and the checks every argument set needs first."""
    problems: list[str] = []
    if not isinstance(q, torch.Tensor):
        problems.append(f"q must be a torch.Tensor, got {type(q).__name__}")
        return InputDesc(platform=None, problems=problems)
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    is_complex = isinstance(cos, torch.Tensor) and cos.is_complex()
    floats = {"q": q, "k": k, "q_weight": q_weight, "k_weight": k_weight}
    if not is_complex:
        floats.update({"cos": cos, "sin": sin})
    dtypes = check_tensors(floats, q.device, problems)
    if is_complex and cos.device != q.device:
        problems.append(f"cos is on {cos.device}, q is on {q.device}: all tensors must be on one device")
    if isinstance(pos_ids, torch.Tensor) and pos_ids.device != q.device:
        problems.append(f"pos_ids is on {pos_ids.device}, q is on {q.device}: all tensors must be on one device")
    desc = InputDesc(plat, arch, tuple(dtypes), q.shape[-1] if q.dim() else None, (), problems)
    if layout not in LAYOUTS:
        problems.append(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if out_layout is not None and out_layout not in LAYOUTS:
        problems.append(f"out_layout must be None or one of {LAYOUTS}, got {out_layout!r}")
    return desc


def _check_qk(q, k, layout: str, out_layout: str, inplace: bool, problems: list[str]) -> tuple[int, int, int]:
    """``(B, S, Dh)`` of q; k must match it; in place, every element must be written once."""
    B, S = (q.shape[0], q.shape[1]) if layout == "bshd" else (q.shape[0], q.shape[2])
    Dh = q.shape[-1]
    if k is not None:
        kB, kS = (k.shape[0], k.shape[1]) if layout == "bshd" else (k.shape[0], k.shape[2])
        if (kB, kS, k.shape[-1]) != (B, S, Dh):
            problems.append(f"k must match q in batch, sequence and head_dim: q {list(q.shape)}, k {list(k.shape)} "
                            f"(layout {layout!r})")
        if k.dtype != q.dtype:
            problems.append(f"k has dtype {k.dtype}, q has {q.dtype}: q and k must share one dtype")
    if inplace and out_layout != layout:
        problems.append(f"inplace=True cannot change the layout ({layout!r} -> {out_layout!r})")
    if inplace:  # every element written once: no self-overlapping view, q and k not one tensor
        for name, t in (("q", q), ("k", k)):
            why = None if t is None else writable_problem(name, t)
            if why:
                problems.append(f"inplace=True: {why}")
        why = aliasing(q, k, inplace=inplace)
        if why:
            problems.append(why)
    return B, S, Dh


def _complex_table(cos, sin, interleaved, problems: list[str]) -> bool:
    """Checks of a complex ``freqs_cis`` passed as cos; returns the pair convention (adjacent)."""
    if sin is not None:
        problems.append("a complex freqs_cis is passed as cos alone; sin must be None")
    if cos.dtype != torch.complex64:
        problems.append(f"complex freqs_cis must be complex64, got {cos.dtype}")
    if interleaved is False:
        problems.append("a complex freqs_cis rotates adjacent pairs (interleaved=True); "
                        "interleaved=False was passed")
    return True


def _table_width(a: _Angles, W: int, Dh: int, is_complex: bool, problems: list[str]) -> None:
    """The rotary width from the table's: ``W = r`` (one value per position) or ``r/2`` (per pair)."""
    if is_complex:
        a.r = a.r if a.r is not None else 2 * W
        if 2 * W != a.r:
            problems.append(f"freqs_cis has {W} pairs, rotary_dim {a.r} needs {a.r // 2}")
    elif a.r is None:
        if W == Dh:
            a.r, a.full = Dh, True
        elif 2 * W == Dh:
            a.r = Dh
        else:
            problems.append(f"cos/sin width {W} is neither head_dim {Dh} nor head_dim/2; "
                            f"pass rotary_dim for partial rotary")
    elif W == a.r:
        a.full = True
    elif 2 * W != a.r:
        problems.append(f"cos/sin width {W} must be rotary_dim ({a.r}) or rotary_dim/2")


def _table_angles(a: _Angles, cos, sin, B: int, S: int, Dh: int, layouts: list[str], problems: list[str]) -> None:
    """Angles from a cos/sin table ``[S, W]`` / ``[B, S, W]`` or a complex ``freqs_cis``."""
    is_complex = isinstance(cos, torch.Tensor) and cos.is_complex()
    if not isinstance(cos, torch.Tensor):
        problems.append(f"cos must be a torch.Tensor, got {type(cos).__name__}")
    elif is_complex:
        layouts.append("complex")
        a.interleaved = _complex_table(cos, sin, a.interleaved, problems)
    elif not isinstance(sin, torch.Tensor):
        problems.append(f"sin must be a torch.Tensor with cos's shape, got {type(sin).__name__}")
    elif sin.shape != cos.shape or sin.dtype != cos.dtype or sin.stride() != cos.stride():
        problems.append(f"sin must match cos in shape, dtype and strides: cos {list(cos.shape)} "
                        f"{cos.dtype} {list(cos.stride())}, sin {list(sin.shape)} {sin.dtype} "
                        f"{list(sin.stride())}")
    if problems:
        return
    W = cos.shape[-1]
    if cos.dim() == 2:
        tB, tS = 1, cos.shape[0]
    elif cos.dim() == 3:
        tB, tS = cos.shape[0], cos.shape[1]
    else:
        problems.append(f"cos/sin must be [S, W] or [B, S, W], got shape {list(cos.shape)}")
        tB, tS = 1, S
    if tS != S:
        problems.append(f"cos/sin cover {tS} positions, q has sequence length {S}")
    if tB not in (1, B):
        problems.append(f"cos/sin batch {tB} must be 1 or q's batch {B}")
    if cos.shape[-1] > 1 and cos.stride(-1) != 1:
        problems.append(f"cos/sin: last dim must be contiguous, got strides {list(cos.stride())}")
    _table_width(a, W, Dh, is_complex, problems)
    if not problems:
        mult = 2 if is_complex else 1
        a.table = Table(
            sb=cos.stride(0) * mult if cos.dim() == 3 and tB > 1 else 0,
            ss=cos.stride(-2) * mult,
            sc=mult,
            s_off=1 if is_complex else 0,
        )
    layouts.append("table-full" if a.full else "table-half")


def _axes(a: _Angles, axes_dim, theta, Dh: int, problems: list[str]) -> None:
    """The per-axis split of the rotary dims and the per-pair inverse frequencies.

    Without ``rotary_dim``, ``axes_dim`` must sum to head_dim: a shorter split would leave the
    tail of every head unrotated, which only an explicit ``rotary_dim`` may ask for."""
    a.axes = tuple(int(v) for v in (axes_dim or ()))
    if len(a.axes) != 3 or any(v <= 0 or v % 2 for v in a.axes):
        problems.append(f"axes_dim must be three positive even sizes (t, h, w), got {axes_dim!r}")
        return
    total = sum(a.axes)
    if a.r is None and total > Dh:
        problems.append(f"axes_dim {a.axes} sums to {total}, more than head_dim {Dh}")
    elif a.r is None and total < Dh:
        problems.append(f"axes_dim {a.axes} sums to {total}, less than head_dim {Dh}: give axes_dim summing to "
                        f"{Dh}, or rotary_dim={total} to rotate the first {total} dims and pass the last "
                        f"{Dh - total} through unrotated")
    elif a.r is not None and total != a.r:
        problems.append(f"axes_dim {a.axes} sums to {total}, rotary_dim is {a.r}")
    a.r = a.r if a.r is not None else total
    a.bounds = (a.axes[0] // 2, (a.axes[0] + a.axes[1]) // 2)
    if not (isinstance(theta, (int, float)) and theta > 1.0 and math.isfinite(theta)):
        problems.append(f"theta must be a finite number > 1, got {theta!r}")
    else:
        a.freqs = inv_freq(a.axes, float(theta))


def _position_angles(a: _Angles, mode: int, grid_thw, pos_ids, B: int, S: int, layouts: list[str],
                     problems: list[str]) -> None:
    """Positions on a ``grid_thw`` grid (mode 1) or explicit ``pos_ids`` (mode 2)."""
    if mode == 1:
        try:
            gt, gh, gw = (int(v) for v in grid_thw)
        except Exception:
            problems.append(f"grid_thw must be three ints (T, H, W), got {grid_thw!r}")
        else:
            if min(gt, gh, gw) < 1 or gt * gh * gw != S:
                problems.append(f"grid_thw {(gt, gh, gw)} holds {gt * gh * gw} tokens, q has {S}")
            a.grid_hw = (gh, gw)
    elif not isinstance(pos_ids, torch.Tensor):
        problems.append(f"pos_ids must be a tensor [B, S, 3] or [S, 3], got {type(pos_ids).__name__}")
    elif pos_ids.dim() not in (2, 3) or pos_ids.shape[-1] != 3 or pos_ids.shape[-2] != S:
        problems.append(f"pos_ids must be [B, S, 3] or [S, 3] with S={S}, got {list(pos_ids.shape)}")
    elif pos_ids.dim() == 3 and pos_ids.shape[0] not in (1, B):
        problems.append(f"pos_ids batch {pos_ids.shape[0]} must be 1 or q's batch {B}")
    elif pos_ids.dtype not in POS_DTYPES:
        problems.append(f"pos_ids dtype {pos_ids.dtype} is not supported")
    else:
        if pos_ids.dtype == torch.float64:
            layouts.append("pos-fp64")
        pb = pos_ids.stride(0) if pos_ids.dim() == 3 and pos_ids.shape[0] > 1 else 0
        a.pos_strides = (pb, pos_ids.stride(-2), pos_ids.stride(-1))


def _check_norm(norm, q_weight, k_weight, Dh: int, problems: list[str]) -> int:
    """The norm's id (0 none, 1 rms, 2 layer; -1 unknown) and the checks of its weights."""
    norm_id = NORMS.get(norm, -1)
    if norm_id < 0:
        problems.append(f"norm must be 'rms' or 'layer', got {norm!r}")
    for name, w in (("q_weight", q_weight), ("k_weight", k_weight)):
        if isinstance(w, torch.Tensor) and (w.dim() != 1 or w.shape[0] != Dh or (Dh > 1 and w.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [{Dh}] vector (head_dim), got {list(w.shape)}")
    return norm_id


def describe_rope(
    q, k=None, cos=None, sin=None, pos_ids=None, q_weight=None, k_weight=None, *, op: str,
    interleaved: bool | None = None, rotary_dim: int | None = None, layout: str = "bshd",
    out_layout: str | None = None, grid_thw=None, axes_dim=None, theta: float = 10000.0,
    norm: str | None = None, inplace: bool = False, angles: str = "table",
) -> InputDesc:
    """Validate the arguments of any rope op and describe them for backend selection.

    ``op``: the op whose arguments the backends will receive (see :func:`union`).
    ``angles``: ``"table"`` (cos/sin or complex freqs), ``"grid"`` (grid_thw + axes_dim)
    or ``"pos"`` (pos_ids + axes_dim).
    """
    desc = _start(q, k, cos, sin, pos_ids, q_weight, k_weight, layout, out_layout)
    problems = desc.problems
    if problems:
        return desc
    out_layout = out_layout or layout
    qh = _heads("q", q, layout, problems)
    kh = _heads("k", k, layout, problems) if k is not None else None
    if problems:
        return desc
    B, S, Dh = _check_qk(q, k, layout, out_layout, inplace, problems)
    layouts: list[str] = [layout if out_layout == layout else f"{layout}->{out_layout}"]
    a = _Angles(r=rotary_dim, interleaved=interleaved)
    mode = ANGLES[angles]
    if mode == 0:
        _table_angles(a, cos, sin, B, S, Dh, layouts, problems)
    else:
        layouts.append("grid-angles" if mode == 1 else "pos-angles")
        _axes(a, axes_dim, theta, Dh, problems)
        _position_angles(a, mode, grid_thw, pos_ids, B, S, layouts, problems)
    if a.r is not None and not problems and (a.r < 2 or a.r % 2 or a.r > Dh):
        problems.append(f"rotary_dim must be even and in [2, head_dim={Dh}], got {a.r}")
    norm_id = _check_norm(norm, q_weight, k_weight, Dh, problems)
    if problems:
        return desc
    layouts.append("interleaved" if a.interleaved else "rotate-half")
    is_complex = mode == 0 and cos.is_complex()
    tdt = q.dtype if mode != 0 or is_complex else torch.promote_types(q.dtype, cos.dtype)
    qo = qh if inplace else _dense(qh.H, B, S, Dh, out_layout)
    ko = None if kh is None else (kh if inplace else _dense(kh.H, B, S, Dh, out_layout))
    geom = Geometry(
        op=op, B=B, S=S, Dh=Dh, r=a.r, layout=layout, out_layout=out_layout, q=qh, k=kh, q_out=qo, k_out=ko,
        interleaved=bool(a.interleaved), angles=mode, full_table=a.full, complex_table=is_complex,
        table=a.table, pos_strides=a.pos_strides, grid_hw=a.grid_hw, axis_bounds=a.bounds, inv_freq=a.freqs,
        axes_dim=a.axes, theta=float(theta), norm=norm_id, inplace=inplace, exact=False, t=tdt, out=q.dtype,
    )
    desc.layouts = tuple(dict.fromkeys(layouts))
    desc.info = {"geom": geom, "empty": q.numel() == 0 and (k is None or k.numel() == 0)}
    return desc


def checked_geometry(op_id: str, desc: InputDesc) -> Geometry:
    """The geometry of a description, or ``UnsupportedInputError`` listing its problems."""
    if desc.problems:
        raise UnsupportedInputError(f"{op_id}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems))
    return desc.info["geom"]


# -- each op's arguments and the backends' whole set -------------------------------------------


def union(op: str, tensors: tuple) -> tuple:
    """``(q, k, cos, sin, pos, q_weight, k_weight)`` from one op's tensors (its plan's tensors):
    ``apply_rope (x, cos, sin)``, ``apply_rope_qk (q, k, cos, sin)``, ``rope_3d (x, pos_ids)``,
    ``qk_norm_rope (q, k, q_weight, k_weight, cos, sin)``."""
    if op == "apply_rope":
        x, cos, sin = tensors
        return x, None, cos, sin, None, None, None
    if op == "apply_rope_qk":
        q, k, cos, sin = tensors
        return q, k, cos, sin, None, None, None
    if op == "rope_3d":
        x, pos = tensors
        return x, None, None, None, pos, None, None
    q, k, q_weight, k_weight, cos, sin = tensors
    return q, k, cos, sin, None, q_weight, k_weight


def runner(op: str, run):
    """One op's runner over ``run(q, k, cos, sin, pos, q_weight, k_weight, eps) -> (q_out, k_out)``:
    its plan's tensors then its scalars (``eps`` for ``qk_norm_rope``), its own result."""
    if op == "apply_rope":
        def run_x(x, cos, sin):
            return run(x, None, cos, sin, None, None, None, 0.0)[0]

        return run_x
    if op == "apply_rope_qk":
        def run_qk(q, k, cos, sin):
            return run(q, k, cos, sin, None, None, None, 0.0)

        return run_qk
    if op == "rope_3d":
        def run_3d(x, pos):
            return run(x, None, None, None, pos, None, None, 0.0)[0]

        return run_3d

    def run_norm(q, k, q_weight, k_weight, cos, sin, eps):
        return run(q, k, cos, sin, None, q_weight, k_weight, eps)

    return run_norm
