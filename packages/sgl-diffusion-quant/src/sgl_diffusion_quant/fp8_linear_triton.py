"""Triton FP8 GEMM of ``fp8_linear`` with the epilogue fused, backend ``triton`` (CUDA sm_89+ and ROCm
gfx942 / gfx950, each in its own FP8 format; CPU under ``TRITON_INTERPRET=1``, both formats).

One program per ``BLOCK_M x BLOCK_N`` output tile, programs grouped ``GROUP_M`` tiles deep along M so
that neighbouring programs share weight tiles in L2. The K loop multiplies FP8 tiles with ``tl.dot``
into an fp32 accumulator (FP8 tensor cores / MFMA): with ``accumulate="fp32"`` promoted to full fp32
after every K tile; with ``"fast"`` (``FAST_ACC``) sm_90's FP8 tensor cores keep their own partial sum
(fewer mantissa bits) across the K loop, as cuBLAS's fast accumulation does (MFMA sums in fp32 either
way); the
epilogue applies the row and column scales (``acc * x_scale * w_scale``, the reference's order), the
bias, GELU-tanh or ``residual + gate * y`` in fp32 and rounds once (``triton_math.narrow``: ties to
even, also under the interpreter). Rows and columns past M and N are read modulo M and N (valid
memory, results discarded), so only the K tail is masked.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, device_arch, tensor_platform, triton_math

from . import _specs as S

EPILOGUE_CODES = {None: 0, "gelu_tanh": 1, "gated_residual": 2}
TL_OUT = triton_math.TL_DTYPES


@triton.jit
def _gelu_tanh(y):
    inner = 0.7978845608028654 * (y + 0.044715 * y * y * y)
    t = 1.0 - 2.0 / (tl.exp(2.0 * inner) + 1.0)  # tanh(inner); exp overflow gives exactly +-1
    return 0.5 * y * (1.0 + t)


@triton.jit
def _tile(M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    n_m = tl.cdiv(M, BLOCK_M)
    n_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * n_n)
    first_m = group * GROUP_M
    rows = tl.minimum(n_m - first_m, GROUP_M)
    return first_m + (pid % (GROUP_M * n_n)) % rows, (pid % (GROUP_M * n_n)) // rows


@triton.jit(do_not_specialize=["M", "gate_rows"])
def _fp8_gemm_kernel(
    X, W, XS, WS, BIAS, RES, GATE, Y,
    M, N, K, x_stride, w_stride, res_stride, gate_rows,
    X_ROWWISE: tl.constexpr, W_ROWWISE: tl.constexpr, HAS_BIAS: tl.constexpr, EPILOGUE: tl.constexpr,
    GATE_PER_SAMPLE: tl.constexpr, OUT: tl.constexpr, EVEN_K: tl.constexpr, FAST_ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    pid_m, pid_n = _tile(M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = X + (offs_m % M).to(tl.int64)[:, None] * x_stride + offs_k[None, :]
    b_ptrs = W + (offs_n % N).to(tl.int64)[None, :] * w_stride + offs_k[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - kt * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if FAST_ACC:
            acc = tl.dot(a, b, acc)
        else:
            # promoted into the fp32 accumulator after every K tile: sm_90's FP8 tensor cores otherwise
            # keep a truncated partial sum across the whole K loop (errors of 1-2% at K = 5120)
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    m_ok = offs_m < M
    n_ok = offs_n < N
    if X_ROWWISE:
        xs = tl.load(XS + offs_m, mask=m_ok, other=0.0)
    else:
        xs = tl.load(XS + offs_m * 0)
    if W_ROWWISE:
        ws = tl.load(WS + offs_n, mask=n_ok, other=0.0)
    else:
        ws = tl.load(WS + offs_n * 0)
    y = acc * xs[:, None] * ws[None, :]
    if HAS_BIAS:
        y = y + triton_math.widen(tl.load(BIAS + offs_n, mask=n_ok, other=0.0))[None, :]
    mask = m_ok[:, None] & n_ok[None, :]
    if EPILOGUE == 1:
        y = _gelu_tanh(y)
    elif EPILOGUE == 2:
        r = tl.load(RES + offs_m.to(tl.int64)[:, None] * res_stride + offs_n[None, :], mask=mask, other=0.0)
        if GATE_PER_SAMPLE:
            g_off = (offs_m // gate_rows).to(tl.int64)[:, None] * N + offs_n[None, :]
            g = tl.load(GATE + g_off, mask=mask, other=0.0)
        else:
            g = tl.load(GATE + offs_n, mask=n_ok, other=0.0)[None, :]
        y = triton_math.widen(r) + triton_math.widen(g) * y
    y_ptrs = Y + offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    tl.store(y_ptrs, triton_math.narrow(y, OUT), mask=mask)


@dataclass(frozen=True)
class LinearConfig:
    """Tile shape and launch options of the FP8 GEMM."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int
    num_warps: int
    num_stages: int

    @classmethod
    def from_heuristic(cls, M: int, N: int, platform: str, arch: int | str | None = None,
                       fast: bool = False, epilogue: str | None = None) -> LinearConfig:
        """The tiles of one call signature. Measured on one H100 (pointer loads, FLUX.1's and Wan2.1-14B's
        linear shapes; docs/benchmarks/fp8_linear_bench_h100.json holds the op at these rules):

        * sm_90, ``fast``: 128 x 256 x 128, 8 warps, 3 stages (the fastest tile at every shape measured:
          1.42-1.78x bf16 ``F.linear``; promoting after every K tile at this tile is 2.5x slower); with
          the gated residual 128 x 128 x 128, 8 warps, 4 stages (the residual and gate tiles of a 128 x 256
          tile spill registers on sm_90).
        * sm_90, ``fp32``: 256 x 128 x 128, 8 warps, 3 stages where the output has at least 1000 such
          tiles (7.5 waves on 132 SMs; 4-10% faster than 128 x 128 at FLUX's MLP-in and Wan's layers),
          else 128 x 128 x 128, 8 warps, 4 stages (3-5% faster at FLUX's 3072-wide outputs).
        * M <= 64: 64-row tiles (one tile of rows, half the wasted MMA work).
        * sm_89 (99 KiB of shared memory): 128 x 128 x 64, 4 warps, 3 stages (48 KiB); sm_100+: 128 x 128
          x 128, 8 warps, 4 stages (larger tiles spill there); AMD: 128 x 128 x 64, 8 warps, 2 stages;
          none of these measured.
        * The interpreter: 32 x 32 x 32, so that small test shapes cover several tiles and K steps."""
        if platform == "cpu":
            return cls(32, 32, 32, 2, 4, 1)
        small = M <= 64
        if platform == "hip":
            return cls(64 if small else 128, 128, 64, 8, 4 if small else 8, 2)
        if isinstance(arch, int) and arch < 90:
            return cls(64 if small else 128, 128, 64, 8, 4, 3)
        if small:
            return cls(64, 128, 128, 8, 4, 4)
        if isinstance(arch, int) and arch >= 100:
            return cls(128, 128, 128, 8, 8, 4)
        if fast:
            return cls(128, 128, 128, 8, 8, 4) if epilogue == "gated_residual" else cls(128, 256, 128, 8, 8, 3)
        if triton.cdiv(M, 256) * triton.cdiv(N, 128) >= 1000:
            return cls(256, 128, 128, 8, 8, 3)
        return cls(128, 128, 128, 8, 8, 4)


def prepare(geom, *tensors):
    """The runner ``(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate) -> y`` of one call signature."""
    x_fp8, w_fp8 = tensors[0], tensors[2]
    plat = tensor_platform(x_fp8.device)
    arch = device_arch(plat, x_fp8.device.index) if plat in ("cuda", "hip") else None
    cfg = LinearConfig.from_heuristic(geom.M, geom.N, plat, arch, geom.fast_accum, geom.epilogue)
    grid = (triton.cdiv(geom.M, cfg.block_m) * triton.cdiv(geom.N, cfg.block_n),)
    launch = PreparedLaunch(
        _fp8_gemm_kernel, grid,
        {"X_ROWWISE": geom.x_rowwise, "W_ROWWISE": geom.w_rowwise, "HAS_BIAS": geom.has_bias,
         "EPILOGUE": EPILOGUE_CODES[geom.epilogue], "GATE_PER_SAMPLE": geom.gate_rows > 0,
         "OUT": TL_OUT[geom.out_dtype], "EVEN_K": geom.K % cfg.block_k == 0, "FAST_ACC": geom.fast_accum,
         "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m},
        n_ptrs=8, options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}, device=x_fp8.device,
    )
    M, N, K, lead, out_dtype, device = geom.M, geom.N, geom.K, geom.lead, geom.out_dtype, x_fp8.device
    scalars = (M, N, K, geom.x_stride, w_fp8.stride(0), geom.res_stride, max(geom.gate_rows, 1))

    def run(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate, *_):
        y = torch.empty((*lead, N), dtype=out_dtype, device=device)
        launch(x_fp8, w_fp8, x_scale, w_scale, x_scale if bias is None else bias,
               y if residual is None else residual, x_scale if gate is None else gate, y, *scalars)
        return y

    return run


def _variants(fmt: str, platform: str) -> list:
    from sgl_diffusion_core import AotVariant

    fp8 = triton_math.AOT_FP8[fmt]
    out = []
    # FLUX's MLP in / out (3072 -> 12288 with GELU, 12288 -> 3072 with the gated residual) at 4608 tokens,
    # a plain 5120 -> 5120 projection at Wan 480p's 32760 tokens (both accumulations), a 64-token projection
    cases = (("mlp_in", 12288, 3072, "gelu_tanh", 4608, False), ("mlp_in", 12288, 3072, "gelu_tanh", 4608, True),
             ("mlp_out", 3072, 12288, "gated_residual", 4608, False),
             ("mlp_out", 3072, 12288, "gated_residual", 4608, True),
             ("proj", 5120, 5120, None, 32760, False), ("proj", 5120, 5120, None, 32760, True),
             ("proj_small_m", 3072, 3072, None, 64, False))
    for label, N, K, epilogue, M, fast in cases:
        if fast and platform != "cuda":
            continue  # MFMA sums in fp32 either way: one build
        cfg = LinearConfig.from_heuristic(M, N, platform, 90 if platform == "cuda" else None, fast, epilogue)
        sig = {"X": f"*{fp8}", "W": f"*{fp8}", "XS": "*fp32", "WS": "*fp32", "BIAS": "*bf16", "RES": "*bf16",
               "GATE": "*bf16", "Y": "*bf16"}
        sig.update({n: "i32" for n in ("M", "N", "K", "x_stride", "w_stride", "res_stride", "gate_rows")})
        const = {"X_ROWWISE": True, "W_ROWWISE": True, "HAS_BIAS": True, "EPILOGUE": EPILOGUE_CODES[epilogue],
                 "GATE_PER_SAMPLE": epilogue == "gated_residual", "OUT": tl.bfloat16,
                 "EVEN_K": K % cfg.block_k == 0, "FAST_ACC": fast, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
                 "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m}
        sig.update({n: "constexpr" for n in const})
        out.append(AotVariant(
            name=f"fp8_linear[{fmt},{label},N={N},K={K},{epilogue or 'none'},{'fast' if fast else 'fp32'},"
                 f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k},s={cfg.num_stages}]",
            kernel=_fp8_gemm_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
            num_stages=cfg.num_stages, min_cuda_arch=89, amd_targets=S.AMD_TARGETS[fmt],
            options={"enable_fp_fusion": True},
            divisible_by_16=("X", "W", "Y", "RES", "N", "K", "x_stride", "w_stride", "res_stride"),
        ))
    return out


def aot_variants(platform: str = "cuda") -> list:
    """The builds the compile lanes make (bf16 output, row-wise scales, a bias): ``float8_e4m3fn``
    (CUDA, gfx950) and ``float8_e4m3fnuz`` (gfx942)."""
    fnuz = _variants("float8_e4m3fnuz", platform) if platform == "hip" else []
    return _variants("float8_e4m3fn", platform) + fnuz
