"""Triton device functions and launch rules shared by the activation kernels (``_activation_triton``,
``_glu_triton``; imports Triton: backends only).

Formulas (fp32 throughout, chosen to stay accurate where eager's forms cancel):

* ``silu(s) = s * sigmoid(s)``
* ``gelu_tanh(s) = 0.5 * s * (1 + tanh(u)) = s * sigmoid(2 * u)``, ``u = sqrt(2/pi) * (s + 0.044715 * s**3)``
* ``gelu(s) = 0.5 * s * (1 + erf(s / sqrt(2))) = 0.5 * s * erfc(-s / sqrt(2))``

with ``sigmoid(v) = where(v >= 0, 1, e) / (1 + e)``, ``e = exp(-|v|)``, which neither
overflows nor cancels. Eager's ``1 + tanh(u)`` and ``1 + erf(z)`` lose all their digits for
``s`` below about -5 (the result is still small in absolute terms, so the two agree within
the declared tolerance; the fp64 checks in the tests hold this kernel to a few fp32 ulps).

Math library (fp32 outputs): on GPUs, ``exp`` and ``erfc`` come from ``libdevice`` (CUDA's
libdevice, ROCm's ocml; with CUDA's libdevice subnormal flushing off). 16-bit outputs (``FAST``,
see :func:`math_flags`) use the approximate ``exp2`` and, for gelu, :func:`_gelu_fast`. The
Triton interpreter (CPU) cannot run extern math, so there ``exp`` is ``tl.exp`` (numpy) and
``erfc`` is :func:`_erfc_fit` below, a polynomial fit good to ~2 fp32 ulps; the choice is made once, when this module is
imported. Loads widen and the store rounds through ``sgl_diffusion_core.triton_math``
(exact conversions, ties to even, in both places).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import TileConfig, next_pow2, triton_interpret, triton_math, warp_size, warps_for

INTERPRET = triton_interpret()

SILU, GELU_TANH, GELU = 0, 1, 2
ACTS = {"silu": SILU, "gelu_tanh": GELU_TANH, "gelu": GELU}


def tile_config(D: int, elem_bytes: int, n_inputs: int, platform: str) -> TileConfig:
    """The activation kernels' launch rule: 2 KB of each input per program and 32 bytes of input
    per thread, so a GLU program (two inputs) runs twice the warps of a unary one.

    Measured on one H200, bf16, at FLUX's and Wan's FFN shapes with the flat grid and the fast
    ``exp`` (docs/benchmarks/activation_tune_h200.json): ``silu_and_mul`` best at 1024 x 4 warps
    (98.4-98.5% of copy; 2048 x 2, the elementwise rule of core's ``TileConfig``, 94.5-96.3%),
    ``gelu_tanh`` best at 1024 x 2 warps (95.5-96.2%; 2048 x 2: 91.5-93.2%). ROCm keeps the
    bytes per lane with 64-wide wavefronts (compiled, not measured).
    """
    block = min(next_pow2(max(D, 1)), max(2048 // elem_bytes, 16))
    warps = warps_for(n_inputs * block * elem_bytes, 32, warp_size(platform))
    return TileConfig(block=block, num_warps=warps)


def launch_options(cfg: TileConfig, platform: str) -> dict:
    """Launch options of a tile configuration (:func:`tile_config`), libdevice's subnormals kept on CUDA."""
    opts = cfg.launch_options(platform)
    if platform == "cuda":
        opts["enable_reflect_ftz"] = False  # libdevice keeps subnormals (as nvcc's default does)
    return opts


# erfc(t) = exp(-t*t) * P((t - 1) / (t + 1)) / t for 0.5 <= t <= 11 (least-squares fit of
# t * exp(t*t) * erfc(t) in w on 5000 points: max relative error 2.5e-9 in fp64, ~1e-7 in fp32)
@triton.jit
def _erfc_poly(w):
    """P(w) of the fit above."""
    p = -0.0009805342909334474
    p = p * w + 0.0036675271692622633
    p = p * w - 0.0021582097212611406
    p = p * w - 0.0014759112027659994
    p = p * w - 0.00242341749889446
    p = p * w - 0.002568834066456216
    p = p * w + 0.004108539902978948
    p = p * w + 0.017484867092669203
    p = p * w + 0.019654417084871274
    p = p * w - 0.040824282693553586
    p = p * w - 0.16661870395855571
    p = p * w + 0.3087431277067542
    p = p * w + 0.42758357618707976
    return p


@triton.jit
def _erfc_fit(t):
    tc = tl.minimum(tl.maximum(t, 0.5), 11.0)
    tail = tl.exp(-tc * tc) * _erfc_poly((tc - 1.0) / (tc + 1.0)) / tc
    r = tl.where(t < 0.5, 1.0 - tl.math.erf(t), tail)
    return tl.where(t != t, t, r)


# gelu(s) = s * Phi(s) for 16-bit outputs (FAST), Phi(s) = 0.5 * erfc(-s / sqrt(2)) with
# 0.5 * erfc(a) = H(t) * exp(-a*a), t = 1 / (1 + a / 2), a = |s| / sqrt(2) >= 0: H a degree-7
# polynomial in t with no constant term (a weighted least-squares fit of 0.5 * t * exp(a*a) *
# erfc(a) on 4000 Chebyshev nodes of t for a in [0, 10.2]: max relative error 1.7e-6 in fp64;
# 1.2e-5 in an fp32 simulation of this kernel over s in [-13, 8] where the result is normal).
_GELU_K = tl.constexpr(0.35355339059327373)  # 1 / (2 * sqrt(2)): t = 1 / (1 + K * |s|)
_GELU_E = tl.constexpr(0.8493218002880191)  # sqrt(log2(e) / 2): exp(-s*s/2) = exp2(-(E * s)**2)
_TWO_M64 = tl.constexpr(2.0**-64)


@triton.jit
def _rcp_ex2(d, x, FAST: tl.constexpr):
    """``(1 / d, exp2(x))``: PTX's approximate, flush-to-zero forms (one instruction each) when
    ``FAST == 2`` (CUDA), else Triton's division and ``exp2`` (``triton_math.fast_rcp`` /
    ``fast_exp2``)."""
    return triton_math.fast_rcp(d, FAST), triton_math.fast_exp2(x, FAST)


@triton.jit
def _gelu_fast(s, FAST: tl.constexpr):
    """``gelu(s)`` (erf) for 16-bit outputs: 22 sm_90 instructions per element with ``FAST == 2``
    (measured on one H200, bf16: ``gelu`` 97.4 / 98.0% of copy at FLUX / Wan, ``gelu_and_mul``
    99.7 / 101.8%; docs/benchmarks/gelu*_bench_h200.json).

    The math library's ``erfcf`` (and a fit with two divisions, a Taylor branch and
    range clamps: 59 sm_90 instructions per element) held ``gelu`` at 48-52% of copy bandwidth
    on the H200, compute-bound. This form needs one reciprocal and one ``exp2``: ``h = H(t) *
    exp2(-(E*s)**2)`` is ``Phi(-|s|)``, accurate relative to itself in the negative tail (no
    ``1 + erf`` cancellation), and ``Phi(s) = 1 - h`` for positive ``s``. The ``exp2`` runs on
    ``64 - (E*s)**2`` with ``H`` scaled by ``2**-64``, so a flush-to-zero ``exp2`` flushes
    nothing the result keeps (``h`` underflows fp32 from ``|s|`` of about 14; ``exp2``'s
    argument reaches -126 at ``|s|`` of 16). The relative error (~1e-5 in fp32, 2**-22 more
    from the approximate ``exp2``) stays far below one 16-bit rounding (2**-8 / 2**-11). NaN
    propagates; ``gelu(+inf) = inf``, ``gelu(-inf) = nan`` (``-inf * 0``, as the oracle and
    eager have it)."""
    u = _GELU_E * s
    t, e = _rcp_ex2(1.0 + _GELU_K * tl.abs(s), 64.0 - u * u, FAST)
    h = 0.04374711487282795 * _TWO_M64
    h = h * t - 0.1771732080395101 * _TWO_M64
    h = h * t + 0.1930164737329331 * _TWO_M64
    h = h * t + 0.02001849463609255 * _TWO_M64
    h = h * t + 0.140370642619853 * _TWO_M64
    h = h * t + 0.1388585407242564 * _TWO_M64
    h = h * t + 0.141161074611603 * _TWO_M64
    h = h * t * e
    return s * tl.where(s > 0, 1.0 - h, h)


if INTERPRET:

    @triton.jit
    def _exp(x, FAST: tl.constexpr):
        return tl.exp(x)

    @triton.jit
    def _erfc(x):
        return _erfc_fit(x)

else:
    from triton.language.extra import libdevice

    @triton.jit
    def _exp(x, FAST: tl.constexpr):
        if FAST:
            return tl.exp(x)  # ex2.approx after one multiply: ~2**-21 relative, for 16-bit outputs
        else:
            return libdevice.exp(x)

    @triton.jit
    def _erfc(x):
        return libdevice.erfc(x)


@triton.jit
def _sigmoid(v, FAST: tl.constexpr):
    e = _exp(-tl.abs(v), FAST)
    return tl.where(v >= 0, 1.0, e) / (1.0 + e)


@triton.jit
def load_stream(ptr, mask):
    """A streamed input (read once), widened to fp32, with the default L2 policy.

    On one H200 (bf16, docs/benchmarks/activation_tune_glu_evict_h200.json) ``evict_first``
    held the GLU at 97.4-98.1% of copy bandwidth, the default policy reached 100.8-103.3%
    (``torch.compile``: 99.4-101.8%). Both halves of a packed row are read by the same program,
    so nothing is lost by keeping them; the hint seems to cost the L2's own streaming
    (measured, not explained)."""
    return triton_math.widen(tl.load(ptr, mask=mask, other=0.0))


@triton.jit
def activate(s, ACT: tl.constexpr, FAST: tl.constexpr):
    """``act(s)`` for fp32 ``s``: silu, gelu_tanh or gelu (erf), by ``ACT``.

    ``FAST`` (16-bit outputs): ``exp`` by the hardware's approximate exp2, whose error (a few
    2**-22 relative) is far below the output's one rounding (2**-8 or 2**-11); fp32 outputs keep
    the math library's correctly-rounded-ish ``exp``; gelu (erf) takes :func:`_gelu_fast` instead
    of the math library's ``erfc``."""
    if ACT == 0:
        return s * _sigmoid(s, FAST)
    elif ACT == 1:
        # 2 * sqrt(2 / pi) * (s + 0.044715 * s^3); eager's 0.5 * (1 + tanh(u)) is sigmoid(2u)
        return s * _sigmoid(1.5957691216057308 * (s + 0.044715 * (s * s * s)), FAST)
    elif FAST:
        return _gelu_fast(s, FAST)
    else:
        return 0.5 * s * _erfc(-0.7071067811865476 * s)


# One program per (row, column tile) on a 1-D grid with a row's tiles adjacent, so programs
# running side by side stream neighbouring bytes (core's TileConfig.grid and
# triton_math.program_tile). In the H200 sweep (activation_tune_h200.json) the best 1-D launch
# beat the best 2-D (rows, tiles) one by 2.3-5.8 points of copy bandwidth (at the chosen tiles by
# 2.3-6.2; at a few others the 2-D grid was up to 1.3 points ahead).
program_tile = triton_math.program_tile


def math_flags(dtype: torch.dtype, platform: str = "cuda") -> dict:
    """The math rule, constexpr ``FAST``: 0, the math library (fp32 outputs); 1, approximate
    ``exp`` and gelu's :func:`_gelu_fast` (16-bit outputs); 2, the same with PTX's
    ``rcp.approx.ftz`` / ``ex2.approx.ftz`` in :func:`_gelu_fast` (16-bit outputs on CUDA; the
    interpreter cannot run inline PTX, whatever device the tensors are on). The approximate
    forms' error vanishes in a 16-bit output's one rounding, and they keep the erf gelu
    memory-bound (one H200, bf16: ``gelu`` 97.6% of copy at FLUX's FFN shape,
    docs/benchmarks/gelu_bench_h200.json; the math library's ``erfcf`` is compute-bound, see
    :func:`_gelu_fast`). ``platform`` is ``tensor_platform`` of the launch's device."""
    return {"FAST": triton_math.fast_level(dtype, platform)}


def grid_and_flags(rows: int, D: int, cfg: TileConfig, dtype: torch.dtype,
                   platform: str) -> tuple[tuple[int, ...], int, dict]:
    """(grid, tiles per row, constexprs) of one launch (``TileConfig.grid``: ``UnsupportedInputError``
    past the grid's 2**31 limit)."""
    grid, n_tiles = cfg.grid(rows, D)
    return grid, n_tiles, math_flags(dtype, platform)


@triton.jit
def row_offsets(r, n1, n2, s0, s1, s2, t0, t1, t2, u0, u1, u2, NDIM: tl.constexpr):
    """Element offsets (int64) of row ``r`` in three operands with strides ``s``, ``t``, ``u``.

    The row index (below 2**31) is split over the coalesced leading dims ``[n0, n1, n2][:NDIM]``
    with int32 divisions, once per program.
    """
    if NDIM == 1:
        i0 = r.to(tl.int64)
        return i0 * s0, i0 * t0, i0 * u0
    elif NDIM == 2:
        q = r // n1
        i0 = q.to(tl.int64)
        i1 = (r - q * n1).to(tl.int64)
        return i0 * s0 + i1 * s1, i0 * t0 + i1 * t1, i0 * u0 + i1 * u1
    else:
        q = r // n2
        i2 = (r - q * n2).to(tl.int64)
        p = q // n1
        i0 = p.to(tl.int64)
        i1 = (q - p * n1).to(tl.int64)
        return (i0 * s0 + i1 * s1 + i2 * s2, i0 * t0 + i1 * t1 + i2 * t2, i0 * u0 + i1 * u1 + i2 * u2)
