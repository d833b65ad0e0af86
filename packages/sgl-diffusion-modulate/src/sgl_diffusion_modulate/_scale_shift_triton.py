"""Triton kernel for ``scale_shift`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Bit-exact to eager PyTorch: each intermediate is computed in fp32 and rounded to the dtype
eager gives it (``sgl_diffusion_core.triton_math.round_to``), and the launch forbids FMA
contraction (``enable_fp_fusion=False``). One program per (row, column tile), on a 1-D grid
whose consecutive programs take consecutive tiles of a row (``TileConfig.grid``,
``triton_math.program_tile``); modulation
rows are found with ``base + b*sb + (s // L)*ss`` so every layout shares one kernel, and
``S`` / ``L`` are not specialized (a new sequence length never recompiles).

``indexed_scale_shift`` is the same kernel with ``INDEXED``: the modulation row of token
``(b, s)`` is ``index[b, s]`` instead of ``s // L`` (``_index_rows_triton.table_row``), and a
token whose index is out of range reads row 0 and is written as NaN.

x loads with the default L2 policy: with ``evict_first`` Wan and HunyuanVideo ran 2.3-2.4 points of copy
slower (H200, bf16: docs/benchmarks/hint_ab_h200.json).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

from . import _index_rows_triton
from ._index_rows_triton import INDEX_ARGS, index_scalars

TL = triton_math.TL_DTYPES

@triton.jit(do_not_specialize=["S", "sc_L", "sh_L", "scale_offset"])
def _scale_shift_kernel(
    X, SC, SH, IDX, Y,
    S, D,
    x_sb, x_ss,
    sc_sb, sc_ss, sc_L,
    sh_sb, sh_ss, sh_L,
    i_sb, i_ss, K,
    scale_offset,
    HAS_SHIFT: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    ROUND_OFFSET: tl.constexpr, INDEXED: tl.constexpr,
):
    r, tile = triton_math.program_tile(tl.cdiv(D, BLOCK))
    # (b, s) and the modulation rows divided in int32 (the row index is int32; a 64-bit division is a
    # ~70-instruction subroutine on NVIDIA), offsets in int64
    bi = r // S
    si = r - bi * S
    row = r.to(tl.int64)
    b = bi.to(tl.int64)
    s = si.to(tl.int64)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    if INDEXED:  # one table row per token, picked by index (clamped in range; see poison below)
        k, ok = _index_rows_triton.table_row(IDX, b, s, i_sb, i_ss, K)
        sc_row = k
        sh_row = k
    else:
        sc_row = (si // sc_L).to(tl.int64)
        sh_row = (si // sh_L).to(tl.int64)
    x = tl.load(X + b * x_sb + s * x_ss + cols, mask=mask, other=0.0)
    sc = tl.load(SC + b * sc_sb + sc_row * sc_ss + cols, mask=mask, other=0.0, eviction_policy="evict_last")
    off = scale_offset
    if ROUND_OFFSET:  # reproduce CPU eager: the scalar is first rounded to scale's dtype
        off = triton_math.round_to(off, T1)
    t1 = triton_math.round_to(off + triton_math.widen(sc), T1)
    y = triton_math.round_to(triton_math.widen(x) * t1, T2)
    if HAS_SHIFT:
        sh = tl.load(SH + b * sh_sb + sh_row * sh_ss + cols, mask=mask, other=0.0, eviction_policy="evict_last")
        y = triton_math.round_to(y + triton_math.widen(sh), OUT)
    if INDEXED:
        y = _index_rows_triton.poison(y, ok)
    tl.store(Y + row * D + cols, triton_math.narrow(y, OUT), mask=mask)


def prepare(geom, x, scale, shift, index=None, *, config: TileConfig | None = None):
    """A runner for one call signature: ``(x, scale, shift, scale_offset) -> out``, or
    ``(x, scale_table, shift_table, index, scale_offset) -> out`` when ``geom.index`` is set."""
    g, ix = geom.x, geom.index
    plat = tensor_platform(x.device)
    widest = max(x.element_size(), geom.out.itemsize)
    cfg = config or TileConfig.from_heuristic(g.D, widest, plat)
    sc, sh = geom.scale, geom.shift
    scalars = (
        g.S, g.D, g.sb, g.ss, sc.sb, sc.ss, sc.L,
        0 if sh is None else sh.sb, 0 if sh is None else sh.ss, 1 if sh is None else sh.L,
        *index_scalars(ix),
    )
    launch = PreparedLaunch(
        _scale_shift_kernel,
        cfg.grid(g.rows, g.D)[0],
        {"HAS_SHIFT": shift is not None, "T1": TL[geom.t1], "T2": TL[geom.t2],
         "OUT": TL[geom.out], "BLOCK": cfg.block, "ROUND_OFFSET": geom.round_offset,
         "INDEXED": ix is not None},
        device=x.device,
        n_ptrs=5,
        options=cfg.launch_options(plat),
        fp_fusion=False,
    )
    shape, out_dtype, device = g.shape, geom.out, x.device
    # a contiguous x of the result's dtype: empty_like is the cheaper allocation (host time)
    like = x.is_contiguous() and x.dtype == out_dtype

    def run_indexed(x, scale, shift, index, scale_offset):
        out = torch.empty_like(x) if like else torch.empty(shape, dtype=out_dtype, device=device)
        launch(x, scale, x if shift is None else shift, index, out, *scalars, scale_offset)
        return out

    def run(x, scale, shift, scale_offset):
        out = torch.empty_like(x) if like else torch.empty(shape, dtype=out_dtype, device=device)
        launch(x, scale, x if shift is None else shift, x, out, *scalars, scale_offset)  # IDX unused: any pointer
        return out

    return run if ix is None else run_indexed


# what a launch at these widths (per-sample modulation: chunks of a [B, 6, D] projection) specializes as
# multiples of 16: the compile lanes build the vectorized kernel that runs
_ALIGNED = ("X", "SC", "SH", "IDX", "Y", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sh_sb", "sh_ss")


def aot_variants(platform: str = "cuda", *, indexed: bool = False):
    """bf16 / fp16 / fp32 activations with same-dtype and fp32 (Wan) modulation, at D=3072 and 5120
    (``indexed``: the ``indexed_scale_shift`` form, int32 and int64 index)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for xdt in (torch.bfloat16, torch.float16, torch.float32):
        for mdt in sorted({xdt, torch.float32}, key=str):
            t2 = torch.promote_types(xdt, mdt)
            for D in (3072, 5120):
                for idt in ("i64", "i32") if indexed else ("i32",):
                    cfg = TileConfig.from_heuristic(D, max(xdt.itemsize, t2.itemsize), platform)
                    sig = {"X": f"*{names[xdt]}", "SC": f"*{names[mdt]}", "SH": f"*{names[mdt]}",
                           "IDX": f"*{idt}", "Y": f"*{names[t2]}"}
                    sig.update({n: "i32" for n in ("S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L",
                                                   "sh_sb", "sh_ss", "sh_L", *INDEX_ARGS)})
                    sig["scale_offset"] = "fp32"
                    sig.update({n: "constexpr" for n in ("HAS_SHIFT", "T1", "T2", "OUT", "BLOCK", "ROUND_OFFSET",
                                                         "INDEXED")})
                    const = {"HAS_SHIFT": True, "T1": TL[mdt], "T2": TL[t2], "OUT": TL[t2],
                             "BLOCK": cfg.block, "ROUND_OFFSET": False, "INDEXED": indexed}
                    tag = f"indexed_scale_shift[index={idt}," if indexed else "scale_shift["
                    out.append(AotVariant(
                        name=f"{tag}x={names[xdt]},mod={names[mdt]},D={D},block={cfg.block},w={cfg.num_warps}]",
                        kernel=_scale_shift_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                        options={"enable_fp_fusion": False}, divisible_by_16=_ALIGNED,
                    ))
    return out


def indexed_aot_variants(platform: str = "cuda"):
    """The ``indexed_scale_shift`` variants of :func:`aot_variants`."""
    return aot_variants(platform, indexed=True)
