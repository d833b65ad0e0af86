"""Triton kernel of the row-norm family, contract ``close`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).
The ``triton`` backend of the four norms (``prepare``, ``prepare_norm``) and the gated one (``prepare_gated``).

One kernel serves ``layer_norm``, ``rms_norm``, ``ln_modulate``, ``rms_modulate`` and
``gated_residual_norm_modulate``: ``NORM`` picks LayerNorm (0) or RMSNorm (1), ``HAS_SCALE``
the adaLN modulation, ``HAS_RES`` the gated residual in front of the norm.

One program per row ``(b, s)``. When the row fits one register block (``CHUNKS == 1``)
it is read once and the variance is computed centred (two passes over registers).
Otherwise the row is processed in ``BLOCK``-wide chunks: a statistics pass with
pivot-shifted sums (no cancellation for rows with a large mean), then an output pass that
re-reads the row, which is still in L1/L2. Small chunks with few warps per row beat a
whole row in registers on the H200 (see ``sgl_diffusion_core.launch``): more programs
per SM keep more loads in flight, and a 5120-wide row needs no masked lanes.
Modulation rows are found with ``base + b*sb + (s // L)*ss``, so per-channel, per-sample, per-token
(strided) and per-frame layouts share one kernel and a new sequence length never recompiles.

The gated residual (``new = residual + gate * update``) is elementwise and bit-exact to eager:
each op rounded to its eager dtype with ``triton_math.round_to`` and the launch built without
FMA contraction. The chunked path recomputes it in the output pass (same inputs, same bits)
rather than re-reading the row it stored.

The launch rules (block, chunks, warps, whether a build takes the width as a constant) live in
``_row_norm_triton_rule``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import (
    PreparedLaunch,
    RowConfig,
    UnsupportedInputError,
    tensor_platform,
    triton_math,
    vendor,
)

from ._row_norm_triton_rule import config_for, fp8_config, gated_config, gated_fp8_config, width_config, width_constant

TL_DTYPES = triton_math.TL_DTYPES
# the FP8 constexprs of a launch that writes the default dtype
_NO_FP8 = {"FP8": False, "FP8_MAX": 448.0, "FNUZ": False, "BITS": False, "PTX": False}


@triton.jit
def _affine_modulate(y, offs, mask, W, BIAS, sc_row, sh_row, scale_offset,
                     HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALE: tl.constexpr,
                     HAS_SHIFT: tl.constexpr):
    if HAS_W:
        y = y * tl.load(W + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    if HAS_BIAS:
        y = y + tl.load(BIAS + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    if HAS_SCALE:
        sc = tl.load(sc_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        y = y * (scale_offset + sc)
    if HAS_SHIFT:
        y = y + tl.load(sh_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    return y


@triton.jit
def _row_values(x_row, u_row, g_row, nr_row, offs, mask,
                HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr, T1R: tl.constexpr, SUM_DT: tl.constexpr,
                NR_DT: tl.constexpr, STORE_RES: tl.constexpr, KEEP: tl.constexpr = False):
    """The row's input values as fp32: x itself, or the gated residual sum (stored when asked).
    ``KEEP``: a first pass whose bytes the second pass reads again (kept in L2, ``evict_last``)."""
    if HAS_RES:
        if KEEP:
            r = triton_math.widen(tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_last"))
            t = triton_math.widen(tl.load(u_row + offs, mask=mask, other=0.0, eviction_policy="evict_last"))
        else:
            r = triton_math.widen(tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first"))
            t = triton_math.widen(tl.load(u_row + offs, mask=mask, other=0.0, eviction_policy="evict_first"))
        if HAS_GATE:
            g = triton_math.widen(tl.load(g_row + offs, mask=mask, other=0.0, eviction_policy="evict_last"))
            t = triton_math.round_to(g * t, T1R)
        v = triton_math.round_to(triton_math.round_to(r + t, SUM_DT), NR_DT)
        if STORE_RES:
            tl.store(nr_row + offs, triton_math.narrow(v, NR_DT), mask=mask)
        return tl.where(mask, v, 0.0)
    else:
        return tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)


@triton.jit
def _per_d(a, D, FUSION_FREE: tl.constexpr):
    """``a / D``; in kernels built without FMA contraction as an fp64 division (fp32 division
    expands into Newton-Raphson FMAs on ROCm, which the exact lanes reject)."""
    if FUSION_FREE:
        return (a.to(tl.float64) / D).to(tl.float32)
    else:
        return a / D


@triton.jit
def _rstd(var, eps, FUSION_FREE: tl.constexpr):
    if FUSION_FREE:
        return tl.math.rsqrt(var + eps)
    else:
        return 1.0 / tl.sqrt(var + eps)


@triton.jit(do_not_specialize=["S", "sc_L", "sh_L", "g_L", "eps", "scale_offset"])
def _row_norm_kernel(
    X, SC, SH, W, BIAS, Y, U, G, NR, QS,
    S, D,
    x_sb, x_ss,
    sc_sb, sc_ss, sc_L,
    sh_sb, sh_ss, sh_L,
    u_sb, u_ss,
    g_sb, g_ss, g_L,
    eps, scale_offset,
    NORM: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, HAS_GATE: tl.constexpr,
    T1R: tl.constexpr, SUM_DT: tl.constexpr, NR_DT: tl.constexpr,
    BLOCK: tl.constexpr, CHUNKS: tl.constexpr, UNROLL: tl.constexpr, TAIL: tl.constexpr,
    FP8: tl.constexpr, FP8_MAX: tl.constexpr, FNUZ: tl.constexpr, BITS: tl.constexpr, PTX: tl.constexpr,
    SC_FRAMES: tl.constexpr, SH_FRAMES: tl.constexpr, G_FRAMES: tl.constexpr, WIDTH: tl.constexpr,
):
    """One row of any of the five row norms (fp32 statistics, one rounding: the close contract).

    Long because one kernel serves every norm and both row shapes (held in one block, or streamed in
    ``CHUNKS`` chunks); the constexpr branches compile away (each build is short).

    ``FP8`` (an FP8 ``out_dtype`` of the modulated norms): the result is rounded to x's
    dtype (what the chain it is compared with holds), the row's amax gives its scale (``QS``, one
    per row) and ``Y`` receives the FP8 codes, ``y * (1 / scale)`` (``store_fp8_rcp``: a code may
    differ by one from the reference's ``y / scale``); a chunked row computes its output twice, once
    for the amax and once for the codes (its inputs are still in L1/L2).
    """
    if WIDTH > 0:  # the row width as a compile-time constant (see width_constant): partial chunks' masks fold
        D = WIDTH
    pid = tl.program_id(0)  # (b, s) divided in int32 (a 64-bit division is a long subroutine), offsets int64
    bi = pid // S
    si = pid - bi * S
    b, s, row = bi.to(tl.int64), si.to(tl.int64), pid.to(tl.int64)
    x_row = X + b * x_sb + s * x_ss
    y_row = Y + row * D
    sc_row = SC + b * sc_sb + (si // sc_L if SC_FRAMES else si).to(tl.int64) * sc_ss
    sh_row = SH + b * sh_sb + (si // sh_L if SH_FRAMES else si).to(tl.int64) * sh_ss
    u_row = U + b * u_sb + s * u_ss
    g_row = G + b * g_sb + (si // g_L if G_FRAMES else si).to(tl.int64) * g_ss
    nr_row = NR + row * D
    cols = tl.arange(0, BLOCK)
    if CHUNKS == 1:
        mask = cols < D
        x = _row_values(x_row, u_row, g_row, nr_row, cols, mask, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT, True)
        if TAIL > 0:  # the row's second tile, columns BLOCK .. BLOCK + TAIL - 1
            cols2 = BLOCK + tl.arange(0, TAIL)
            mask2 = cols2 < D
            x2 = _row_values(x_row, u_row, g_row, nr_row, cols2, mask2, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT, True)
        if NORM == 0:
            if TAIL > 0:
                mean = _per_d(tl.sum(x, axis=0) + tl.sum(x2, axis=0), D, HAS_RES)
                xc2 = tl.where(mask2, x2 - mean, 0.0)
            else:
                mean = _per_d(tl.sum(x, axis=0), D, HAS_RES)
            xc = tl.where(mask, x - mean, 0.0)
        else:
            xc, xc2 = x, x2 if TAIL > 0 else x
        var = _per_d(tl.sum(xc * xc, axis=0) + tl.sum(xc2 * xc2, axis=0) if TAIL > 0 else tl.sum(xc * xc, axis=0), D,
                     HAS_RES)
        rstd = _rstd(var, eps, HAS_RES)
        y = _affine_modulate(xc * rstd, cols, mask, W, BIAS, sc_row, sh_row, scale_offset,
                             HAS_W, HAS_BIAS, HAS_SCALE, HAS_SHIFT)
        if TAIL > 0:
            y2 = _affine_modulate(xc2 * rstd, cols2, mask2, W, BIAS, sc_row, sh_row, scale_offset,
                                  HAS_W, HAS_BIAS, HAS_SCALE, HAS_SHIFT)
        if FP8:
            y = triton_math.round_to_packed(y, X.dtype.element_ty, PTX)
            if TAIL > 0:
                y2 = triton_math.round_to_packed(y2, X.dtype.element_ty, PTX)
                qs = triton_math.store_row_scale2(QS, row, tl.where(mask, tl.abs(y), 0.0),
                                                  tl.where(mask2, tl.abs(y2), 0.0), FP8_MAX)
            else:
                qs = triton_math.store_row_scale(QS, row, tl.where(mask, tl.abs(y), 0.0), FP8_MAX)
            triton_math.store_fp8_rcp(y, y_row, cols, mask, qs, FP8_MAX, Y.dtype.element_ty, BITS, FNUZ, PTX)
            if TAIL > 0:
                triton_math.store_fp8_rcp(y2, y_row, cols2, mask2, qs, FP8_MAX, Y.dtype.element_ty, BITS, FNUZ, PTX)
        else:
            tl.store(y_row + cols, y.to(Y.dtype.element_ty), mask=mask)
            if TAIL > 0:
                tl.store(y_row + cols2, y2.to(Y.dtype.element_ty), mask=mask2)
    else:
        if NORM == 1:
            pivot = 0.0
        elif HAS_RES:
            pivot = _row_values(x_row, u_row, g_row, nr_row, 0, D > 0, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT,
                                False)
        else:
            pivot = tl.load(x_row).to(tl.float32)
        acc1, acc2 = tl.zeros([BLOCK], dtype=tl.float32), tl.zeros([BLOCK], dtype=tl.float32)
        for c in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            offs = c * BLOCK + cols
            mask = offs < D
            if HAS_RES:  # the output pass reads residual and update again: keep them in L2
                x = _row_values(x_row, u_row, g_row, nr_row, offs, mask, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT,
                                True, True)
            else:
                x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            if NORM == 0:
                d = tl.where(mask, x - pivot, 0.0)
                acc1 += d
                acc2 += d * d
            else:
                acc2 += x * x
        if NORM == 0:
            m1 = _per_d(tl.sum(acc1, axis=0), D, HAS_RES)
            mean = pivot + m1
            var = tl.maximum(_per_d(tl.sum(acc2, axis=0), D, HAS_RES) - m1 * m1, 0.0)
        else:
            mean = 0.0
            var = _per_d(tl.sum(acc2, axis=0), D, HAS_RES)
        rstd = _rstd(var, eps, HAS_RES)
        if FP8:  # the row's amax first: its output once more, not stored
            amax = tl.zeros([BLOCK], dtype=tl.float32)
            for c in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
                offs = c * BLOCK + cols
                mask = offs < D
                x = _row_values(x_row, u_row, g_row, nr_row, offs, mask, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT,
                                False, True)
                y = _affine_modulate((x - mean) * rstd, offs, mask, W, BIAS, sc_row, sh_row, scale_offset,
                                     HAS_W, HAS_BIAS, HAS_SCALE, HAS_SHIFT)
                y = triton_math.round_to_packed(y, X.dtype.element_ty, PTX)
                amax = triton_math.max_nan(amax, tl.where(mask, tl.abs(y), 0.0))
            qs = triton_math.store_row_scale(QS, row, amax, FP8_MAX)
        for c in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            offs = c * BLOCK + cols
            mask = offs < D
            x = _row_values(x_row, u_row, g_row, nr_row, offs, mask, HAS_RES, HAS_GATE, T1R, SUM_DT, NR_DT, False)
            xn = (x - mean) * rstd if NORM == 0 else x * rstd
            y = _affine_modulate(xn, offs, mask, W, BIAS, sc_row, sh_row, scale_offset,
                                 HAS_W, HAS_BIAS, HAS_SCALE, HAS_SHIFT)
            if FP8:
                y = triton_math.round_to_packed(y, X.dtype.element_ty, PTX)
                triton_math.store_fp8_rcp(y, y_row, offs, mask, qs, FP8_MAX, Y.dtype.element_ty, BITS, FNUZ, PTX)
            else:
                tl.store(y_row + offs, y.to(Y.dtype.element_ty), mask=mask)


def _mod_scalars(lay) -> tuple[int, int, int]:
    return (0, 0, 1) if lay is None else (lay.sb, lay.ss, lay.L)


def _launch(g, x, cfg, constexprs, fp_fusion, fp8=_NO_FP8, mods=(None, None, None)):
    """One program per row; ``mods``: scale, shift and gate layouts (a token is divided by L where L > 1)."""
    if g.rows > 2**31 - 1:
        raise UnsupportedInputError(f"{g.rows} rows exceed the launch grid (2**31 - 1): one program per row")
    return PreparedLaunch(
        _row_norm_kernel,
        (g.rows,),
        {**constexprs, "BLOCK": cfg.block, "CHUNKS": cfg.chunks, "UNROLL": cfg.unroll, "TAIL": cfg.tail, **fp8,
         **{f"{n}_FRAMES": lay is not None and lay.L > 1 for n, lay in zip(("SC", "SH", "G"), mods)},
         "WIDTH": width_constant(g.D, cfg, g.rows)},
        device=x.device,
        n_ptrs=10,
        options=cfg.launch_options(tensor_platform(x.device)),
        fp_fusion=fp_fusion,
    )


def _fp8_constexprs(fmt: str | None, platform: str, bits: bool = triton_math.FP8_BITS) -> dict:
    """The FP8 constexprs of a launch on ``platform`` writing format ``fmt`` (None: the default dtype);
    ``PTX``: NVIDIA's conversions (packed bf16 rounding, the FP8 conversion's own saturation)."""
    if fmt is None:
        return _NO_FP8
    return {"FP8": True, "FP8_MAX": vendor.FP8_MAX[fmt], "FNUZ": fmt == vendor.E4M3FNUZ, "BITS": bits,
            "PTX": platform == "cuda" and not bits}


def _norm_launch(geom, x, scale, shift, weight, bias, config: RowConfig | None):
    g = geom.x
    cfg = config or config_for(g.D, g.rows, x.dtype, x.device)
    if geom.fp8 is not None and config is None and x.device.type != "cpu":
        cfg = fp8_config(g.D, cfg, tensor_platform(x.device))
    scalars = (g.S, g.D, g.sb, g.ss, *_mod_scalars(geom.scale), *_mod_scalars(geom.shift), 0, 0, 0, 0, 1)
    launch = _launch(g, x, cfg, {
        "NORM": 0 if geom.norm == "layer" else 1, "HAS_SCALE": scale is not None, "HAS_SHIFT": shift is not None,
        "HAS_W": weight is not None, "HAS_BIAS": bias is not None, "HAS_RES": False, "HAS_GATE": False,
        "T1R": tl.float32, "SUM_DT": tl.float32, "NR_DT": tl.float32,
    }, True, _fp8_constexprs(geom.fp8, tensor_platform(x.device)), (geom.scale, geom.shift, None))
    return launch, scalars


def prepare(geom, x, scale, shift, weight, bias, config: RowConfig | None = None):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` for one call signature
    of ``ln_modulate`` / ``rms_modulate``. ``config``: a launch other than the rule's (tuning)."""
    launch, scalars = _norm_launch(geom, x, scale, shift, weight, bias, config)
    shape, dtype, device = geom.x.shape, geom.chain.out, x.device
    if geom.fp8 is not None:  # out_dtype=FP8: ``(.., out_dtype, eps, scale_offset) -> (codes, scales)``
        fp8, bits = geom.fp8_dtype, triton_math.FP8_BITS

        def run_fp8(x, scale, shift, weight, bias, out_dtype, eps, scale_offset):
            out = torch.empty(shape, dtype=fp8, device=device)
            qs = torch.empty((*shape[:-1], 1), dtype=torch.float32, device=device)
            launch(x, scale, x if shift is None else shift, x if weight is None else weight,
                   x if bias is None else bias, out.view(torch.uint8) if bits else out, x, x, x, qs, *scalars, eps,
                   scale_offset)
            return out, qs

        return run_fp8

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        out = torch.empty(shape, dtype=dtype, device=device)
        launch(x, scale, x if shift is None else shift, x if weight is None else weight,
               x if bias is None else bias, out, x, x, x, x, *scalars, eps, scale_offset)
        return out

    return run


def prepare_norm(geom, x, weight, bias, config: RowConfig | None = None):
    """A runner ``(x, weight, bias, eps, scale_offset) -> out`` for one call signature of
    ``layer_norm`` / ``rms_norm`` (``scale_offset`` unused)."""
    launch, scalars = _norm_launch(geom, x, None, None, weight, bias, config)
    shape, dtype, device = geom.x.shape, geom.chain.out, x.device

    def run(x, weight, bias, eps, scale_offset):
        out = torch.empty(shape, dtype=dtype, device=device)
        launch(x, x, x, x if weight is None else weight, x if bias is None else bias, out, x, x, x, x, *scalars,
               eps, scale_offset)
        return out

    return run


def prepare_gated(geom, residual, update, gate, scale, shift, weight, bias, config: RowConfig | None = None):
    """A runner ``(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset) -> (out,
    new_residual)`` for one call signature of ``gated_residual_norm_modulate`` (``norm`` is the
    plan's, in ``geom``). Built without FMA contraction (the residual sum must match eager bit for bit)."""
    g, u = geom.residual, geom.update
    cfg = config or gated_config(g.D, residual.element_size(), tensor_platform(residual.device), g.rows)
    if geom.fp8 is not None and config is None and residual.device.type != "cpu":
        cfg = gated_fp8_config(g.D, cfg, tensor_platform(residual.device))
    gl = geom.gate
    scalars = (g.S, g.D, g.sb, g.ss, *_mod_scalars(geom.scale), *_mod_scalars(geom.shift), u.sb, u.ss,
               *_mod_scalars(gl))
    launch = _launch(g, residual, cfg, {
        "NORM": 0 if geom.norm == "layer" else 1, "HAS_SCALE": True, "HAS_SHIFT": shift is not None,
        "HAS_W": weight is not None, "HAS_BIAS": bias is not None, "HAS_RES": True, "HAS_GATE": gate is not None,
        "T1R": TL_DTYPES[geom.t1], "SUM_DT": TL_DTYPES[geom.sum], "NR_DT": TL_DTYPES[residual.dtype],
    }, False, _fp8_constexprs(geom.fp8, tensor_platform(residual.device)), (geom.scale, geom.shift, gl))
    shape, dtype, device = g.shape, residual.dtype, residual.device
    if geom.fp8 is not None:  # out_dtype=FP8: ``(.., norm, out_dtype, eps, scale_offset) -> (codes, scales, new)``
        fp8, bits = geom.fp8_dtype, triton_math.FP8_BITS

        def run_fp8(residual, update, gate, scale, shift, weight, bias, _norm, out_dtype, eps, scale_offset):
            out = torch.empty(shape, dtype=fp8, device=device)
            qs = torch.empty((*shape[:-1], 1), dtype=torch.float32, device=device)
            new = torch.empty(shape, dtype=dtype, device=device)
            x = residual
            launch(x, scale, x if shift is None else shift, x if weight is None else weight,
                   x if bias is None else bias, out.view(torch.uint8) if bits else out, update,
                   update if gate is None else gate, new, qs, *scalars, eps, scale_offset)
            return out, qs, new

        return run_fp8

    def run(residual, update, gate, scale, shift, weight, bias, _norm, eps, scale_offset):
        out = torch.empty(shape, dtype=dtype, device=device)
        new = torch.empty(shape, dtype=dtype, device=device)
        x = residual
        launch(x, scale, x if shift is None else shift, x if weight is None else weight, x if bias is None else bias,
               out, update, update if gate is None else gate, new, x, *scalars, eps, scale_offset)
        return out, new

    return run


# --- ahead-of-time compile variants ----------------------------------------------------------------

_NAMES = {tl.bfloat16: "bf16", tl.float16: "fp16", tl.float32: "fp32"}
# what a launch at these widths specializes as multiples of 16 (16-byte aligned tensors, widths and strides
# that are multiples of 16): the builds the compile lanes report are the vectorized ones that run
_ALIGNED = ("X", "SC", "SH", "W", "BIAS", "Y", "U", "G", "NR", "QS", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sh_sb",
            "sh_ss", "u_sb", "u_ss", "g_sb", "g_ss")
_SCALARS = ("S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L", "sh_sb", "sh_ss", "sh_L", "u_sb", "u_ss",
            "g_sb", "g_ss", "g_L")
_FRAMES = ("SC_FRAMES", "SH_FRAMES", "G_FRAMES")  # per-frame modulation operands (see _launch)
_CONSTS = ("NORM", "HAS_SCALE", "HAS_SHIFT", "HAS_W", "HAS_BIAS", "HAS_RES", "HAS_GATE", "T1R", "SUM_DT", "NR_DT",
           "BLOCK", "CHUNKS", "UNROLL", "TAIL", "FP8", "FP8_MAX", "FNUZ", "BITS", "PTX", *_FRAMES, "WIDTH")


def _variant(platform, label, dt, D, rows, norm, *, scale, affine, res, idx="i32", fp8=None):
    from sgl_diffusion_core import AotVariant

    name_dt = _NAMES[dt]
    rule = gated_config if res else width_config
    cfg = rule(D, 4 if dt == tl.float32 else 2, platform, n_rows=rows)
    if fp8 is not None and platform != "cpu":
        cfg = gated_fp8_config(D, cfg, platform) if res else fp8_config(D, cfg, platform)
    sig = {n: f"*{name_dt}" for n in ("X", "SC", "SH", "W", "BIAS", "Y", "U", "G", "NR")}
    sig["QS"] = "*fp32"
    if fp8 is not None:
        sig["Y"] = f"*{triton_math.AOT_FP8[fp8]}"
    sig.update({n: idx for n in _SCALARS})
    sig.update({"eps": "fp32", "scale_offset": "fp32"})
    sig.update({n: "constexpr" for n in _CONSTS})
    const = {"NORM": norm, "HAS_SCALE": scale, "HAS_SHIFT": scale, "HAS_W": affine, "HAS_BIAS": affine,
             "HAS_RES": res, "HAS_GATE": res, "T1R": dt, "SUM_DT": dt, "NR_DT": dt,
             "BLOCK": cfg.block, "CHUNKS": cfg.chunks, "UNROLL": cfg.unroll, "TAIL": cfg.tail,
             **_fp8_constexprs(fp8, platform, bits=False), **dict.fromkeys(_FRAMES, False),
             "WIDTH": width_constant(D, cfg, rows)}
    block = f"{cfg.block}+{cfg.tail}" if cfg.tail else f"{cfg.block}"
    name = (f"{label}[{name_dt}{'->' + fp8 if fp8 else ''},D={D},block={block}x{cfg.chunks},w={cfg.num_warps},"
            f"maxnreg={cfg.max_registers if platform == 'cuda' else None},unroll={cfg.unroll},affine={affine},{idx}]")
    opts = {k: v for k, v in cfg.launch_options(platform).items() if k not in ("num_warps", "num_stages")}
    fp8_only = {} if fp8 is None else {"min_cuda_arch": 89, "amd_targets": vendor.FP8_AMD_TARGETS[fp8]}
    return AotVariant(name=name, kernel=_row_norm_kernel, signature=sig, constexprs=const,
                      num_warps=cfg.num_warps, num_stages=cfg.num_stages,
                      options={"enable_fp_fusion": not res, **opts}, divisible_by_16=_ALIGNED, **fp8_only)


def aot_variants(platform: str = "cuda"):
    """ln_modulate's variants: production widths with the launch configuration this platform
    would use (both row paths), with and without the optional affine arguments."""
    out = {}
    for dt in (tl.bfloat16, tl.float16, tl.float32):
        for D, full in ((3072, True), (5120, False), (1536, False), (16384, False)):
            for rows in (4608, 75600):
                v = _variant(platform, "ln_modulate", dt, D, rows, 0, scale=True, affine=full,
                             res=False, idx="i64" if D == 16384 else "i32")
                out[v.name] = v
    # FP8 results (out_dtype): the formats this platform stores, one row in registers and one chunked
    for fmt in (vendor.E4M3FN, vendor.E4M3FNUZ) if platform == "hip" else (vendor.E4M3FN,):
        for D, rows in ((3072, 4608), (5120, 75600), (16384, 4608)):
            v = _variant(platform, "ln_modulate", tl.bfloat16, D, rows, 0, scale=True, affine=False, res=False,
                         fp8=fmt)
            out[v.name] = v
    return list(out.values())


def aot_variants_plain(platform: str = "cuda", norm: int = 0, label: str = "layer_norm"):
    out = {}
    for dt in (tl.bfloat16, tl.float32):
        for D, affine in ((3072, True), (5120, False), (2432, True)):
            for rows in (4608, 75600):
                v = _variant(platform, label, dt, D, rows, norm, scale=False, affine=affine, res=False)
                out[v.name] = v
    return list(out.values())


def aot_variants_layer_norm(platform: str = "cuda"):
    """layer_norm: bf16/fp32 at FLUX/SD3/Wan widths, both row paths."""
    return aot_variants_plain(platform, 0, "layer_norm")


def aot_variants_rms_norm(platform: str = "cuda"):
    """rms_norm: bf16/fp32 at FLUX/SD3/Wan widths, both row paths."""
    return aot_variants_plain(platform, 1, "rms_norm")


def aot_variants_rms_modulate(platform: str = "cuda"):
    """rms_modulate: bf16 at 3072 / 5120, both row paths."""
    out = {}
    for D in (3072, 5120):
        for rows in (4608, 75600):
            v = _variant(platform, "rms_modulate", tl.bfloat16, D, rows, 1, scale=True, affine=True, res=False)
            out[v.name] = v
    return list(out.values())


def aot_variants_gated(platform: str = "cuda"):
    """gated_residual_norm_modulate: bf16 / fp32 streams, LayerNorm and RMSNorm, built without FMA."""
    out = {}
    for dt in (tl.bfloat16, tl.float32):
        for D in (3072, 5120):
            for norm in (0, 1):
                v = _variant(platform, f"gated_residual_norm_modulate[norm={norm}]", dt, D, 75600, norm, scale=True,
                             affine=False, res=True)
                out[v.name] = v
    for fmt in (vendor.E4M3FN, vendor.E4M3FNUZ) if platform == "hip" else (vendor.E4M3FN,):  # FP8 out_dtype
        for D, rows in ((3072, 4608), (5120, 75600)):
            v = _variant(platform, "gated_residual_norm_modulate[norm=0]", tl.bfloat16, D, rows, 0, scale=True,
                         affine=False, res=True, fp8=fmt)
            out[v.name] = v
    return list(out.values())
