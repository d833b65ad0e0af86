"""Triton kernel of the unary activations ``silu``, ``gelu_tanh``, ``gelu`` (CUDA and ROCm; CPU
under ``TRITON_INTERPRET=1``): ``y = act(x + bias)`` in fp32, rounded once (contract ``close``).

One program per (row, column tile): the row's offsets come from int64 row strides (any
leading strides, see ``geometry.coalesce``), columns are one contiguous tile, so every
access is a 16-byte vector and no element index is ever divided.
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
def _act_kernel(
    X, BIAS, Y,
    D, n_tiles, n1, n2,
    x_s0, x_s1, x_s2,
    y_s0, y_s1, y_s2,
    ACT: tl.constexpr, HAS_BIAS: tl.constexpr, NDIM: tl.constexpr, OUT: tl.constexpr, BLOCK: tl.constexpr,
    FAST: tl.constexpr, EVICT: tl.constexpr,
):
    r, tile = program_tile(n_tiles)
    x_row, y_row, _ = row_offsets(r, n1, n2, x_s0, x_s1, x_s2, y_s0, y_s1, y_s2, 0, 0, 0, NDIM)
    cols = tile * BLOCK + tl.arange(0, BLOCK)
    mask = cols < D
    s = load_stream(X + x_row + cols, mask, EVICT)
    if HAS_BIAS:
        s += triton_math.widen(tl.load(BIAS + cols, mask=mask, other=0.0, eviction_policy="evict_last"))
    tl.store(Y + y_row + cols, triton_math.narrow(activate(s, ACT, FAST), OUT), mask=mask)


def prepare(act: str, geom, x, bias, out, config: TileConfig | None = None, *, fast: bool | None = None,
            evict: bool = False):
    """A runner ``(x, bias, out) -> result`` for one call signature (``geom`` from ``describe_*``).
    ``config`` / ``fast`` / ``evict`` override the launch rule, the math and the input's L2
    policy (tuning only; see ``math_triton.load_stream``)."""
    rows = geom.rows
    plat = tensor_platform(x.device)
    cfg = config or tile_config(geom.D, max(x.element_size(), geom.dtype.itemsize), 1, plat)
    n1, n2 = rows.inner_sizes()
    grid, n_tiles, consts = grid_and_flags(rows.rows, geom.D, cfg, geom.dtype, fast, plat)
    scalars = (geom.D, n_tiles, n1, n2, *rows.padded(0), *rows.padded(1))
    launch = PreparedLaunch(
        _act_kernel,
        grid,
        {"ACT": ACTS[act], "HAS_BIAS": geom.has_bias, "NDIM": rows.ndim, "OUT": TL_DTYPES[geom.dtype],
         "BLOCK": cfg.block, "EVICT": evict, **consts},
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


def _entry(act: str):
    def fn(x: torch.Tensor, bias: torch.Tensor | None = None, out: torch.Tensor | None = None, *, geom,
           config: TileConfig | None = None, **tuning) -> torch.Tensor:
        """Launch once. ``geom`` comes from the op's ``describe_*`` (validated inputs)."""
        return prepare(act, geom, x, bias, out, config, **tuning)(x, bias, out)

    fn.__name__ = fn.__qualname__ = act
    fn.prepare = functools.partial(prepare, act)
    return fn


silu = _entry("silu")
gelu_tanh = _entry("gelu_tanh")
gelu = _entry("gelu")


def _aot(act: str):
    def aot_variants(platform: str = "cuda"):
        """bf16 / fp16 / fp32, contiguous rows, at FLUX's and Wan's FFN widths (the second with a bias)."""
        from sgl_diffusion_core import AotVariant

        names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
        out = []
        for dt, nm in names.items():
            for D, bias in ((12288, False), (13824, True)):
                cfg = tile_config(D, dt.itemsize, 1, platform)
                sig = {"X": f"*{nm}", "BIAS": f"*{nm}", "Y": f"*{nm}"}
                sig.update({n: "i32" for n in ("D", "n_tiles", "n1", "n2", "x_s0", "x_s1", "x_s2",
                                               "y_s0", "y_s1", "y_s2")})
                sig.update({n: "constexpr" for n in ("ACT", "HAS_BIAS", "NDIM", "OUT", "BLOCK", "FAST", "EVICT")})
                const = {"ACT": ACTS[act], "HAS_BIAS": bias, "NDIM": 1, "OUT": TL_DTYPES[dt], "BLOCK": cfg.block,
                         "EVICT": False, **math_flags(dt, None, platform)}
                opts = launch_options(cfg, platform)
                out.append(AotVariant(
                    name=f"{act}[{nm},D={D},bias={int(bias)},block={cfg.block},w={cfg.num_warps}]",
                    kernel=_act_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                    options={**{k: v for k, v in opts.items() if k not in ("num_warps", "num_stages")},
                             "enable_fp_fusion": True},
                ))
        return out

    return aot_variants


aot_silu = _aot("silu")
aot_gelu_tanh = _aot("gelu_tanh")
aot_gelu = _aot("gelu")
