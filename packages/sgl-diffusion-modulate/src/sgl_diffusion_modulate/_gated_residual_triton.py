"""Triton kernel for ``gated_residual`` / ``gated_residual_`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Bit-exact to eager PyTorch: ``gate * update`` rounded to its eager dtype, then the sum
rounded to the result dtype (``sgl_diffusion_core.triton_math.round_to``), no FMA
(``enable_fp_fusion=False``). One program per (row, column tile), consecutive programs on
consecutive tiles of a row (``TileConfig.grid``, ``triton_math.program_tile``). In place, the result is
written through residual's own row strides.

``indexed_gated_residual`` is the same kernel with ``INDEXED``: the gate row of token
``(b, s)`` is ``index[b, s]`` instead of ``s // L``, and a token whose index is out of
range reads row 0 and is written as NaN (into residual itself when in place).

residual and update load with the default L2 policy: with ``evict_first`` Wan and HunyuanVideo ran
5.0-5.1 points of copy slower (98.2-98.3% against 103.2-103.3%); FLUX, whose 57 MB nearly fit in L2,
measured 113.7% with it and 111.4% without, inside its 110-118% spread (H200, bf16:
docs/benchmarks/hint_ab_h200.json).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

from . import _index_rows_triton
from ._index_rows_triton import INDEX_ARGS, index_scalars

TL = triton_math.TL_DTYPES

@triton.jit(do_not_specialize=["S", "g_L"])
def _gated_residual_kernel(
    R, U, G, IDX, Y,
    S, D,
    r_sb, r_ss,
    u_sb, u_ss,
    g_sb, g_ss, g_L,
    y_sb, y_ss,
    i_sb, i_ss, K,
    HAS_GATE: tl.constexpr, T1: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr, INDEXED: tl.constexpr,
):
    r, tile = triton_math.program_tile(tl.cdiv(D, BLOCK))
    # (b, s) and the gate row divided in int32 (the row index is int32; a 64-bit division is a
    # ~70-instruction subroutine on NVIDIA), offsets in int64
    bi = r // S
    si = r - bi * S
    b = bi.to(tl.int64)
    s = si.to(tl.int64)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    r = tl.load(R + b * r_sb + s * r_ss + cols, mask=mask, other=0.0)
    u = tl.load(U + b * u_sb + s * u_ss + cols, mask=mask, other=0.0)
    t1 = triton_math.widen(u)
    if INDEXED:  # one gate row per token, picked by index (clamped in range; see poison below)
        g_row, ok = _index_rows_triton.table_row(IDX, b, s, i_sb, i_ss, K)
    else:
        g_row = (si // g_L).to(tl.int64)
    if HAS_GATE:
        g = tl.load(G + b * g_sb + g_row * g_ss + cols, mask=mask, other=0.0, eviction_policy="evict_last")
        t1 = triton_math.round_to(triton_math.widen(g) * t1, T1)
    y = triton_math.round_to(triton_math.widen(r) + t1, OUT)
    if INDEXED:
        y = _index_rows_triton.poison(y, ok)
    tl.store(Y + b * y_sb + s * y_ss + cols, triton_math.narrow(y, OUT), mask=mask)


def prepare(geom, residual, update, gate, index=None, *, config: TileConfig | None = None):
    """A runner ``(residual, update, gate[, index]) -> out`` (``residual`` itself when in place) for
    one signature; it takes ``index`` when ``geom.index`` is set (``indexed_gated_residual``)."""
    r, u, gl, ix = geom.residual, geom.update, geom.gate, geom.index
    plat = tensor_platform(residual.device)
    widest = max(residual.element_size(), update.element_size(), geom.out.itemsize)
    cfg = config or TileConfig.from_heuristic(r.D, widest, plat)
    y_sb, y_ss = (r.sb, r.ss) if geom.inplace else (r.S * r.D, r.D)
    scalars = (
        r.S, r.D, r.sb, r.ss, u.sb, u.ss,
        0 if gl is None else gl.sb, 0 if gl is None else gl.ss, 1 if gl is None else gl.L,
        y_sb, y_ss, *index_scalars(ix),
    )
    launch = PreparedLaunch(
        _gated_residual_kernel,
        cfg.grid(r.rows, r.D)[0],
        {"HAS_GATE": gate is not None, "T1": TL[geom.t1], "OUT": TL[geom.out], "BLOCK": cfg.block,
         "INDEXED": ix is not None},
        device=residual.device,
        n_ptrs=5,
        options=cfg.launch_options(plat),
        fp_fusion=False,
    )
    shape, out_dtype, device, inplace = r.shape, geom.out, residual.device, geom.inplace
    # a contiguous residual of the result's dtype: empty_like is the cheaper allocation (host time)
    like = residual.is_contiguous() and residual.dtype == out_dtype

    def new_out(residual):
        if inplace:
            return residual
        return torch.empty_like(residual) if like else torch.empty(shape, dtype=out_dtype, device=device)

    def run_indexed(residual, update, gate, index):
        out = new_out(residual)
        launch(residual, update, update if gate is None else gate, index, out, *scalars)
        return out

    def run(residual, update, gate):
        out = new_out(residual)
        launch(residual, update, update if gate is None else gate, update, out, *scalars)  # IDX unused: any pointer
        return out

    return run if ix is None else run_indexed


# what a launch at these widths (a per-sample gate: a chunk of a [B, 6, D] projection) specializes as
# multiples of 16: the compile lanes build the vectorized kernel that runs
_ALIGNED = ("R", "U", "G", "IDX", "Y", "D", "r_sb", "r_ss", "u_sb", "u_ss", "g_sb", "g_ss", "y_sb", "y_ss")


def aot_variants(platform: str = "cuda", *, indexed: bool = False):
    """bf16 / fp16 / fp32 streams with same-dtype and fp32 gates, out of place, at D=3072 and 5120
    (``indexed``: the ``indexed_gated_residual`` form, int32 and int64 index)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for gdt in sorted({dt, torch.float32}, key=str):
            t1 = torch.promote_types(gdt, dt)
            res = torch.promote_types(dt, t1)
            for D in (3072, 5120):
                for idt in ("i64", "i32") if indexed else ("i32",):
                    cfg = TileConfig.from_heuristic(D, res.itemsize, platform)
                    sig = {"R": f"*{names[dt]}", "U": f"*{names[dt]}", "G": f"*{names[gdt]}", "IDX": f"*{idt}",
                           "Y": f"*{names[res]}"}
                    sig.update({n: "i32" for n in ("S", "D", "r_sb", "r_ss", "u_sb", "u_ss", "g_sb", "g_ss", "g_L",
                                                   "y_sb", "y_ss", *INDEX_ARGS)})
                    sig.update({n: "constexpr" for n in ("HAS_GATE", "T1", "OUT", "BLOCK", "INDEXED")})
                    const = {"HAS_GATE": True, "T1": TL[t1], "OUT": TL[res], "BLOCK": cfg.block,
                             "INDEXED": indexed}
                    tag = f"indexed_gated_residual[index={idt}," if indexed else "gated_residual["
                    out.append(AotVariant(
                        name=f"{tag}{names[dt]},gate={names[gdt]},D={D},block={cfg.block},w={cfg.num_warps}]",
                        kernel=_gated_residual_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                        options={"enable_fp_fusion": False}, divisible_by_16=_ALIGNED,
                    ))
    return out


def indexed_aot_variants(platform: str = "cuda"):
    """The ``indexed_gated_residual`` variants of :func:`aot_variants`."""
    return aot_variants(platform, indexed=True)
