"""Triton kernel of the activations' FP8 results (CUDA sm_89+ and ROCm gfx942 / gfx950, each in the
format it stores; CPU under ``TRITON_INTERPRET=1``, both formats): ``out_dtype=torch.float8_e4m3fn``
(or ``float8_e4m3fnuz``) of ``gelu_tanh``, ``silu_and_mul`` and ``gelu_tanh_and_mul``, the inputs
of a DiT MLP's second linear layer.

One program per row. The value is the default kernel's (``act(x + bias)``, or ``act(a) * b`` of the
packed GLU, fp32 math) rounded to the result dtype, so that it quantizes what the eager chain holds;
the row's amax gives its scale (``max(amax, 1e-12) / fp8_max``, IEEE division, written to ``QS``)
and the codes are ``value * (1 / scale)`` saturated to ``+-fp8_max``, ties to even (core's
``triton_math.store_fp8_rcp``: one multiply per element where a division sequence kept the kernel
bound by instructions; a code may differ by one from the reference's ``value / scale``). A row of at
most :data:`MAX_BLOCK` columns is held in registers; a wider one is computed twice, once for its amax
and once for its codes (its inputs then come from L2).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import AotVariant, PreparedLaunch, TileConfig, next_pow2, tensor_platform, triton_math, vendor

from ._math_triton import ACTS, activate, launch_options, load_stream, math_flags, row_offsets

# The widest row held in registers (fp32 values; 32 per thread at 16 warps)
MAX_BLOCK = 16384


@triton.jit
def _value(row, BIAS, offs, mask, b_shift, ACT: tl.constexpr, GLU: tl.constexpr, HAS_BIAS: tl.constexpr,
           MID: tl.constexpr, FAST: tl.constexpr, PTX: tl.constexpr):
    """The row's values at ``offs``: ``act(a [+ bias])`` (times ``b [+ bias]`` for the GLU), rounded to
    ``MID`` (the result dtype; ``PTX``: two values per conversion) and widened back to fp32."""
    a = load_stream(row + offs, mask)
    if HAS_BIAS:
        a += triton_math.widen(tl.load(BIAS + offs, mask=mask, other=0.0, eviction_policy="evict_last"))
    y = activate(a, ACT, FAST)
    if GLU:
        b = load_stream(row + b_shift + offs, mask)
        if HAS_BIAS:
            b += triton_math.widen(tl.load(BIAS + b_shift + offs, mask=mask, other=0.0, eviction_policy="evict_last"))
        y = y * b
    return triton_math.round_to_packed(y, MID, PTX)


@triton.jit(do_not_specialize=["n1", "n2"])
def _act_fp8_kernel(
    X, BIAS, Q, QS,
    D, b_shift, n1, n2,
    x_s0, x_s1, x_s2,
    ACT: tl.constexpr, GLU: tl.constexpr, HAS_BIAS: tl.constexpr, NDIM: tl.constexpr, MID: tl.constexpr,
    BLOCK: tl.constexpr, CHUNKS: tl.constexpr, FAST: tl.constexpr, FP8_MAX: tl.constexpr, FNUZ: tl.constexpr,
    BITS: tl.constexpr, PTX: tl.constexpr, TAIL: tl.constexpr,
):
    """``PTX`` (NVIDIA hardware): packed bf16 rounding, and no clamp before the saturating FP8 conversion.
    ``TAIL``: a held row's second tile, columns ``BLOCK .. BLOCK + TAIL - 1`` (0: none)."""
    r = tl.program_id(0)
    x_off, _, _ = row_offsets(r, n1, n2, x_s0, x_s1, x_s2, 0, 0, 0, 0, 0, 0, NDIM)
    x_row = X + x_off
    q_row = Q + r.to(tl.int64) * D
    cols = tl.arange(0, BLOCK)
    if CHUNKS == 1:
        mask = cols < D
        v = _value(x_row, BIAS, cols, mask, b_shift, ACT, GLU, HAS_BIAS, MID, FAST, PTX)
        if TAIL > 0:
            cols2 = BLOCK + tl.arange(0, TAIL)
            mask2 = cols2 < D
            v2 = _value(x_row, BIAS, cols2, mask2, b_shift, ACT, GLU, HAS_BIAS, MID, FAST, PTX)
            qs = triton_math.store_row_scale2(QS, r, tl.where(mask, tl.abs(v), 0.0), tl.where(mask2, tl.abs(v2), 0.0),
                                              FP8_MAX)
            triton_math.store_fp8_rcp(v2, q_row, cols2, mask2, qs, FP8_MAX, Q.dtype.element_ty, BITS, FNUZ, PTX)
        else:
            qs = triton_math.store_row_scale(QS, r, tl.where(mask, tl.abs(v), 0.0), FP8_MAX)
        triton_math.store_fp8_rcp(v, q_row, cols, mask, qs, FP8_MAX, Q.dtype.element_ty, BITS, FNUZ, PTX)
    else:
        amax = tl.zeros([BLOCK], dtype=tl.float32)
        for c in range(CHUNKS):
            offs = c * BLOCK + cols
            mask = offs < D
            v = _value(x_row, BIAS, offs, mask, b_shift, ACT, GLU, HAS_BIAS, MID, FAST, PTX)
            amax = triton_math.max_nan(amax, tl.where(mask, tl.abs(v), 0.0))
        qs = triton_math.store_row_scale(QS, r, amax, FP8_MAX)
        for c in range(CHUNKS):
            offs = c * BLOCK + cols
            mask = offs < D
            v = _value(x_row, BIAS, offs, mask, b_shift, ACT, GLU, HAS_BIAS, MID, FAST, PTX)
            triton_math.store_fp8_rcp(v, q_row, offs, mask, qs, FP8_MAX, Q.dtype.element_ty, BITS, FNUZ, PTX)


def row_config(D: int, max_block: int | None = None, platform: str = "cuda",
               tail: int | None = None) -> tuple[int, int, int, int]:
    """``(BLOCK, CHUNKS, num_warps, TAIL)``: the row in one register tile up to ``max_block`` columns
    (:data:`MAX_BLOCK`; 32 fp32 values per thread, 4 to 16 warps), else chunks of it. On CUDA a held row
    whose rest past half its power of two fits a smaller power of two is that half and a tail tile
    (FLUX's MLP, 12288 = 8192 + 4096, not a 16384 tile with a quarter of its lanes masked; sm_90,
    ``gelu_tanh_and_mul``: 1528 -> 1120 instructions per thread with the packed rounding). Not measured
    yet: the per-thread load of the activation kernels' rule (32 bytes of input per thread). ``tail``
    pins a tail tile (tests)."""
    block = min(next_pow2(max(D, 1)), max_block or MAX_BLOCK)
    warps = max(4, min(16, block // 1024))
    chunks = triton.cdiv(D, block)
    if tail is None:
        tail = 0
        if chunks == 1 and block > D and platform == "cuda" and next_pow2(D - block // 2) < block // 2:
            tail = next_pow2(D - block // 2)
    if tail:
        if chunks != 1 or not (tail <= block // 2 < D <= block // 2 + tail):
            raise ValueError(f"a tail tile of {tail} columns does not complete a row of {D} in a {block} tile")
        block //= 2
    return block, chunks, warps, tail


def _constexprs(geom, fmt: str, platform: str, bits: bool, max_block: int | None = None,
                tail: int | None = None) -> dict:
    block, chunks, _, tail = row_config(geom.D, max_block, platform, tail)
    return {"ACT": ACTS[geom.act], "GLU": geom.packed, "HAS_BIAS": geom.has_bias, "NDIM": geom.rows.ndim,
            "MID": triton_math.TL_DTYPES[geom.dtype], "BLOCK": block, "CHUNKS": chunks,
            **math_flags(geom.dtype, platform), "FP8_MAX": vendor.FP8_MAX[fmt], "FNUZ": fmt == vendor.E4M3FNUZ,
            "BITS": bits, "PTX": platform == "cuda" and not bits, "TAIL": tail}


def prepare(geom, x, bias, out, max_block: int | None = None, tail: int | None = None):
    """The runner ``(x, bias, out) -> (codes, scale)`` of an FP8 result (``geom.fp8``); ``out`` is None.
    ``max_block``: a narrower register tile than the rule's (tests reach the chunked rows with it);
    ``tail``: a tail tile pinned (tests reach the CUDA rule's held rows with it)."""
    rows = geom.rows
    plat = tensor_platform(x.device)
    _, _, warps, _ = row_config(geom.D, max_block, plat, tail)
    bits = triton_math.FP8_BITS
    n1, n2 = rows.inner_sizes()
    options = launch_options(TileConfig(block=1, num_warps=warps), plat)
    launch = PreparedLaunch(_act_fp8_kernel, (rows.rows,), _constexprs(geom, geom.fp8, plat, bits, max_block, tail),
                            device=x.device, n_ptrs=4, options=options)
    scalars = (geom.D, geom.D if geom.packed else 0, n1, n2, *rows.padded(0))
    shape, fp8, device = geom.shape, geom.fp8_dtype, x.device

    def run(x, bias, out, *_):
        q = torch.empty(shape, dtype=fp8, device=device)
        qs = torch.empty((*shape[:-1], 1), dtype=torch.float32, device=device)
        launch(x, x if bias is None else bias, q.view(torch.uint8) if bits else q, qs, *scalars)
        return q, qs

    return run


# --- ahead-of-time compile variants ----------------------------------------------------------------


def aot_variants(act: str, packed: bool, platform: str = "cuda") -> list[AotVariant]:
    """The FP8 builds of one op for the compile lanes: bf16 at FLUX's and Wan's MLP widths (the first
    held in registers, the second chunked past :data:`MAX_BLOCK` for the packed GLU's 2 x 13824),
    with a bias, in each format the platform stores."""
    from ._geometry import Geometry, Rows

    name = f"{act}_and_mul" if packed else act
    out = []
    for fmt in (vendor.E4M3FN, vendor.E4M3FNUZ) if platform == "hip" else (vendor.E4M3FN,):
        for D in (12288, 13824 if packed else 20480):
            geom = Geometry(act, D, (4608, D), torch.bfloat16, Rows((4608,), ((2 * D if packed else D,), (D,))),
                            True, packed, fmt)
            const = _constexprs(geom, fmt, platform, False)
            _, _, warps, _ = row_config(D, platform=platform)
            tile = f"{const['BLOCK']}+{const['TAIL']}" if const["TAIL"] else f"{const['BLOCK']}"
            sig = {"X": "*bf16", "BIAS": "*bf16", "Q": f"*{triton_math.AOT_FP8[fmt]}", "QS": "*fp32"}
            sig.update({n: "i32" for n in ("D", "b_shift", "n1", "n2", "x_s0", "x_s1", "x_s2")})
            sig.update({n: "constexpr" for n in const})
            opts = {k: v for k, v in launch_options(TileConfig(block=1, num_warps=warps), platform).items()
                    if k not in ("num_warps", "num_stages")}
            out.append(AotVariant(
                name=f"{name}[bf16->{fmt},D={D},block={tile}x{const['CHUNKS']},w={warps}]",
                kernel=_act_fp8_kernel, signature=sig, constexprs=const, num_warps=warps, num_stages=1,
                options={"enable_fp_fusion": True, **opts}, min_cuda_arch=89,
                amd_targets=vendor.FP8_AMD_TARGETS[fmt],
                divisible_by_16=("X", "BIAS", "Q", "D", "x_s0"),
            ))
    return out
