"""Triton kernel of the GLU family (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``):
``y = act(a) * b`` in fp32, rounded once (contract ``close``).

One kernel serves both forms. Packed (``silu_and_mul(x)``): ``a = x[..., :D]``, ``b =
x[..., D:]``, optionally after adding a ``[2D]`` bias; the kernel reads b at ``B + b_shift``
with ``B = x`` and ``b_shift = D``. Split (``silu_mul(a, b)``): two tensors, ``b_shift = 0``.
One program per (row, column tile), int64 row offsets, no per-element division.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, TileConfig, tensor_platform, triton_math

from .math_triton import (
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

TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}


@triton.jit(do_not_specialize=["n1", "n2"])
def _glu_kernel(
    A, B, BIAS, Y,
    D, b_shift, n_tiles, n1, n2,
    a_s0, a_s1, a_s2,
    b_s0, b_s1, b_s2,
    y_s0, y_s1, y_s2,
    ACT: tl.constexpr, HAS_BIAS: tl.constexpr, NDIM: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr, EVICT: tl.constexpr,
):
    r, tile = program_tile(n_tiles)
    a_row, b_row, y_row = row_offsets(r, n1, n2, a_s0, a_s1, a_s2, b_s0, b_s1, b_s2, y_s0, y_s1, y_s2, NDIM)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    a = load_stream(A + a_row + cols, mask, EVICT)
    b = load_stream(B + b_row + b_shift + cols, mask, EVICT)
    if HAS_BIAS:
        a += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
        b += triton_math.widen(tl.load(BIAS + b_shift + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + y_row + cols, triton_math.narrow(activate(a, ACT, FAST) * b, OUT), mask=mask)


@triton.jit
def _glu_flat_kernel(
    A, B, BIAS, Y,
    n_out, b_shift, a_rs, b_rs, y_rs,
    D: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr, WIDE: tl.constexpr, RUN: tl.constexpr, EVICT: tl.constexpr,
):
    """The same math over the flat output index ``o`` of rows with one stride each (the rows
    coalesce to one dim: every contiguous input). No program straddles padding at a row's end,
    and ``o // D`` by the constant ``D`` is a multiply and a shift; ``WIDE`` (int64 offsets)
    where an offset can reach 2**31. On one H200 (bf16, 1024 x 4 warps, default L2 policy;
    activation_tune_glu_evict_h200.json) it measured 100.8 / 101.0% of copy at FLUX where the
    tile kernel measured 100.5 / 100.1% (silu / gelu_tanh), and level at Wan (103.1-103.2%):
    a small edge, kept because ``silu_and_mul`` only ties ``torch.compile``."""
    if WIDE:
        o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    else:
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = o < n_out
    row = o // D
    # runs of RUN (the largest power of two dividing D, up to 16) flat indices stay in one row,
    # start at a multiple of RUN and are contiguous there: what the vectorizer needs to know
    cols = tl.max_contiguous(tl.multiple_of(o % D, RUN), RUN)
    a = load_stream(A + row * a_rs + cols, mask, EVICT)
    b = load_stream(B + row * b_rs + b_shift + cols, mask, EVICT)
    if HAS_BIAS:
        a += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
        b += triton_math.widen(tl.load(BIAS + b_shift + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + row * y_rs + cols, triton_math.narrow(activate(a, ACT, FAST) * b, OUT), mask=mask)


def flat_config(elem_bytes: int, platform: str) -> TileConfig:
    """The flat kernel's launch: the activation rule's tile at any row width (2 KB of each input
    per program), since a program's elements may span rows."""
    return tile_config(1 << 30, elem_bytes, 2, platform)


def _run(D: int, block: int) -> int:
    """Length of the runs of flat indices that share a row and start at a multiple of it: the
    largest power of two dividing ``D`` (and ``block``), at most 16."""
    return min(D & -D, block, 16)


def _flat_wide(rows: int, D: int, strides: tuple[int, ...], b_shift: int, block: int) -> bool:
    """Whether an element offset of the flat kernel can reach 2**31 (then it indexes in int64)."""
    return max(rows * D + block, (rows - 1) * max(strides) + b_shift + D + block) >= 2**31


def prepare(act: str, packed: bool, geom, first, second, out, config: TileConfig | None = None, *,
            fast: bool | None = None, kernel: str | None = None, evict: bool = False):
    """A runner for one call signature: packed ``(x, bias, out)``, split ``(a, b, out)``.
    ``config`` / ``fast`` / ``kernel`` (``"flat"`` or ``"tiles"``) / ``evict`` (``evict_first`` on
    the streamed inputs) override the launch rule, the math and the kernel choice (tuning only).

    Rows that coalesce to one dim (any contiguous input) use the flat kernel; rows over 2-3
    strided dims the (row, column tile) one."""
    rows = geom.rows
    plat = tensor_platform(first.device)
    widest = max(first.element_size(), geom.dtype.itemsize if packed else second.element_size())
    b_shift = geom.D if packed else 0
    a_st = rows.padded(0)
    b_st = a_st if packed else rows.padded(1)
    y_st = rows.padded(len(rows.strides) - 1)  # the output's strides come last
    flat = (kernel or ("flat" if rows.ndim == 1 else "tiles")) == "flat"
    if flat and rows.ndim != 1:
        raise ValueError("the flat GLU kernel needs rows that coalesce to one dim")
    if flat:
        cfg = config or flat_config(widest, plat)
        n_out = rows.rows * geom.D
        wide = _flat_wide(rows.rows, geom.D, (a_st[0], b_st[0], y_st[0]), b_shift, cfg.block)
        kern, grid = _glu_flat_kernel, (triton.cdiv(n_out, cfg.block),)
        consts = {"D": geom.D, "WIDE": wide, "RUN": _run(geom.D, cfg.block), **math_flags(geom.dtype, fast, plat)}
        scalars = (n_out, b_shift, a_st[0], b_st[0], y_st[0])
    else:
        cfg = config or tile_config(geom.D, widest, 2, plat)
        n1, n2 = rows.inner_sizes()
        grid, n_tiles, consts = grid_and_flags(rows.rows, geom.D, cfg, geom.dtype, fast, plat)
        kern, consts = _glu_kernel, {"NDIM": rows.ndim, **consts}
        scalars = (geom.D, b_shift, n_tiles, n1, n2, *a_st, *b_st, *y_st)
    launch = PreparedLaunch(
        kern,
        grid,
        {"ACT": ACTS[act], "HAS_BIAS": geom.has_bias, "OUT": TL_DTYPES[geom.dtype], "BLOCK": cfg.block,
         "EVICT": evict, **consts},
        device=first.device,
        n_ptrs=4,
        options=launch_options(cfg, plat),
    )
    shape, dtype, device = geom.shape, geom.dtype, first.device

    if packed:
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


def _entry(act: str, packed: bool):
    name = f"{act}_and_mul" if packed else f"{act}_mul"

    def fn(first: torch.Tensor, second: torch.Tensor | None = None, out: torch.Tensor | None = None, *, geom,
           config: TileConfig | None = None, **tuning) -> torch.Tensor:
        """Launch once: packed ``(x, bias, out)`` or split ``(a, b, out)``; ``geom`` from ``describe_*``."""
        return prepare(act, packed, geom, first, second, out, config, **tuning)(first, second, out)

    fn.__name__ = fn.__qualname__ = name
    fn.prepare = functools.partial(prepare, act, packed)
    return fn


silu_and_mul = _entry("silu", True)
gelu_tanh_and_mul = _entry("gelu_tanh", True)
gelu_and_mul = _entry("gelu", True)
silu_mul = _entry("silu", False)
gelu_tanh_mul = _entry("gelu_tanh", False)
gelu_mul = _entry("gelu", False)


def _aot(act: str, packed: bool):
    name = f"{act}_and_mul" if packed else f"{act}_mul"
    # packed: every dtype at FLUX's and Wan's FFN widths; split runs the same kernel (b_shift = 0)
    cases = ((12288, False), (13824, True)) if packed else ((13824, False),)
    dtypes = (torch.bfloat16, torch.float16, torch.float32) if packed else (torch.bfloat16, torch.float32)

    def aot_variants(platform: str = "cuda"):
        from sgl_diffusion_core import AotVariant

        names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
        out = []
        for dt in dtypes:
            nm = names[dt]
            for D, bias in cases:
                cfg = tile_config(D, dt.itemsize, 2, platform)
                sig = {"A": f"*{nm}", "B": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
                sig.update({n: "i32" for n in ("D", "b_shift", "n_tiles", "n1", "n2", "a_s0", "a_s1", "a_s2",
                                               "b_s0", "b_s1", "b_s2", "y_s0", "y_s1", "y_s2")})
                sig.update({n: "constexpr" for n in ("ACT", "HAS_BIAS", "NDIM", "OUT", "BLOCK", "FAST", "EVICT")})
                const = {"ACT": ACTS[act], "HAS_BIAS": bias, "NDIM": 1, "OUT": TL_DTYPES[dt], "BLOCK": cfg.block,
                         "EVICT": False, **math_flags(dt, None, platform)}
                opts = launch_options(cfg, platform)
                extra = {**{k: v for k, v in opts.items() if k not in ("num_warps", "num_stages")},
                         "enable_fp_fusion": True}
                out.append(AotVariant(
                    name=f"{name}[{nm},D={D},bias={int(bias)},block={cfg.block},w={cfg.num_warps}]",
                    kernel=_glu_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps, options=extra,
                ))
                # the flat kernel (contiguous rows): int32 offsets, and int64 at Wan's width
                fcfg = flat_config(dt.itemsize, platform)
                fsig = {"A": f"*{nm}", "B": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
                fsig.update({n: "i32" for n in ("n_out", "b_shift", "a_rs", "b_rs", "y_rs")})
                fsig.update({n: "constexpr" for n in ("D", "ACT", "HAS_BIAS", "OUT", "BLOCK", "FAST", "WIDE", "RUN",
                                                       "EVICT")})
                fconst = {"D": D, "ACT": ACTS[act], "HAS_BIAS": bias, "OUT": TL_DTYPES[dt], "BLOCK": fcfg.block,
                          "WIDE": bias, "RUN": _run(D, fcfg.block), "EVICT": False,
                          **math_flags(dt, None, platform)}
                out.append(AotVariant(
                    name=f"{name}[flat,{nm},D={D},bias={int(bias)},wide={int(bias)},block={fcfg.block},"
                         f"w={fcfg.num_warps}]",
                    kernel=_glu_flat_kernel, signature=fsig, constexprs=fconst, num_warps=fcfg.num_warps,
                    options=extra,
                ))
        return out

    aot_variants.__doc__ = f"AOT variants of {name}: {', '.join(str(d).removeprefix('torch.') for d in dtypes)}."
    return aot_variants


aot_silu_and_mul = _aot("silu", True)
aot_gelu_tanh_and_mul = _aot("gelu_tanh", True)
aot_gelu_and_mul = _aot("gelu", True)
aot_silu_mul = _aot("silu", False)
aot_gelu_tanh_mul = _aot("gelu_tanh", False)
aot_gelu_mul = _aot("gelu", False)
