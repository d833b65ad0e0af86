"""Triton kernel for ``scale_shift`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Bit-exact to eager PyTorch: each intermediate is computed in fp32 and rounded to the dtype
eager gives it (``sgl_diffusion_core.triton_math.round_to``), and the launch forbids FMA
contraction (``enable_fp_fusion=False``). One program per (row, column tile); modulation
rows are found with ``base + b*sb + (s // L)*ss`` so every layout shares one kernel, and
``S`` / ``L`` are not specialized (a new sequence length never recompiles).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}


@triton.jit(do_not_specialize=["S", "sc_L", "sh_L", "scale_offset"])
def _scale_shift_kernel(
    X, SC, SH, Y,
    S, D,
    x_sb, x_ss,
    sc_sb, sc_ss, sc_L,
    sh_sb, sh_ss, sh_L,
    scale_offset,
    HAS_SHIFT: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    ROUND_OFFSET: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    b = row // S
    s = row - b * S
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    x = tl.load(X + b * x_sb + s * x_ss + cols, mask=mask, other=0.0, eviction_policy="evict_first")
    sc = tl.load(SC + b * sc_sb + (s // sc_L) * sc_ss + cols, mask=mask, other=0.0, eviction_policy="evict_last")
    off = scale_offset
    if ROUND_OFFSET:  # reproduce CPU eager: the scalar is first rounded to scale's dtype
        off = triton_math.round_to(off, T1)
    t1 = triton_math.round_to(off + triton_math.widen(sc), T1)
    y = triton_math.round_to(triton_math.widen(x) * t1, T2)
    if HAS_SHIFT:
        sh = tl.load(SH + b * sh_sb + (s // sh_L) * sh_ss + cols, mask=mask, other=0.0,
                     eviction_policy="evict_last")
        y = triton_math.round_to(y + triton_math.widen(sh), OUT)
    tl.store(Y + row * D + cols, triton_math.narrow(y, OUT), mask=mask)


def prepare(geom, x, scale, shift, config: TileConfig | None = None):
    """A runner ``(x, scale, shift, scale_offset) -> out`` for one call signature."""
    g = geom.x
    plat = tensor_platform(x.device)
    widest = max(x.element_size(), geom.out.itemsize)
    cfg = config or TileConfig.from_heuristic(g.D, widest, plat)
    sc, sh = geom.scale, geom.shift
    scalars = (
        g.S, g.D, g.sb, g.ss, sc.sb, sc.ss, sc.L,
        0 if sh is None else sh.sb, 0 if sh is None else sh.ss, 1 if sh is None else sh.L,
    )
    launch = PreparedLaunch(
        _scale_shift_kernel,
        (g.rows, triton.cdiv(g.D, cfg.block)),
        {"HAS_SHIFT": shift is not None, "T1": TL_DTYPES[geom.t1], "T2": TL_DTYPES[geom.t2],
         "OUT": TL_DTYPES[geom.out], "BLOCK": cfg.block, "ROUND_OFFSET": geom.round_offset},
        device=x.device,
        n_ptrs=4,
        options=cfg.launch_options(plat),
        fp_fusion=False,
    )
    shape, out_dtype, device = g.shape, geom.out, x.device

    def run(x, scale, shift, scale_offset):
        out = torch.empty(shape, dtype=out_dtype, device=device)
        launch(x, scale, x if shift is None else shift, out, *scalars, scale_offset)
        return out

    return run


def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    geom,
    config: TileConfig | None = None,
) -> torch.Tensor:
    """Launch once. ``geom`` comes from ``describe_scale_shift`` (validated inputs)."""
    return prepare(geom, x, scale, shift, config)(x, scale, shift, scale_offset)


scale_shift.prepare = prepare


def aot_variants(platform: str = "cuda"):
    """bf16 / fp16 / fp32 activations with same-dtype and fp32 (Wan) modulation, at D=3072 and 5120."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for xdt in (torch.bfloat16, torch.float16, torch.float32):
        for mdt in sorted({xdt, torch.float32}, key=str):
            t2 = torch.promote_types(xdt, mdt)
            for D in (3072, 5120):
                cfg = TileConfig.from_heuristic(D, max(xdt.itemsize, t2.itemsize), platform)
                sig = {"X": f"*{names[xdt]}", "SC": f"*{names[mdt]}", "SH": f"*{names[mdt]}", "Y": f"*{names[t2]}"}
                sig.update({n: "i32" for n in ("S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L",
                                               "sh_sb", "sh_ss", "sh_L")})
                sig["scale_offset"] = "fp32"
                sig.update({n: "constexpr" for n in ("HAS_SHIFT", "T1", "T2", "OUT", "BLOCK", "ROUND_OFFSET")})
                const = {"HAS_SHIFT": True, "T1": TL_DTYPES[mdt], "T2": TL_DTYPES[t2], "OUT": TL_DTYPES[t2],
                         "BLOCK": cfg.block, "ROUND_OFFSET": False}
                out.append(AotVariant(
                    name=f"scale_shift[x={names[xdt]},mod={names[mdt]},D={D},block={cfg.block},w={cfg.num_warps}]",
                    kernel=_scale_shift_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                    options={"enable_fp_fusion": False},
                ))
    return out
