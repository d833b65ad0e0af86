"""Triton kernels of the GLU forms (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``):
``y = act(a) * b`` in fp32, rounded once (contract ``close``).

Shared by the six ops of ``glu.py`` (the activation comes from ``geom.act``, the form from
``geom.packed``). Packed (``silu_and_mul(x)``): ``a = x[..., :D]``, ``b = x[..., D:]``,
optionally after adding a ``[2D]`` bias; the kernels read b at ``B + b_shift`` with ``B = x``
and ``b_shift = D``. Split (``silu_mul(a, b)``): two tensors, ``b_shift = 0``. Rows that
coalesce to one dim take :func:`_glu_flat_kernel` (one flat output index), others
:func:`_glu_kernel` (one program per (row, column tile)); int64 row offsets, no per-element
division.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

from . import _act_fp8_triton
from ._math_triton import (
    ACTS,
    activate,
    grid_and_flags,
    launch_options,
    load_stream,
    math_flags,
    program_tile,
    row_offsets,
    tile_config,
)

TL_DTYPES = triton_math.TL_DTYPES


@triton.jit(do_not_specialize=["n1", "n2"])
def _glu_kernel(
    A, B, BIAS, Y,
    D, b_shift, n_tiles, n1, n2,
    a_s0, a_s1, a_s2,
    b_s0, b_s1, b_s2,
    y_s0, y_s1, y_s2,
    ACT: tl.constexpr, HAS_BIAS: tl.constexpr, NDIM: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr,
):
    r, tile = program_tile(n_tiles)
    a_row, b_row, y_row = row_offsets(r, n1, n2, a_s0, a_s1, a_s2, b_s0, b_s1, b_s2, y_s0, y_s1, y_s2, NDIM)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    a = load_stream(A + a_row + cols, mask)
    b = load_stream(B + b_row + b_shift + cols, mask)
    if HAS_BIAS:
        a += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
        b += triton_math.widen(tl.load(BIAS + b_shift + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + y_row + cols, triton_math.narrow(activate(a, ACT, FAST) * b, OUT), mask=mask)


@triton.jit
def _glu_flat_kernel(
    A, B, BIAS, Y,
    n_out, b_shift, a_rs, b_rs, y_rs,
    D: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr, WIDE: tl.constexpr, RUN: tl.constexpr,
):
    """The same math over the flat output index ``o`` of rows with one stride each (the rows
    coalesce to one dim: every contiguous input). No program straddles padding at a row's end,
    and ``o // D`` by the constant ``D`` is a multiply and a shift; ``WIDE`` (int64 offsets)
    where an offset can reach 2**31."""
    if WIDE:
        o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n_out
    row = o // D
    # runs of RUN (the largest power of two dividing D, up to 16) flat indices stay in one row,
    # start at a multiple of RUN and are contiguous there: what the vectorizer needs to know
    cols = tl.max_contiguous(tl.multiple_of(o % D, RUN), RUN)
    a = load_stream(A + row * a_rs + cols, mask)
    b = load_stream(B + row * b_rs + b_shift + cols, mask)
    if HAS_BIAS:
        a += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
        b += triton_math.widen(tl.load(BIAS + b_shift + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + row * y_rs + cols, triton_math.narrow(activate(a, ACT, FAST) * b, OUT), mask=mask)


def flat_config(elem_bytes: int, platform: str) -> TileConfig:
    """The flat kernel's launch rule: :func:`_math_triton.tile_config`'s tile at any row width
    (2 KB of each input per program, 32 bytes of input per thread), since a program's elements
    may span rows; measured with it at 1024 x 4 warps (bf16) on one H200
    (docs/benchmarks/activation_tune_glu_evict_h200.json)."""
    return tile_config(1 << 30, elem_bytes, 2, platform)


def _run(D: int, block: int) -> int:
    """Length of the runs of flat indices that share a row and start at a multiple of it: the
    largest power of two dividing ``D`` (and ``block``), at most 16."""
    return min(D & -D, block, 16)


def _flat_wide(rows: int, D: int, strides: tuple[int, ...], b_shift: int, block: int) -> bool:
    """Whether an element offset of the flat kernel can reach 2**31 (then it indexes in int64)."""
    return max(rows * D + block, (rows - 1) * max(strides) + b_shift + D + block) >= 2**31


def prepare(geom, first, second, out, fp8_block: int | None = None, fp8_tail: int | None = None):
    """A runner for one call signature: packed ``(x, bias, out)``, split ``(a, b, out)``.

    The kernel rule: rows that coalesce to one dim (any contiguous input) take the flat kernel,
    rows over 2-3 strided dims the (row, column tile) one. On one H200 (bf16, 1024 x 4 warps;
    docs/benchmarks/activation_tune_glu_evict_h200.json) the flat kernel measured 100.8 / 101.0%
    of copy at FLUX's FFN shape where the tile kernel measured 100.5 / 100.1% (silu /
    gelu_tanh), and level at Wan's (103.1-103.2%): a small edge, kept because ``silu_and_mul``
    only ties ``torch.compile``. An FP8 ``out_dtype`` takes ``_act_fp8_triton``'s row kernel
    (``fp8_block``: its register tile narrowed, ``fp8_tail`` a tail tile pinned, for tests)."""
    if geom.fp8 is not None:
        return _act_fp8_triton.prepare(geom, first, second, out, fp8_block, fp8_tail)
    rows = geom.rows
    plat = tensor_platform(first.device)
    widest = max(first.element_size(), geom.dtype.itemsize if geom.packed else second.element_size())
    b_shift = geom.D if geom.packed else 0
    a_st = rows.padded(0)
    b_st = a_st if geom.packed else rows.padded(1)
    y_st = rows.padded(len(rows.strides) - 1)  # the output's strides come last
    if rows.ndim == 1:
        cfg = flat_config(widest, plat)
        n_out = rows.rows * geom.D
        wide = _flat_wide(rows.rows, geom.D, (a_st[0], b_st[0], y_st[0]), b_shift, cfg.block)
        kern, grid = _glu_flat_kernel, (triton.cdiv(n_out, cfg.block),)
        consts = {"D": geom.D, "WIDE": wide, "RUN": _run(geom.D, cfg.block), **math_flags(geom.dtype, plat)}
        scalars = (n_out, b_shift, a_st[0], b_st[0], y_st[0])
    else:
        cfg = tile_config(geom.D, widest, 2, plat)
        n1, n2 = rows.inner_sizes()
        grid, n_tiles, consts = grid_and_flags(rows.rows, geom.D, cfg, geom.dtype, plat)
        kern, consts = _glu_kernel, {"NDIM": rows.ndim, **consts}
        scalars = (geom.D, b_shift, n_tiles, n1, n2, *a_st, *b_st, *y_st)
    launch = PreparedLaunch(
        kern,
        grid,
        {"ACT": ACTS[geom.act], "HAS_BIAS": geom.has_bias, "OUT": TL_DTYPES[geom.dtype], "BLOCK": cfg.block,
         **consts},
        device=first.device,
        n_ptrs=4,
        options=launch_options(cfg, plat),
    )
    shape, dtype, device = geom.shape, geom.dtype, first.device

    if geom.packed:
        def run(x, bias, out):
            y = torch.empty(shape, dtype=dtype, device=device) if out is None else out
            launch(x, x, x if bias is None else bias, y, *scalars)
            return y
    else:
        def run(a, b, out):
            y = torch.empty(shape, dtype=dtype, device=device) if out is None else out
            launch(a, b, a, y, *scalars)
            return y

    return run


_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


def _tile_variant(name: str, act: str, dt: torch.dtype, D: int, bias: bool, platform: str):
    from sgl_diffusion_core import AotVariant

    nm = _NAMES[dt]
    cfg = tile_config(D, dt.itemsize, 2, platform)
    sig = {"A": f"*{nm}", "B": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
    sig.update({n: "i32" for n in ("D", "b_shift", "n_tiles", "n1", "n2", "a_s0", "a_s1", "a_s2",
                                   "b_s0", "b_s1", "b_s2", "y_s0", "y_s1", "y_s2")})
    sig.update({n: "constexpr" for n in ("ACT", "HAS_BIAS", "NDIM", "OUT", "BLOCK", "FAST")})
    const = {"ACT": ACTS[act], "HAS_BIAS": bias, "NDIM": 1, "OUT": TL_DTYPES[dt], "BLOCK": cfg.block,
             **math_flags(dt, platform)}
    return AotVariant(
        name=f"{name}[{nm},D={D},bias={int(bias)},block={cfg.block},w={cfg.num_warps}]",
        kernel=_glu_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
        options=_aot_options(cfg, platform),
        # contiguous [.., 2D] input rows of these widths: both halves and every row start 16-byte aligned
        divisible_by_16=("A", "B", "BIAS", "Y", "D", "b_shift", "a_s0", "b_s0", "y_s0"),
    )


def _flat_variant(name: str, act: str, dt: torch.dtype, D: int, bias: bool, platform: str):
    """The flat kernel at contiguous rows: int32 offsets, and int64 (``WIDE``) at Wan's width."""
    from sgl_diffusion_core import AotVariant

    nm = _NAMES[dt]
    cfg = flat_config(dt.itemsize, platform)
    sig = {"A": f"*{nm}", "B": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
    sig.update({n: "i32" for n in ("n_out", "b_shift", "a_rs", "b_rs", "y_rs")})
    sig.update({n: "constexpr" for n in ("D", "ACT", "HAS_BIAS", "OUT", "BLOCK", "FAST", "WIDE", "RUN")})
    const = {"D": D, "ACT": ACTS[act], "HAS_BIAS": bias, "OUT": TL_DTYPES[dt], "BLOCK": cfg.block,
             "WIDE": bias, "RUN": _run(D, cfg.block), **math_flags(dt, platform)}
    return AotVariant(
        name=f"{name}[flat,{nm},D={D},bias={int(bias)},wide={int(bias)},block={cfg.block},w={cfg.num_warps}]",
        kernel=_glu_flat_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
        options=_aot_options(cfg, platform),
        divisible_by_16=("A", "B", "BIAS", "Y", "n_out", "b_shift", "a_rs", "b_rs", "y_rs"),
    )


def _aot_options(cfg: TileConfig, platform: str) -> dict:
    opts = launch_options(cfg, platform)
    return {**{k: v for k, v in opts.items() if k not in ("num_warps", "num_stages")}, "enable_fp_fusion": True}


def aot_variants(act: str, packed: bool, platform: str = "cuda") -> list:
    """The kernel variants of one GLU op the compile lanes build, tile and flat kernel each:
    packed, bf16 / fp16 / fp32 at FLUX's and Wan's FFN widths (the second with a bias); split
    (the same kernels, ``b_shift = 0``), bf16 / fp32 at Wan's width."""
    name = f"{act}_and_mul" if packed else f"{act}_mul"
    cases = ((12288, False), (13824, True)) if packed else ((13824, False),)
    dtypes = (torch.bfloat16, torch.float16, torch.float32) if packed else (torch.bfloat16, torch.float32)
    out = []
    for dt in dtypes:
        for D, bias in cases:
            out.append(_tile_variant(name, act, dt, D, bias, platform))
            out.append(_flat_variant(name, act, dt, D, bias, platform))
    return out


def aot_silu_and_mul(platform: str = "cuda") -> list:
    """AOT variants of ``silu_and_mul`` (:func:`aot_variants`; its FP8 result's too)."""
    return aot_variants("silu", True, platform) + _act_fp8_triton.aot_variants("silu", True, platform)


def aot_gelu_tanh_and_mul(platform: str = "cuda") -> list:
    """AOT variants of ``gelu_tanh_and_mul`` (:func:`aot_variants`; its FP8 result's too)."""
    return aot_variants("gelu_tanh", True, platform) + _act_fp8_triton.aot_variants("gelu_tanh", True, platform)


def aot_gelu_and_mul(platform: str = "cuda") -> list:
    """AOT variants of ``gelu_and_mul`` (:func:`aot_variants`)."""
    return aot_variants("gelu", True, platform)


def aot_silu_mul(platform: str = "cuda") -> list:
    """AOT variants of ``silu_mul`` (:func:`aot_variants`)."""
    return aot_variants("silu", False, platform)


def aot_gelu_tanh_mul(platform: str = "cuda") -> list:
    """AOT variants of ``gelu_tanh_mul`` (:func:`aot_variants`)."""
    return aot_variants("gelu_tanh", False, platform)


def aot_gelu_mul(platform: str = "cuda") -> list:
    """AOT variants of ``gelu_mul`` (:func:`aot_variants`)."""
    return aot_variants("gelu", False, platform)
