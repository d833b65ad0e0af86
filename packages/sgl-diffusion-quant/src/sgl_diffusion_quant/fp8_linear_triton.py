"""Triton FP8 GEMM of ``fp8_linear`` with the epilogue fused, backend ``triton`` (CUDA sm_89+ and ROCm
gfx942 / gfx950, each in its own FP8 format; CPU under ``TRITON_INTERPRET=1``, both formats).

One program per ``BLOCK_M x BLOCK_N`` output tile, programs grouped ``GROUP_M`` tiles deep along M so
that neighbouring programs share weight tiles in L2. The K loop multiplies FP8 tiles with ``tl.dot``
into an fp32 accumulator (FP8 tensor cores / MFMA), promoted to full fp32 after every K tile; the
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

from sgl_diffusion_core import PreparedLaunch, tensor_platform, triton_math

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
    GATE_PER_SAMPLE: tl.constexpr, OUT: tl.constexpr, EVEN_K: tl.constexpr,
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
        # promoted into the fp32 accumulator after every K tile: sm_90's FP8 tensor cores otherwise keep
        # a truncated partial sum across the whole K loop (errors of 1-2% at K = 5120)
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
    def from_heuristic(cls, M: int, platform: str) -> LinearConfig:
        """128 x 128 output tiles with 128-deep FP8 K steps on NVIDIA (4 stages: 128 KiB of shared
        memory), 64-deep with 2 stages on AMD; 64-row tiles when M <= 64 (one tile of rows, half the
        wasted MMA work); 32 x 32 x 32 under the interpreter, so that small test shapes cover several
        tiles and K steps. Not yet tuned on a GPU."""
        if platform == "cpu":
            return cls(32, 32, 32, 2, 4, 1)
        bm = 64 if M <= 64 else 128
        if platform == "hip":
            return cls(bm, 128, 64, 8, 8 if bm == 128 else 4, 2)
        return cls(bm, 128, 128, 8, 8 if bm == 128 else 4, 4)


def prepare(geom, *tensors):
    """The runner ``(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate) -> y`` of one call signature."""
    x_fp8, w_fp8 = tensors[0], tensors[2]
    plat = tensor_platform(x_fp8.device)
    cfg = LinearConfig.from_heuristic(geom.M, plat)
    grid = (triton.cdiv(geom.M, cfg.block_m) * triton.cdiv(geom.N, cfg.block_n),)
    launch = PreparedLaunch(
        _fp8_gemm_kernel, grid,
        {"X_ROWWISE": geom.x_rowwise, "W_ROWWISE": geom.w_rowwise, "HAS_BIAS": geom.has_bias,
         "EPILOGUE": EPILOGUE_CODES[geom.epilogue], "GATE_PER_SAMPLE": geom.gate_rows > 0,
         "OUT": TL_OUT[geom.out_dtype], "EVEN_K": geom.K % cfg.block_k == 0, "BLOCK_M": cfg.block_m,
         "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m},
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
    # a plain 5120 -> 5120 projection at Wan 480p's 32760 tokens, a 64-token projection (small-M tiles)
    cases = (("mlp_in", 12288, 3072, "gelu_tanh", 4608), ("mlp_out", 3072, 12288, "gated_residual", 4608),
             ("proj", 5120, 5120, None, 32760), ("proj_small_m", 3072, 3072, None, 64))
    for label, N, K, epilogue, M in cases:
        cfg = LinearConfig.from_heuristic(M, platform)
        sig = {"X": f"*{fp8}", "W": f"*{fp8}", "XS": "*fp32", "WS": "*fp32", "BIAS": "*bf16", "RES": "*bf16",
               "GATE": "*bf16", "Y": "*bf16"}
        sig.update({n: "i32" for n in ("M", "N", "K", "x_stride", "w_stride", "res_stride", "gate_rows")})
        const = {"X_ROWWISE": True, "W_ROWWISE": True, "HAS_BIAS": True, "EPILOGUE": EPILOGUE_CODES[epilogue],
                 "GATE_PER_SAMPLE": epilogue == "gated_residual", "OUT": tl.bfloat16,
                 "EVEN_K": K % cfg.block_k == 0, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
                 "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m}
        sig.update({n: "constexpr" for n in const})
        out.append(AotVariant(
            name=f"fp8_linear[{fmt},{label},N={N},K={K},{epilogue or 'none'},"
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

