"""Triton kernels for ``ln_modulate`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

One program per row ``(b, s)``. When the row fits one register block (``CHUNKS == 1``)
it is read once and the variance is computed centred (two passes over registers).
Otherwise the row is processed in ``BLOCK``-wide chunks: a statistics pass with
pivot-shifted sums (no cancellation for rows with a large mean), then an output pass that
re-reads the row, which is still in L1/L2. Small chunks with few warps per row beat a
whole row in registers on the H200 (see ``sgl_diffusion_core.launch``): more programs
per SM keep more loads in flight, and a 5120-wide row needs no masked lanes.
Modulation rows are found with ``base + b*sb + (s // L)*ss``, so
per-channel, per-sample, per-token (strided) and per-frame layouts share one kernel and
a new sequence length never recompiles (``S`` and ``L`` are not specialized).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import RowConfig, device_arch, tensor_platform


@triton.jit
def _modulate(y, offs, mask, W, BIAS, sc_row, sh_row, scale_offset,
              HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SHIFT: tl.constexpr):
    if HAS_W:
        y = y * tl.load(W + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    if HAS_BIAS:
        y = y + tl.load(BIAS + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    sc = tl.load(sc_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = y * (scale_offset + sc)
    if HAS_SHIFT:
        y = y + tl.load(sh_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    return y


@triton.jit(do_not_specialize=["S", "sc_L", "sh_L", "eps", "scale_offset"])
def _ln_modulate_kernel(
    X, SC, SH, W, BIAS, Y,
    S, D,
    x_sb, x_ss,
    sc_sb, sc_ss, sc_L,
    sh_sb, sh_ss, sh_L,
    eps, scale_offset,
    HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
    BLOCK: tl.constexpr, CHUNKS: tl.constexpr, UNROLL: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    b = row // S
    s = row - b * S
    x_row = X + b * x_sb + s * x_ss
    y_row = Y + row * D
    sc_row = SC + b * sc_sb + (s // sc_L) * sc_ss
    sh_row = SH + b * sh_sb + (s // sh_L) * sh_ss
    cols = tl.arange(0, BLOCK)
    if CHUNKS == 1:
        mask = cols < D
        x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        mean = tl.sum(x, axis=0) / D
        xc = tl.where(mask, x - mean, 0.0)
        var = tl.sum(xc * xc, axis=0) / D
        rstd = 1.0 / tl.sqrt(var + eps)
        y = _modulate(xc * rstd, cols, mask, W, BIAS, sc_row, sh_row, scale_offset, HAS_W, HAS_BIAS, HAS_SHIFT)
        tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=mask)
    else:
        pivot = tl.load(x_row).to(tl.float32)
        acc1 = tl.zeros([BLOCK], dtype=tl.float32)
        acc2 = tl.zeros([BLOCK], dtype=tl.float32)
        for c in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            offs = c * BLOCK + cols
            mask = offs < D
            x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            d = tl.where(mask, x - pivot, 0.0)
            acc1 += d
            acc2 += d * d
        m1 = tl.sum(acc1, axis=0) / D
        mean = pivot + m1
        var = tl.maximum(tl.sum(acc2, axis=0) / D - m1 * m1, 0.0)
        rstd = 1.0 / tl.sqrt(var + eps)
        for c in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            offs = c * BLOCK + cols
            mask = offs < D
            x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            y = _modulate((x - mean) * rstd, offs, mask, W, BIAS, sc_row, sh_row, scale_offset,
                          HAS_W, HAS_BIAS, HAS_SHIFT)
            tl.store(y_row + offs, y.to(Y.dtype.element_ty), mask=mask)


def config_for(D: int, rows: int, dtype: torch.dtype, device: torch.device) -> RowConfig:
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    return RowConfig.from_heuristic(D, dtype.itemsize, plat, arch, n_rows=rows)


def prepare(geom, x, scale, shift, weight, bias, config: RowConfig | None = None):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` for one call signature."""
    from sgl_diffusion_core import PreparedLaunch

    g = geom.x
    cfg = config or config_for(g.D, g.rows, x.dtype, x.device)
    sc, sh = geom.scale, geom.shift
    scalars = (
        g.S, g.D, g.sb, g.ss, sc.sb, sc.ss, sc.L,
        0 if sh is None else sh.sb, 0 if sh is None else sh.ss, 1 if sh is None else sh.L,
    )
    launch = PreparedLaunch(
        _ln_modulate_kernel,
        (g.rows,),
        {"HAS_SHIFT": shift is not None, "HAS_W": weight is not None, "HAS_BIAS": bias is not None,
         "BLOCK": cfg.block, "CHUNKS": cfg.chunks, "UNROLL": cfg.unroll},
        device=x.device,
        n_ptrs=6,
        options=cfg.launch_options(tensor_platform(x.device)),
    )
    shape, dtype, device = g.shape, x.dtype, x.device

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        out = torch.empty(shape, dtype=dtype, device=device)
        launch(x, scale, x if shift is None else shift, x if weight is None else weight,
               x if bias is None else bias, out, *scalars, eps, scale_offset)
        return out

    return run


def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    geom,
    config: RowConfig | None = None,
) -> torch.Tensor:
    """Launch the kernel once. ``geom`` comes from ``describe_ln_modulate`` (validated inputs)."""
    return prepare(geom, x, scale, shift, weight, bias, config)(x, scale, shift, weight, bias, eps, scale_offset)


ln_modulate.prepare = prepare


def aot_variants(platform: str = "cuda"):
    """Variants the compile lanes build: production widths with the launch configuration this
    platform would use (both row paths), with and without the optional affine arguments."""
    from sgl_diffusion_core import AotVariant

    def sig(dt: str, idx: str) -> dict[str, str]:
        s = {n: f"*{dt}" for n in ("X", "SC", "SH", "W", "BIAS", "Y")}
        s.update({n: idx for n in ("S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L", "sh_sb", "sh_ss", "sh_L")})
        s.update({"eps": "fp32", "scale_offset": "fp32"})
        s.update({n: "constexpr" for n in ("HAS_SHIFT", "HAS_W", "HAS_BIAS", "BLOCK", "CHUNKS", "UNROLL")})
        return s

    out: dict[str, AotVariant] = {}
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for D, full in ((3072, True), (5120, False), (1536, False), (16384, False)):
            for rows in (4608, 75600):
                cfg = RowConfig.from_heuristic(D, esize, platform, n_rows=rows)
                const = {"HAS_SHIFT": True, "HAS_W": full, "HAS_BIAS": full, "BLOCK": cfg.block, "CHUNKS": cfg.chunks,
                         "UNROLL": cfg.unroll}
                idx = "i64" if D == 16384 else "i32"
                name = (f"ln_modulate[{dt},D={D},block={cfg.block}x{cfg.chunks},w={cfg.num_warps},"
                        f"maxnreg={cfg.max_registers if platform == 'cuda' else None},unroll={cfg.unroll},"
                        f"affine={full},{idx}]")
                out[name] = AotVariant(
                    name=name, kernel=_ln_modulate_kernel, signature=sig(dt, idx), constexprs=const,
                    num_warps=cfg.num_warps, num_stages=cfg.num_stages,
                    options={"enable_fp_fusion": True, **{k: v for k, v in cfg.launch_options(platform).items()
                                                          if k not in ("num_warps", "num_stages")}},
                )
    return list(out.values())
