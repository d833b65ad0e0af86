"""Triton kernel of the pointwise activations ``silu``, ``gelu_tanh``, ``gelu`` (CUDA and ROCm; CPU
under ``TRITON_INTERPRET=1``): ``y = act(x + bias)`` in fp32, rounded once (contract ``close``).

One program per (row, column tile): the row's offsets come from int64 row strides (any
leading strides, see ``_geometry.coalesce``), columns are one contiguous tile, so every
access is a 16-byte vector and no element index is ever divided. Shared by the three ops of
``activation.py``: the activation comes from ``geom.act``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform, triton_math

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
def _act_kernel(
    X, BIAS, Y,
    D, n_tiles, n1, n2,
    x_s0, x_s1, x_s2,
    y_s0, y_s1, y_s2,
    ACT: tl.constexpr, HAS_BIAS: tl.constexpr, NDIM: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr,
):
    r, tile = program_tile(n_tiles)
    x_row, y_row, _ = row_offsets(r, n1, n2, x_s0, x_s1, x_s2, y_s0, y_s1, y_s2, 0, 0, 0, NDIM)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    s = load_stream(X + x_row + cols, mask)
    if HAS_BIAS:
        s += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + y_row + cols, triton_math.narrow(activate(s, ACT, FAST), OUT), mask=mask)


def prepare(geom, x, bias, out, fp8_block: int | None = None, fp8_tail: int | None = None):
    """A runner ``(x, bias, out) -> result`` for one call signature (``geom`` from the op's
    ``describe_<op>``); the tile is ``_math_triton.tile_config``'s, the math ``math_flags``'. An FP8
    ``out_dtype`` (``gelu_tanh``) takes ``_act_fp8_triton``'s row kernel (``fp8_block``: its register
    tile narrowed, ``fp8_tail`` a tail tile pinned, for tests)."""
    if geom.fp8 is not None:
        return _act_fp8_triton.prepare(geom, x, bias, out, fp8_block, fp8_tail)
    rows = geom.rows
    plat = tensor_platform(x.device)
    cfg = tile_config(geom.D, max(x.element_size(), geom.dtype.itemsize), 1, plat)
    n1, n2 = rows.inner_sizes()
    grid, n_tiles, consts = grid_and_flags(rows.rows, geom.D, cfg, geom.dtype, plat)
    scalars = (geom.D, n_tiles, n1, n2, *rows.padded(0), *rows.padded(1))
    launch = PreparedLaunch(
        _act_kernel,
        grid,
        {"ACT": ACTS[geom.act], "HAS_BIAS": geom.has_bias, "NDIM": rows.ndim, "OUT": TL_DTYPES[geom.dtype],
         "BLOCK": cfg.block, **consts},
        device=x.device,
        n_ptrs=3,
        options=launch_options(cfg, plat),
    )
    shape, dtype, device = geom.shape, geom.dtype, x.device

    def run(x, bias, out):
        y = torch.empty(shape, dtype=dtype, device=device) if out is None else out
        launch(x, x if bias is None else bias, y, *scalars)
        return y

    return run


def aot_variants(act: str, platform: str = "cuda") -> list:
    """The kernel variants of ``act`` the compile lanes build: bf16 / fp16 / fp32, contiguous rows,
    at FLUX's and Wan's FFN widths (the second with a bias)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt, nm in names.items():
        for D, bias in ((12288, False), (13824, True)):
            cfg = tile_config(D, dt.itemsize, 1, platform)
            sig = {"X": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
            sig.update({n: "i32" for n in ("D", "n_tiles", "n1", "n2", "x_s0", "x_s1", "x_s2",
                                           "y_s0", "y_s1", "y_s2")})
            sig.update({n: "constexpr" for n in ("ACT", "HAS_BIAS", "NDIM", "OUT", "BLOCK", "FAST")})
            const = {"ACT": ACTS[act], "HAS_BIAS": bias, "NDIM": 1, "OUT": TL_DTYPES[dt], "BLOCK": cfg.block,
                     **math_flags(dt, platform)}
            opts = launch_options(cfg, platform)
            out.append(AotVariant(
                name=f"{act}[{nm},D={D},bias={int(bias)},block={cfg.block},w={cfg.num_warps}]",
                kernel=_act_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                options={**{k: v for k, v in opts.items() if k not in ("num_warps", "num_stages")},
                         "enable_fp_fusion": True},
                divisible_by_16=("X", "BIAS", "Y", "D", "x_s0", "y_s0"),  # contiguous rows of these widths
            ))
    return out


def aot_silu(platform: str = "cuda") -> list:
    """AOT variants of ``silu`` (:func:`aot_variants`)."""
    return aot_variants("silu", platform)


def aot_gelu_tanh(platform: str = "cuda") -> list:
    """AOT variants of ``gelu_tanh`` (:func:`aot_variants`; its FP8 result's too)."""
    return aot_variants("gelu_tanh", platform) + _act_fp8_triton.aot_variants("gelu_tanh", False, platform)


def aot_gelu(platform: str = "cuda") -> list:
    """AOT variants of ``gelu`` (:func:`aot_variants`)."""
    return aot_variants("gelu", platform)
