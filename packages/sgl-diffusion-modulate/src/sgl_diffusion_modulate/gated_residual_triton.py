"""Triton kernel for ``gated_residual`` / ``gated_residual_`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Bit-exact to eager PyTorch: ``gate * update`` rounded to its eager dtype, then the sum
rounded to the result dtype (``sgl_diffusion_core.triton_math.round_to``), no FMA
(``enable_fp_fusion=False``). One program per (row, column tile). In place, the result is
written through residual's own row strides.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}


@triton.jit(do_not_specialize=["S", "g_L"])
def _gated_residual_kernel(
    R, U, G, Y,
    S, D,
    r_sb, r_ss,
    u_sb, u_ss,
    g_sb, g_ss, g_L,
    y_sb, y_ss,
    HAS_GATE: tl.constexpr, T1: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    b = row // S
    s = row - b * S
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    r = tl.load(R + b * r_sb + s * r_ss + cols, mask=mask, other=0.0, eviction_policy="evict_first")
    u = tl.load(U + b * u_sb + s * u_ss + cols, mask=mask, other=0.0, eviction_policy="evict_first")
    t1 = triton_math.widen(u)
    if HAS_GATE:
        g = tl.load(G + b * g_sb + (s // g_L) * g_ss + cols, mask=mask, other=0.0, eviction_policy="evict_last")
        t1 = triton_math.round_to(triton_math.widen(g) * t1, T1)
    y = triton_math.round_to(triton_math.widen(r) + t1, OUT)
    tl.store(Y + b * y_sb + s * y_ss + cols, triton_math.narrow(y, OUT), mask=mask)


def prepare(geom, residual, update, gate, config: TileConfig | None = None):
    """A runner ``(residual, update, gate) -> out`` (``residual`` itself when in place) for one signature."""
    r, u, gl = geom.residual, geom.update, geom.gate
    plat = tensor_platform(residual.device)
    widest = max(residual.element_size(), update.element_size(), geom.out.itemsize)
    cfg = config or TileConfig.from_heuristic(r.D, widest, plat)
    y_sb, y_ss = (r.sb, r.ss) if geom.inplace else (r.S * r.D, r.D)
    scalars = (
        r.S, r.D, r.sb, r.ss, u.sb, u.ss,
        0 if gl is None else gl.sb, 0 if gl is None else gl.ss, 1 if gl is None else gl.L,
        y_sb, y_ss,
    )
    launch = PreparedLaunch(
        _gated_residual_kernel,
        (r.rows, triton.cdiv(r.D, cfg.block)),
        {"HAS_GATE": gate is not None, "T1": TL_DTYPES[geom.t1], "OUT": TL_DTYPES[geom.out], "BLOCK": cfg.block},
        device=residual.device,
        n_ptrs=4,
        options=cfg.launch_options(plat),
        fp_fusion=False,
    )
    shape, out_dtype, device, inplace = r.shape, geom.out, residual.device, geom.inplace

    def run(residual, update, gate):
        out = residual if inplace else torch.empty(shape, dtype=out_dtype, device=device)
        launch(residual, update, update if gate is None else gate, out, *scalars)
        return out

    return run


def gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
    geom,
    config: TileConfig | None = None,
) -> torch.Tensor:
    """Launch once. ``geom`` comes from ``describe_gated_residual`` (validated inputs)."""
    return prepare(geom, residual, update, gate, config)(residual, update, gate)


gated_residual.prepare = prepare


def aot_variants(platform: str = "cuda"):
    """bf16 / fp16 / fp32 streams with same-dtype and fp32 gates, out of place, at D=3072 and 5120."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        for gdt in sorted({dt, torch.float32}, key=str):
            t1 = torch.promote_types(gdt, dt)
            res = torch.promote_types(dt, t1)
            for D in (3072, 5120):
                cfg = TileConfig.from_heuristic(D, res.itemsize, platform)
                sig = {"R": f"*{names[dt]}", "U": f"*{names[dt]}", "G": f"*{names[gdt]}", "Y": f"*{names[res]}"}
                sig.update({n: "i32" for n in ("S", "D", "r_sb", "r_ss", "u_sb", "u_ss", "g_sb", "g_ss", "g_L",
                                               "y_sb", "y_ss")})
                sig.update({n: "constexpr" for n in ("HAS_GATE", "T1", "OUT", "BLOCK")})
                const = {"HAS_GATE": True, "T1": TL_DTYPES[t1], "OUT": TL_DTYPES[res], "BLOCK": cfg.block}
                out.append(AotVariant(
                    name=f"gated_residual[{names[dt]},gate={names[gdt]},D={D},block={cfg.block},w={cfg.num_warps}]",
                    kernel=_gated_residual_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                    options={"enable_fp_fusion": False},
                ))
    return out
