"""Public entry points of the rope family: ``apply_rope``, ``apply_rope_qk``, ``rope_3d``, ``qk_norm_rope``.

All four share one validation (:func:`describe_rope`), one plan cache per op, one Triton
kernel (``rope_triton``) and one eager definition (``rope_torch``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    check_tensors,
    device_arch,
    is_compiling,
    register_custom_op,
    same_memory,
    select_impl,
    tensor_platform,
    writable_problem,
)

LAYOUTS = ("bshd", "bhsd")


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


def _aliasing(q: torch.Tensor, k: torch.Tensor | None, *_: object, inplace: bool = False, **__: object) -> str | None:
    """In place, q and k must not start at the same address: checked on every call (the plan
    cache keys on shapes and strides, not addresses) through the Dispatcher's ``per_call``."""
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


def inv_freq(axes_dim: tuple[int, ...], theta: float) -> tuple[float, ...]:
    """Per pair: ``theta ** (-2j / d)`` for each axis of width ``d`` in turn (fp64, as diffusers)."""
    out: list[float] = []
    for d in axes_dim:
        out.extend(1.0 / theta ** (2 * j / d) for j in range(d // 2))
    return tuple(out)


def describe_rope(
    q, k=None, cos=None, sin=None, pos_ids=None, q_weight=None, k_weight=None, *,
    interleaved: bool | None = None, rotary_dim: int | None = None, layout: str = "bshd",
    out_layout: str | None = None, grid_thw=None, axes_dim=None, theta: float = 10000.0,
    norm: str | None = None, inplace: bool = False, angles: str = "table",
) -> InputDesc:
    """Validate the arguments of any rope op and describe them for backend selection.

    ``angles``: ``"table"`` (cos/sin or complex freqs), ``"grid"`` (grid_thw + axes_dim)
    or ``"pos"`` (pos_ids + axes_dim).
    """
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
    if problems:
        return desc
    out_layout = out_layout or layout
    qh = _heads("q", q, layout, problems)
    kh = _heads("k", k, layout, problems) if k is not None else None
    if problems:
        return desc
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
        why = _aliasing(q, k, inplace=inplace)
        if why:
            problems.append(why)
    layouts: list[str] = [layout if out_layout == layout else f"{layout}->{out_layout}"]

    # rotary width and angle source
    full = False
    table = Table()
    pos_strides = (0, 0, 0)
    grid_hw = (1, 1)
    bounds = (0, 0)
    freqs: tuple[float, ...] = ()
    axes: tuple[int, ...] = ()
    r = rotary_dim
    mode = {"table": 0, "grid": 1, "pos": 2}[angles]
    if mode == 0:
        if not isinstance(cos, torch.Tensor):
            problems.append(f"cos must be a torch.Tensor, got {type(cos).__name__}")
        elif is_complex:
            layouts.append("complex")
            if sin is not None:
                problems.append("a complex freqs_cis is passed as cos alone; sin must be None")
            if cos.dtype != torch.complex64:
                problems.append(f"complex freqs_cis must be complex64, got {cos.dtype}")
            if interleaved is False:
                problems.append("a complex freqs_cis rotates adjacent pairs (interleaved=True); "
                                "interleaved=False was passed")
            interleaved = True
        else:
            if not isinstance(sin, torch.Tensor):
                problems.append(f"sin must be a torch.Tensor with cos's shape, got {type(sin).__name__}")
            elif sin.shape != cos.shape or sin.dtype != cos.dtype or sin.stride() != cos.stride():
                problems.append(f"sin must match cos in shape, dtype and strides: cos {list(cos.shape)} "
                                f"{cos.dtype} {list(cos.stride())}, sin {list(sin.shape)} {sin.dtype} "
                                f"{list(sin.stride())}")
        if not problems:
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
            if is_complex:
                r = r if r is not None else 2 * W
                if 2 * W != r:
                    problems.append(f"freqs_cis has {W} pairs, rotary_dim {r} needs {r // 2}")
            elif r is None:
                if W == Dh:
                    r, full = Dh, True
                elif 2 * W == Dh:
                    r = Dh
                else:
                    problems.append(f"cos/sin width {W} is neither head_dim {Dh} nor head_dim/2; "
                                    f"pass rotary_dim for partial rotary")
            elif W == r:
                full = True
            elif 2 * W != r:
                problems.append(f"cos/sin width {W} must be rotary_dim ({r}) or rotary_dim/2")
            if not problems:
                mult = 2 if is_complex else 1
                table = Table(
                    sb=cos.stride(0) * mult if cos.dim() == 3 and tB > 1 else 0,
                    ss=cos.stride(-2) * mult,
                    sc=mult,
                    s_off=1 if is_complex else 0,
                )
            layouts.append("table-full" if full else "table-half")
    else:
        layouts.append("grid-angles" if mode == 1 else "pos-angles")
        axes = tuple(int(a) for a in (axes_dim or ()))
        if len(axes) != 3 or any(a <= 0 or a % 2 for a in axes):
            problems.append(f"axes_dim must be three positive even sizes (t, h, w), got {axes_dim!r}")
        else:
            r = r if r is not None else sum(axes)
            if sum(axes) != r:
                problems.append(f"axes_dim {axes} sums to {sum(axes)}, rotary_dim is {r}")
            bounds = (axes[0] // 2, (axes[0] + axes[1]) // 2)
            if not (isinstance(theta, (int, float)) and theta > 1.0 and math.isfinite(theta)):
                problems.append(f"theta must be a finite number > 1, got {theta!r}")
            else:
                freqs = inv_freq(axes, float(theta))
        if mode == 1:
            try:
                gt, gh, gw = (int(v) for v in grid_thw)
            except Exception:
                problems.append(f"grid_thw must be three ints (T, H, W), got {grid_thw!r}")
            else:
                if min(gt, gh, gw) < 1 or gt * gh * gw != S:
                    problems.append(f"grid_thw {(gt, gh, gw)} holds {gt * gh * gw} tokens, q has {S}")
                grid_hw = (gh, gw)
        else:
            if not isinstance(pos_ids, torch.Tensor):
                problems.append(f"pos_ids must be a tensor [B, S, 3] or [S, 3], got {type(pos_ids).__name__}")
            elif pos_ids.dim() not in (2, 3) or pos_ids.shape[-1] != 3 or pos_ids.shape[-2] != S:
                problems.append(f"pos_ids must be [B, S, 3] or [S, 3] with S={S}, got {list(pos_ids.shape)}")
            elif pos_ids.dim() == 3 and pos_ids.shape[0] not in (1, B):
                problems.append(f"pos_ids batch {pos_ids.shape[0]} must be 1 or q's batch {B}")
            elif pos_ids.dtype not in (torch.float32, torch.float64, torch.int32, torch.int64, torch.bfloat16,
                                       torch.float16):
                problems.append(f"pos_ids dtype {pos_ids.dtype} is not supported")
            else:
                if pos_ids.dtype == torch.float64:
                    layouts.append("pos-fp64")
                pb = pos_ids.stride(0) if pos_ids.dim() == 3 and pos_ids.shape[0] > 1 else 0
                pos_strides = (pb, pos_ids.stride(-2), pos_ids.stride(-1))
    if r is not None and not problems:
        if r < 2 or r % 2 or r > Dh:
            problems.append(f"rotary_dim must be even and in [2, head_dim={Dh}], got {r}")
    norm_id = {None: 0, "rms": 1, "layer": 2}.get(norm, -1)
    if norm_id < 0:
        problems.append(f"norm must be 'rms' or 'layer', got {norm!r}")
    for name, w in (("q_weight", q_weight), ("k_weight", k_weight)):
        if isinstance(w, torch.Tensor) and (w.dim() != 1 or w.shape[0] != Dh or (Dh > 1 and w.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [{Dh}] vector (head_dim), got {list(w.shape)}")
    if problems:
        return desc
    interleaved = bool(interleaved)
    layouts.append("interleaved" if interleaved else "rotate-half")
    tdt = q.dtype if mode != 0 or is_complex else torch.promote_types(q.dtype, cos.dtype)
    qo = qh if inplace else _dense(qh.H, B, S, Dh, out_layout)
    ko = None if kh is None else (kh if inplace else _dense(kh.H, B, S, Dh, out_layout))
    geom = Geometry(
        B=B, S=S, Dh=Dh, r=r, layout=layout, out_layout=out_layout, q=qh, k=kh, q_out=qo, k_out=ko,
        interleaved=interleaved, angles=mode, full_table=full, complex_table=is_complex, table=table,
        pos_strides=pos_strides, grid_hw=grid_hw, axis_bounds=bounds, inv_freq=freqs, axes_dim=axes,
        theta=float(theta), norm=norm_id, inplace=inplace, exact=False, t=tdt, out=q.dtype,
    )
    desc.layouts = tuple(dict.fromkeys(layouts))
    desc.info = {"geom": geom, "empty": q.numel() == 0 and (k is None or k.numel() == 0)}
    return desc


def describe_apply_rope(x, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd",
                        **_ignored) -> InputDesc:
    """``describe_rope`` with ``apply_rope``'s signature (``explain("rope.apply_rope", ...)``)."""
    return describe_rope(x, None, cos, sin, interleaved=interleaved, rotary_dim=rotary_dim, inplace=bool(inplace),
                         layout=layout)


def describe_apply_rope_qk(q, k, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False,
                           layout="bshd", **_ignored) -> InputDesc:
    """``describe_rope`` with ``apply_rope_qk``'s signature."""
    return describe_rope(q, k, cos, sin, interleaved=interleaved, rotary_dim=rotary_dim, inplace=bool(inplace),
                         layout=layout)


def describe_rope_3d(x, grid_thw=None, axes_dim=(44, 42, 42), *, theta=10000.0, pos_ids=None, interleaved=True,
                     rotary_dim=None, inplace=False, layout="bshd", **_ignored) -> InputDesc:
    """``describe_rope`` with ``rope_3d``'s signature."""
    return describe_rope(x, None, None, None, pos_ids, interleaved=interleaved, rotary_dim=rotary_dim,
                         inplace=bool(inplace), layout=layout, grid_thw=grid_thw, axes_dim=axes_dim, theta=theta,
                         angles="grid" if pos_ids is None else "pos")


def describe_qk_norm_rope(q, k, q_weight, k_weight, cos, sin=None, *, norm="rms", interleaved=None, rotary_dim=None,
                          inplace=None, layout="bshd", out_layout=None, **_ignored) -> InputDesc:
    """``describe_rope`` with ``qk_norm_rope``'s signature."""
    if inplace is None:
        inplace = out_layout is None or out_layout == layout
    return describe_rope(q, k, cos, sin, None, q_weight, k_weight, interleaved=interleaved, rotary_dim=rotary_dim,
                         inplace=bool(inplace), layout=layout, out_layout=out_layout, norm=norm)


def _empty(geom: Geometry):
    def run(q, k, cos, sin, pos, qw, kw, eps):
        if geom.inplace:
            return q, k
        qo = torch.empty(geom.q_out.shape, dtype=geom.out, device=q.device)
        ko = None if k is None else torch.empty(geom.k_out.shape, dtype=geom.out, device=q.device)
        return qo, ko

    return run


def _bind(fn, geom: Geometry):
    def run(q, k, cos, sin, pos, qw, kw, eps):
        return fn(q, k, cos, sin, pos, qw, kw, eps, geom=geom)

    return run


_dispatch = {op: Dispatcher(f"rope.{op}", describe_rope, bind=_bind, empty=_empty, per_call=_aliasing)
             for op in ("apply_rope", "apply_rope_qk", "rope_3d", "qk_norm_rope")}


def _run(op: str, tensors: tuple, eps: float, backend: str | None, exact: bool | None, options: tuple):
    return _dispatch[op].plan(tensors, backend, exact, options)(*tensors, eps)


def _opts(**kw) -> tuple:
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in kw.items())


def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """Rotary position embedding of ``x`` with a cos/sin table (or a complex ``freqs_cis``).

    x: ``[B, S, H, Dh]`` (``layout="bshd"``, any strides for B/S/H, e.g. a view of a fused
        QKV projection) or ``[B, H, S, Dh]`` (``layout="bhsd"``); head_dim contiguous;
        bf16 | fp16 | fp32.
    cos, sin: ``[S, r/2]`` (one angle per pair), ``[S, r]`` (one value per position, as
        diffusers' ``repeat_interleave`` / ``cat`` tables hold them) or ``[B, S, r/2 | r]``;
        fp32, bf16 or fp16. Or ``cos`` a complex64 ``freqs_cis`` ``[S, r/2]`` (or
        ``[B, S, r/2]``) with ``sin=None`` (pairs are adjacent: interleaved).
    interleaved: ``False`` rotates element j with j + r/2 (rotate-half: Llama, Cosmos);
        ``True`` rotates 2j with 2j + 1 (GPT-J pairs: Flux, Wan, HunyuanVideo in diffusers);
        ``None`` = False for real tables, True for a complex ``freqs_cis``.
    rotary_dim: r, the rotated leading part of head_dim (the tail passes through); None
        infers it from the table (width Dh -> one value per position, Dh/2 -> per pair).
    inplace: write into x (and return it).
    exact: ``None``/``False``: contract ``close`` (fp32 math, one rounding). ``True``:
        ``torch.equal`` to the eager chain ``(x * cos + rotate(x) * sin).to(x.dtype)`` with
        every op in the promoted dtype of x and the table and no FMA (real tables only;
        a complex table is served exactly by the ``torch`` backend, the chain itself).
    backend: ``None`` (best for the inputs), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a tensor shaped like x, contiguous in x's layout (x itself when in place).
    """
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace))
    if is_compiling():
        return _compiled("apply_rope", inplace, x, None, cos, sin, None, None, None, 0.0, exact, backend, opts)[0]
    return _run("apply_rope", (x, None, cos, sin, None, None, None), 0.0, backend, exact, opts)[0]


def apply_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`apply_rope` on q and k in one launch (k may have another head count: GQA / MQA).

    q, k share batch, sequence length, head_dim and dtype; each keeps its own strides.
    Returns ``(q_out, k_out)``.
    """
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace))
    if is_compiling():
        return tuple(_compiled("apply_rope_qk", inplace, q, k, cos, sin, None, None, None, 0.0, exact, backend, opts))
    return _run("apply_rope_qk", (q, k, cos, sin, None, None, None), 0.0, backend, exact, opts)


def rope_3d(
    x: torch.Tensor,
    grid_thw: tuple[int, int, int] | None = None,
    axes_dim: tuple[int, int, int] = (44, 42, 42),
    *,
    theta: float = 10000.0,
    pos_ids: torch.Tensor | None = None,
    interleaved: bool = True,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    backend: str | None = None,
) -> torch.Tensor:
    """Video RoPE with the angles computed in the kernel (no cos/sin table in memory).

    Each token's position is ``(t, h, w)``: from ``grid_thw = (T, H, W)`` (tokens in
    t-major order, ``s = (t * H + h) * W + w``; ``S == T * H * W``) or from explicit
    ``pos_ids`` ``[B, S, 3]`` / ``[S, 3]`` (ints or floats; Flux's text/image ids). The
    rotary dims split by ``axes_dim`` (sum = r): pair i of axis a (width d) turns by
    ``pos_a * theta ** (-2 i / d)``. Defaults: Wan2.1 (Dh=128: 44/42/42, theta 1e4, pairs);
    HunyuanVideo uses ``axes_dim=(16, 56, 56), theta=256``; Flux ``(16, 56, 56)`` with
    ``pos_ids``. Contract ``close``: ``torch`` is the chain diffusers runs (fp64 table cast
    to fp32, then ``(x * cos + rotate(x) * sin).to(x.dtype)``).
    """
    angles = "grid" if pos_ids is None else "pos"
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace),
                 grid_thw=None if grid_thw is None else tuple(int(v) for v in grid_thw),
                 axes_dim=None if axes_dim is None else tuple(int(v) for v in axes_dim), theta=float(theta),
                 angles=angles)
    if is_compiling():
        return _compiled("rope_3d", inplace, x, None, None, None, pos_ids, None, None, 0.0, None, backend, opts)[0]
    return _run("rope_3d", (x, None, None, None, pos_ids, None, None), 0.0, backend, None, opts)[0]


def qk_norm_rope(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool | None = None,
    layout: str = "bshd",
    out_layout: str | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head norm over head_dim (``"rms"`` or ``"layer"``), then RoPE, for q and k in one pass.

    q, k, cos, sin, interleaved, rotary_dim, layout: as :func:`apply_rope_qk`. q_weight,
    k_weight: ``[Dh]`` or None. ``out_layout="bhsd"`` writes new ``[B, H, S, Dh]``
    tensors for attention. ``inplace``: None = in place unless out_layout changes the
    layout. Contract ``close`` (fp32 statistics and math, one rounding); ``exact=True`` is
    served by the ``torch`` backend, the eager chain itself (see ``rope_torch``).
    Returns ``(q_out, k_out)``.
    """
    if inplace is None:
        inplace = out_layout is None or out_layout == layout
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace),
                 out_layout=out_layout, norm=norm)
    if is_compiling():
        return tuple(_compiled("qk_norm_rope", inplace, q, k, cos, sin, None, q_weight, k_weight, float(eps), exact,
                               backend, opts))
    return _run("qk_norm_rope", (q, k, cos, sin, None, q_weight, k_weight), float(eps), backend, exact, opts)


def _can_use(op: str, tensors: tuple, backend: str | None, exact: bool | None, **kw) -> bool:
    try:
        select_impl(f"rope.{op}", describe_rope(*tensors, **kw), backend=backend, exact=exact)
        return True
    except Exception:
        return False


def can_use_apply_rope(x, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd",
                       exact=None, backend=None) -> bool:
    """Whether ``apply_rope`` can serve these arguments (never raises, never allocates)."""
    return _can_use("apply_rope", (x, None, cos, sin), backend, exact, interleaved=interleaved,
                    rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout)


def can_use_apply_rope_qk(q, k, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd",
                          exact=None, backend=None) -> bool:
    """Whether ``apply_rope_qk`` can serve these arguments (never raises, never allocates)."""
    return _can_use("apply_rope_qk", (q, k, cos, sin), backend, exact, interleaved=interleaved,
                    rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout)


def can_use_rope_3d(x, grid_thw=None, axes_dim=(44, 42, 42), *, theta=10000.0, pos_ids=None, interleaved=True,
                    rotary_dim=None, inplace=False, layout="bshd", backend=None) -> bool:
    """Whether ``rope_3d`` can serve these arguments (never raises, never allocates)."""
    return _can_use("rope_3d", (x, None, None, None, pos_ids), backend, None, interleaved=interleaved,
                    rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout, grid_thw=grid_thw,
                    axes_dim=axes_dim, theta=theta, angles="grid" if pos_ids is None else "pos")


def can_use_qk_norm_rope(q, k, q_weight, k_weight, cos, sin=None, *, norm="rms", eps=1e-6, interleaved=None,
                         rotary_dim=None, inplace=None, layout="bshd", out_layout=None, exact=None,
                         backend=None) -> bool:
    """Whether ``qk_norm_rope`` can serve these arguments (never raises, never allocates)."""
    if inplace is None:
        inplace = out_layout is None or out_layout == layout
    return _can_use("qk_norm_rope", (q, k, cos, sin, None, q_weight, k_weight), backend, exact,
                    interleaved=interleaved, rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout,
                    out_layout=out_layout, norm=norm)


def _reference(op, tensors, eps, opts):
    from sgl_diffusion_core import REGISTRY

    spec = next(s for s in REGISTRY.specs(f"rope.{op}") if s.backend == "torch")
    desc = describe_rope(*tensors, **dict(opts))
    if desc.problems:
        select_impl(f"rope.{op}", desc)  # raises with the reasons
    return spec.load()(*tensors, eps, geom=desc.info["geom"])


def apply_rope_reference(x, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd"):
    """The eager chain itself (the ``torch`` backend)."""
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace))
    return _reference("apply_rope", (x, None, cos, sin, None, None, None), 0.0, opts)[0]


def apply_rope_qk_reference(q, k, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False,
                            layout="bshd"):
    """The eager chain itself (the ``torch`` backend)."""
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace))
    return _reference("apply_rope_qk", (q, k, cos, sin, None, None, None), 0.0, opts)


def rope_3d_reference(x, grid_thw=None, axes_dim=(44, 42, 42), *, theta=10000.0, pos_ids=None, interleaved=True,
                      rotary_dim=None, inplace=False, layout="bshd"):
    """The chain diffusers runs (fp64 angle table cast to fp32, then the real-table chain)."""
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace),
                 grid_thw=grid_thw, axes_dim=axes_dim, theta=float(theta),
                 angles="grid" if pos_ids is None else "pos")
    return _reference("rope_3d", (x, None, None, None, pos_ids, None, None), 0.0, opts)[0]


def qk_norm_rope_reference(q, k, q_weight, k_weight, cos, sin=None, *, norm="rms", eps=1e-6, interleaved=None,
                           rotary_dim=None, inplace=None, layout="bshd", out_layout=None):
    """The eager chain itself (the ``torch`` backend): diffusers' RMSNorm / F.layer_norm, then RoPE."""
    if inplace is None:
        inplace = out_layout is None or out_layout == layout
    opts = _opts(interleaved=interleaved, rotary_dim=rotary_dim, layout=layout, inplace=bool(inplace),
                 out_layout=out_layout, norm=norm)
    return _reference("qk_norm_rope", (q, k, cos, sin, None, q_weight, k_weight), float(eps), opts)


# --- custom ops (torch.compile): one functional and one in-place op serve all four entry points ---

_SCHEMA_ARGS = ("Tensor? cos, Tensor? sin, Tensor? pos_ids, Tensor? q_weight, Tensor? k_weight, float eps, "
                "bool? exact, str? backend, str op, bool? interleaved, int? rotary_dim, str layout, "
                "str? out_layout, int[]? grid_thw, int[]? axes_dim, float theta, str? norm, str angles")


def _unpack(interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim, theta, norm, angles, inplace):
    kw = {"interleaved": interleaved, "rotary_dim": rotary_dim, "layout": layout, "inplace": inplace}
    if out_layout is not None or norm is not None:
        kw.update(out_layout=out_layout, norm=norm)
    if angles != "table":
        kw.update(grid_thw=None if grid_thw is None else tuple(grid_thw),
                  axes_dim=None if axes_dim is None else tuple(axes_dim), theta=theta, angles=angles)
    return tuple(kw.items())


def _compiled(op, inplace, q, k, cos, sin, pos, qw, kw_, eps, exact, backend, opts):
    o = dict(opts)
    args = (q, k, cos, sin, pos, qw, kw_, float(eps), exact, backend, op, o.get("interleaved"), o.get("rotary_dim"),
            o["layout"], o.get("out_layout"), None if o.get("grid_thw") is None else list(o["grid_thw"]),
            None if o.get("axes_dim") is None else list(o["axes_dim"]), float(o.get("theta", 10000.0)),
            o.get("norm"), o.get("angles", "table"))
    if inplace:
        _custom_op_inplace(*args)
        return (q, k)
    out = _custom_op(*args)
    return (out[0], out[1] if k is not None else None)


def _op_impl(q, k, cos, sin, pos, qw, kw_, eps, exact, backend, op, interleaved, rotary_dim, layout, out_layout,
             grid_thw, axes_dim, theta, norm, angles):
    opts = _unpack(interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim, theta, norm, angles, False)
    qo, ko = _run(op, (q, k, cos, sin, pos, qw, kw_), eps, backend, exact, opts)
    return [qo] if ko is None else [qo, ko]


def _op_fake(q, k, cos, sin, pos, qw, kw_, eps, exact, backend, op, interleaved, rotary_dim, layout, out_layout,
             grid_thw, axes_dim, theta, norm, angles):
    opts = _unpack(interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim, theta, norm, angles, False)
    _dispatch[op].validate(q, k, cos, sin, pos, qw, kw_, options=opts)

    def like(x):
        shape = list(x.shape)
        if (out_layout or layout) != layout:
            shape[1], shape[2] = shape[2], shape[1]
        return x.new_empty(shape)

    return [like(q)] if k is None else [like(q), like(k)]


def _op_inplace_impl(q, k, cos, sin, pos, qw, kw_, eps, exact, backend, op, interleaved, rotary_dim, layout,
                     out_layout, grid_thw, axes_dim, theta, norm, angles):
    opts = _unpack(interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim, theta, norm, angles, True)
    _run(op, (q, k, cos, sin, pos, qw, kw_), eps, backend, exact, opts)


def _op_inplace_fake(q, k, cos, sin, pos, qw, kw_, eps, exact, backend, op, interleaved, rotary_dim, layout,
                     out_layout, grid_thw, axes_dim, theta, norm, angles):
    opts = _unpack(interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim, theta, norm, angles, True)
    _dispatch[op].validate(q, k, cos, sin, pos, qw, kw_, options=opts)


_custom_op = register_custom_op("rope", _op_impl, _op_fake,
                                schema=f"(Tensor q, Tensor? k, {_SCHEMA_ARGS}) -> Tensor[]")
_custom_op_inplace = register_custom_op("rope_", _op_inplace_impl, _op_inplace_fake,
                                        schema=f"(Tensor(a!) q, Tensor(b!)? k, {_SCHEMA_ARGS}) -> ()",
                                        mutates_args=("q", "k"))

__all__ = [
    "apply_rope", "apply_rope_qk", "rope_3d", "qk_norm_rope",
    "can_use_apply_rope", "can_use_apply_rope_qk", "can_use_rope_3d", "can_use_qk_norm_rope",
    "apply_rope_reference", "apply_rope_qk_reference", "rope_3d_reference", "qk_norm_rope_reference",
    "describe_rope", "describe_apply_rope", "describe_apply_rope_qk", "describe_rope_3d", "describe_qk_norm_rope",
]
