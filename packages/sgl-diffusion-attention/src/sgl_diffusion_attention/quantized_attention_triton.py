"""Triton kernel of ``quantized_attention``: flash attention over 8-bit q and k (CUDA and ROCm; CPU under
``TRITON_INTERPRET=1``).

The operands are quantized first by Triton pre-passes, bit for bit the torch definition's quantization
(the key mean of ``smooth_k`` in torch, ``quantized_attention_torch.key_mean``): q per row
(:func:`_quantize_rows_kernel`, codes ``[B, S, H, Dh]``, fp32 scales ``[B, S, H]``), k per block of
``KEY_BLOCK`` keys (:func:`_quantize_key_blocks_kernel`, codes ``[B, S, H, Dh]``, scales ``[B, H, n]``); with
``pv="fp8"`` v per channel (:func:`_quantize_v_kernel`, codes ``[B, H, Dh, S_pad]``, keys contiguous). One
program per (query block, sample, head), as the dense kernel (``_attention_triton``): each key tile
(``BLOCK_N`` dividing ``KEY_BLOCK``) takes one k scale, so its scores are the 8-bit dot product (int8:
int32 accumulation; e4m3: fp32) times one row vector, the query rows' scales times the tile's k scale and
``scale * log2(e)``, as cheap as dense attention's scaling (per-key scales cost H100 about 40% of the
kernel's time at Wan's shape); the online softmax in fp32 with ``exp2``; ``p`` rounded to v's dtype for the
product with v (bf16 / fp16, as given). Keys past ``kv_lens[b]`` are masked in the tail tile; a sample whose
``kv_lens`` is out of ``[1, Sk]`` gets NaN rows. ``WIDE_DOT`` (the interpreter): the dot products in fp32
(exact for these codes).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, device_arch, tensor_platform, triton_math

from ._attention_triton import LOG2E, RULE_SM8X, AttnConfig, config_for, softmax_pv
from .quantized_attention_torch import KEY_BLOCK, channel_scales, key_blocks, key_mean

# values each program of the quantization pre-pass handles (2048 // Dh rows): 16 bytes of bf16 per thread at
# 4 warps of 32 (CUDA) or 64 (ROCm) lanes, so that every load is 128 bits wide
QUANT_ELEMS = 2048


def quant_rows(dh: int) -> int:
    """Rows per program of the pre-pass."""
    return max(1, QUANT_ELEMS // dh)


@triton.jit
def _quantize_rows_kernel(
    X, C, SC,
    n_rows, S, H, x_sb, x_ss, x_sh,
    HEAD_DIM: tl.constexpr, ROWS: tl.constexpr, INT8: tl.constexpr, FNUZ: tl.constexpr, BITS: tl.constexpr,
):
    """Codes and scales of ``ROWS`` (sample, token, head) rows of ``Dh`` values (q), as
    ``quantized_attention_torch._rows`` computes them (bit for bit): ``x`` in fp32,
    ``scale = max(amax, 1e-12) / top`` and ``x / scale`` with IEEE divisions; int8 rounded
    half to even and clamped to ``+-127``; e4m3 clamped to ``+-448`` and converted ties to even."""
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    ok = r < n_rows
    rs = tl.where(ok, r, 0).to(tl.int64)
    b = rs // (S * H)
    s = (rs // H) % S
    h = rs % H
    d = tl.arange(0, HEAD_DIM)
    mask = ok[:, None]
    x = tl.load(X + (b * x_sb + s * x_ss + h * x_sh)[:, None] + d[None, :], mask=mask, other=0.0).to(tl.float32)
    offs = rs[:, None] * HEAD_DIM + d[None, :]
    if INT8:
        scale = tl.math.div_rn(tl.maximum(tl.max(tl.abs(x), axis=1), 1e-12), 127.0)
        tl.store(SC + rs, scale, mask=ok)
        y = tl.math.div_rn(x, scale[:, None])
        y = (y + 12582912.0) - 12582912.0  # round half to even (|y| <= 127: the 1.5 * 2**23 trick)
        y = tl.minimum(tl.maximum(y, -127.0), 127.0)
        tl.store(C + offs, y.to(tl.int8), mask=mask)
    else:
        scale = tl.math.div_rn(tl.maximum(tl.max(tl.abs(x), axis=1), 1e-12), 448.0)
        tl.store(SC + rs, scale, mask=ok)
        triton_math.store_fp8(x, C, offs, mask, scale[:, None], 448.0, C.dtype.element_ty, BITS, FNUZ)


def quantize_rows_launch(x: torch.Tensor, qk: str):
    """``run(x) -> (codes, scales)``: the row pre-pass for tensors shaped like ``x`` (bshd, head dim
    contiguous); codes ``[B, S, H, Dh]`` contiguous, scales fp32 ``[B, S, H]``."""
    B, S, H, Dh = x.shape
    n_rows = B * S * H
    dtype = torch.int8 if qk == "int8" else torch.float8_e4m3fn
    bits = qk == "fp8" and triton_math.FP8_BITS
    launch = PreparedLaunch(
        _quantize_rows_kernel, (max(1, triton.cdiv(n_rows, quant_rows(Dh))),),
        {"HEAD_DIM": Dh, "ROWS": quant_rows(Dh), "INT8": qk == "int8", "FNUZ": False, "BITS": bits},
        n_ptrs=3, options={"num_warps": 4, "num_stages": 1}, device=x.device,
    )
    device = x.device

    def run(x):
        codes = torch.empty((B, S, H, Dh), dtype=dtype, device=device)
        scales = torch.empty((B, S, H), dtype=torch.float32, device=device)
        if n_rows:
            st = x.stride()
            launch(x, codes.view(torch.uint8) if bits else codes, scales, n_rows, S, H, st[0], st[1], st[2])
        return codes, scales

    return run


@triton.jit
def _key_block(X, S, H, n_blocks, x_sb, x_ss, x_sh, HEAD_DIM: tl.constexpr, KB: tl.constexpr):
    """This program's block of ``KB`` keys of one (sample, head) of a bshd tensor: ``(b, h, s, d, mask, x)``,
    ``x`` in fp32 ``[KB, HEAD_DIM]`` (keys past ``S`` read as 0)."""
    pid = tl.program_id(0)
    bh = pid // n_blocks
    blk = pid - bh * n_blocks
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    s = blk * KB + tl.arange(0, KB)
    d = tl.arange(0, HEAD_DIM)
    mask = (s < S)[:, None]
    x = tl.load(X + b * x_sb + h * x_sh + s[:, None].to(tl.int64) * x_ss + d[None, :], mask=mask,
                other=0.0).to(tl.float32)
    return b, h, s, d, mask, x


@triton.jit
def _quantize_key_blocks_kernel(
    X, MEAN, LENS, C, SC,
    S, H, n_blocks, x_sb, x_ss, x_sh,
    HEAD_DIM: tl.constexpr, KB: tl.constexpr, SMOOTH: tl.constexpr, HAS_LENS: tl.constexpr, INT8: tl.constexpr,
    FNUZ: tl.constexpr, BITS: tl.constexpr,
):
    """Codes and the scale of one block of ``KB`` keys of one (sample, head), as
    ``quantized_attention_torch._key_blocks`` computes them (bit for bit): ``x`` in fp32 (minus the key mean
    with ``SMOOTH``), keys at or past ``LENS[b]`` zeroed, ``scale = max(amax, 1e-12) / top`` over the block,
    ``x / scale`` with IEEE divisions; int8 rounded half to even and clamped to ``+-127``; e4m3 clamped to
    ``+-448`` and converted ties to even."""
    b, h, s, d, mask, x = _key_block(X, S, H, n_blocks, x_sb, x_ss, x_sh, HEAD_DIM, KB)
    if SMOOTH:
        x = x - tl.load(MEAN + (b * H + h) * HEAD_DIM + d)[None, :]
    if HAS_LENS:
        x = tl.where((s < tl.load(LENS + b))[:, None], x, 0.0)
    x = tl.where(mask, x, 0.0)
    top: tl.constexpr = 127.0 if INT8 else 448.0
    scale = tl.math.div_rn(tl.maximum(tl.max(tl.max(tl.abs(x), axis=1), axis=0), 1e-12), top)
    tl.store(SC + tl.program_id(0), scale)
    offs = ((b * S + s) * H + h)[:, None] * HEAD_DIM + d[None, :]
    if INT8:
        y = tl.math.div_rn(x, scale)
        y = (y + 12582912.0) - 12582912.0  # round half to even (|y| <= 127: the 1.5 * 2**23 trick)
        y = tl.minimum(tl.maximum(y, -127.0), 127.0)
        tl.store(C + offs, y.to(tl.int8), mask=mask)
    else:
        triton_math.store_fp8(x, C, offs, mask, scale, 448.0, C.dtype.element_ty, BITS, FNUZ)


def quantize_key_blocks_launch(k: torch.Tensor, qk: str, smooth: bool, has_lens: bool):
    """``run(k, mean, kv_lens) -> (codes, scales)``: the key pre-pass for tensors shaped like ``k`` (bshd, head
    dim contiguous); codes ``[B, S, H, Dh]`` contiguous, scales fp32 ``[B, H, key_blocks(S)]``; ``mean`` fp32
    ``[B, 1, H, Dh]`` contiguous with ``smooth``, ``kv_lens`` int32 ``[B]`` with ``has_lens``."""
    B, S, H, Dh = k.shape
    n = key_blocks(S)
    dtype = torch.int8 if qk == "int8" else torch.float8_e4m3fn
    bits = qk == "fp8" and triton_math.FP8_BITS
    launch = PreparedLaunch(
        _quantize_key_blocks_kernel, (max(1, B * H * n),),
        {"HEAD_DIM": Dh, "KB": KEY_BLOCK, "SMOOTH": smooth, "HAS_LENS": has_lens, "INT8": qk == "int8",
         "FNUZ": False, "BITS": bits},
        n_ptrs=5, options={"num_warps": 4, "num_stages": 1}, device=k.device,
    )
    device = k.device

    def run(k, mean, kv_lens):
        codes = torch.empty((B, S, H, Dh), dtype=dtype, device=device)
        scales = torch.empty((B, H, n), dtype=torch.float32, device=device)
        if B * H * n:
            st = k.stride()
            launch(k, k if mean is None else mean, scales if kv_lens is None else kv_lens,
                   codes.view(torch.uint8) if bits else codes, scales, S, H, n, st[0], st[1], st[2])
        return codes, scales

    return run


@triton.jit
def _quantize_v_kernel(
    X, SC, C,
    S, S_PAD, H, n_blocks, x_sb, x_ss, x_sh,
    HEAD_DIM: tl.constexpr, KB: tl.constexpr, FNUZ: tl.constexpr, BITS: tl.constexpr,
):
    """e4m3 codes of one block of ``KB`` keys of one (sample, head) of v (``pv="fp8"``), as
    ``quantized_attention_torch.quantize_v`` computes them (bit for bit) with the per-channel scales ``SC``
    fp32 ``[B, H, Dh]``, written transposed: ``C`` ``[B, H, Dh, S_PAD]``, keys contiguous. The FP8 dot of p
    and v takes v with its reduction (key) dimension contiguous (sm_90's FP8 MMA reads its second operand
    k-major only); a tile of v codes stored with the head dim contiguous is transposed through shared memory
    on every key tile instead."""
    b, h, s, d, mask, x = _key_block(X, S, H, n_blocks, x_sb, x_ss, x_sh, HEAD_DIM, KB)
    scale = tl.load(SC + (b * H + h) * HEAD_DIM + d)
    offs = ((b * H + h) * HEAD_DIM + d[None, :]) * S_PAD + s[:, None]
    triton_math.store_fp8(x, C, offs, mask, scale[None, :], 448.0, C.dtype.element_ty, BITS, FNUZ)


def quantize_v_launch(v: torch.Tensor):
    """``run(v, scales) -> (codes, scales)``: v's e4m3 codes for ``pv="fp8"`` (bshd, head dim contiguous) with
    the given fp32 ``[B, H, Dh]`` scales (``quantized_attention_torch.channel_scales``); codes
    ``[B, H, Dh, S_pad]`` with ``S_pad`` the keys rounded up to ``KEY_BLOCK`` (the keys past ``S`` unwritten,
    never read)."""
    B, S, H, Dh = v.shape
    n = key_blocks(S)
    bits = triton_math.FP8_BITS
    launch = PreparedLaunch(
        _quantize_v_kernel, (max(1, B * H * n),), {"HEAD_DIM": Dh, "KB": KEY_BLOCK, "FNUZ": False, "BITS": bits},
        n_ptrs=3, options={"num_warps": 4, "num_stages": 1}, device=v.device,
    )
    device = v.device

    def run(v, scales):
        codes = torch.empty((B, H, Dh, n * KEY_BLOCK), dtype=torch.float8_e4m3fn, device=device)
        if B * H * n:
            st = v.stride()
            launch(v, scales, codes.view(torch.uint8) if bits else codes, S, n * KEY_BLOCK, H, n, st[0], st[1],
                   st[2])
        return codes, scales

    return run


@triton.jit
def _softmax_pv_fp8(acc, l_i, m_i, s, v, rows, seqlen_k, MASK_N: tl.constexpr, WIDE_DOT: tl.constexpr):
    """The online-softmax step of ``pv="fp8"``: the running maximum rounded up to an integer (base-2
    logits), so ``p`` (in ``(0, 1]``) and every rescale are exact powers of two apart from the definition's
    and ``e4m3(448 p)`` matches its codes; ``p`` codes times v codes summed in fp32 apart from ``acc``."""
    if MASK_N:
        s = tl.where(rows[None, :] < seqlen_k, s, float("-inf"))
    m_new = tl.math.ceil(tl.maximum(m_i, tl.max(s, 1)))
    alpha = tl.math.exp2(m_i - m_new)
    p = tl.math.exp2(s - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    if WIDE_DOT:
        acc += tl.dot(triton_math.round_to_e4m3(p * 448.0), v.to(tl.float32))
    else:
        acc += tl.dot((p * 448.0).to(v.dtype, fp_downcast_rounding="rtne"), v)
    return acc, l_i, m_new


@triton.jit
def _qkey_tile(acc, l_i, m_i, q, qs, k_ptrs, ks_ptr, v_ptrs, n0, seqlen_k, offs_n, k_ss, v_ss,
               MASK_N: tl.constexpr, WIDE_DOT: tl.constexpr, PV_FP8: tl.constexpr, KB: tl.constexpr):
    """One key tile: ``qs`` is the query rows' scales times ``scale * log2(e)``; the tile's keys share the
    k scale of their block of ``KB``."""
    rows = n0 + offs_n
    ks = tl.load(ks_ptr + n0 // KB)
    if MASK_N:
        ok = rows < seqlen_k
        k = tl.load(k_ptrs + n0 * k_ss, mask=ok[:, None])  # masked keys' scores become -inf below
        if PV_FP8:  # v codes transposed (keys contiguous): a [Dh, BLOCK_N] tile
            v = tl.trans(tl.load(v_ptrs + n0, mask=ok[None, :], other=0.0))
        else:
            v = tl.load(v_ptrs + n0 * v_ss, mask=ok[:, None], other=0.0)
    else:
        k = tl.load(k_ptrs + n0 * k_ss)
        if PV_FP8:
            v = tl.trans(tl.load(v_ptrs + n0))
        else:
            v = tl.load(v_ptrs + n0 * v_ss)
    if WIDE_DOT:
        s = tl.dot(q.to(tl.float32), tl.trans(k.to(tl.float32)))
    else:
        s = tl.dot(q, tl.trans(k)).to(tl.float32)
    s = s * (qs * ks)[:, None]
    if PV_FP8:
        return _softmax_pv_fp8(acc, l_i, m_i, s, v, rows, seqlen_k, MASK_N, WIDE_DOT)
    return softmax_pv(acc, l_i, m_i, s, 1.0, v, rows, seqlen_k, MASK_N, WIDE_DOT)


@triton.jit(do_not_specialize=["Sq", "Sk", "n_m"])
def _quantized_attention_kernel(
    Q, QS, K, KS, V, VS, O, LSE, KV_LENS,
    q_sb, q_ss, q_sh, k_sb, k_ss, k_sh, v_sb, v_ss, v_sh, o_sb, o_ss, o_sh,
    Sq, Sk, Hq, Hk, GROUP, n_m, n_kb, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_KV_LENS: tl.constexpr,
    WRITE_LSE: tl.constexpr, WIDE_DOT: tl.constexpr, PV_FP8: tl.constexpr, KB: tl.constexpr,
):
    pid = tl.program_id(0)
    bh = pid // n_m
    pid_m = pid - bh * n_m
    b = bh // Hq
    h = bh - b * Hq
    hk = h // GROUP
    b64, h64, hk64 = b.to(tl.int64), h.to(tl.int64), hk.to(tl.int64)
    seqlen_k = Sk
    bad = Sk < 0
    if HAS_KV_LENS:
        kv = tl.load(KV_LENS + b)
        bad = (kv < 1) | (kv > Sk)
        seqlen_k = tl.minimum(tl.maximum(kv, 0), Sk).to(tl.int32)
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_rows = offs_m < Sq
    Qb = Q + b64 * q_sb + h64 * q_sh
    q = tl.load(Qb + offs_m[:, None] * q_ss + offs_d[None, :], mask=q_rows[:, None])  # rows past Sq: not stored
    # q scales [B, S, H] contiguous: row s of head h at (b * S + s) * H + h; k scales [B, Hk, n_kb]
    qs = tl.load(QS + (b64 * Sq + offs_m) * Hq + h64, mask=q_rows, other=0.0) * qk_scale
    k_ptrs = K + b64 * k_sb + hk64 * k_sh + offs_n[:, None] * k_ss + offs_d[None, :]
    ks_ptr = KS + (b64 * Hk + hk64) * n_kb
    if PV_FP8:  # v codes [B, Hk, Dh, S_pad]: v_ss is the stride of a channel, keys contiguous
        v_ptrs = V + b64 * v_sb + hk64 * v_sh + offs_d[:, None] * v_ss + offs_n[None, :]
    else:
        v_ptrs = V + b64 * v_sb + hk64 * v_sh + offs_n[:, None] * v_ss + offs_d[None, :]
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    n_full = (seqlen_k // BLOCK_N) * BLOCK_N
    for n0 in range(0, n_full, BLOCK_N):
        acc, l_i, m_i = _qkey_tile(acc, l_i, m_i, q, qs, k_ptrs, ks_ptr, v_ptrs, n0, seqlen_k, offs_n, k_ss, v_ss,
                                   False, WIDE_DOT, PV_FP8, KB)
    if n_full < seqlen_k:
        acc, l_i, m_i = _qkey_tile(acc, l_i, m_i, q, qs, k_ptrs, ks_ptr, v_ptrs, n_full, seqlen_k, offs_n, k_ss,
                                   v_ss, True, WIDE_DOT, PV_FP8, KB)
    empty = l_i == 0.0
    if PV_FP8:  # v's channel scales and p's 448
        acc = acc * (tl.load(VS + (b64 * Hk + hk64) * HEAD_DIM + offs_d) * (1.0 / 448.0))[None, :]
    o = acc / tl.where(empty, 1.0, l_i)[:, None]
    o = tl.where(bad, float("nan"), o)
    Ob = O + b64 * o_sb + h64 * o_sh
    tl.store(Ob + offs_m[:, None] * o_ss + offs_d[None, :], o.to(O.dtype.element_ty), mask=q_rows[:, None])
    if WRITE_LSE:
        lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
        lse = tl.where(bad, float("nan"), lse)
        tl.store(LSE + (b64 * Hq + h64) * Sq + offs_m, lse, mask=q_rows)


# CUDA sm_90, head dim 128, bf16 p @ v: 128 x 64 tiles at 4 warps, 3 stages. H200, the kernel alone at 18,900 tokens x
# 40 heads: 575 TFLOP/s (int8; e4m3 576) against 531 at 8 warps, 531 at 2 stages and 494 at 64 x 64; at FLUX's 4,608
# tokens 64 x 64 ran 5% faster (525 against 497), not taken (docs/benchmarks/quantized_attention_sweep_h200.json)
_SM90_128 = AttnConfig(128, 64, 4, 3)


def quant_config(platform: str, dh: int, arch: int | str | None, qk: str, pv: str = "bf16") -> AttnConfig:
    """The dense kernel's tiles (``_attention_triton.config_for``), except at head dim 128:

    * CUDA sm_90 and later (and AOT builds, ``arch=None``), ``pv="bf16"``: ``_SM90_128``;
    * e4m3 on ROCm: 64 x 32 (64 x 64 needs more than the 512 registers a 4-wave workgroup has on gfx950;
      64 x 32 compiles to 256 VGPRs, no spills);
    * ``pv="fp8"`` on CUDA sm_90: 128 x 64 at 8 warps (p @ v sums into its own fp32 tile, added to the
      accumulator after each key tile; beside 128-wide key tiles that spills 12 bytes per thread). Compiled,
      not measured.

    Every key tile divides ``KEY_BLOCK`` (one k scale per tile)."""
    if platform == "hip" and (qk == "fp8" or pv == "fp8") and dh > 64:
        cfg = AttnConfig(64, 32, 4, 1)
    else:
        cfg = config_for(platform, dh, arch)
        hopper = platform == "cuda" and (arch is None or (isinstance(arch, int) and arch >= 90))
        if hopper and dh == 128 and pv == "bf16":
            cfg = _SM90_128
        elif pv == "fp8" and cfg.block_n > 64 and dh > 64:
            cfg = AttnConfig(cfg.block_m, 64, cfg.num_warps, cfg.num_stages)
    if KEY_BLOCK % cfg.block_n:
        raise AssertionError(f"key tile {cfg.block_n} does not divide KEY_BLOCK {KEY_BLOCK}")
    return cfg


def prepare(geom, q, k, v, kv_lens):
    """A runner ``(q, k, v, kv_lens) -> out | (out, lse)``: the quantization pre-pass, then the kernel."""
    plat = tensor_platform(q.device)
    cfg = quant_config(plat, geom.Dh, device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None, geom.qk,
                       geom.pv)
    n_m = max(1, triton.cdiv(geom.Sq, cfg.block_m))
    pv8 = geom.pv == "fp8"
    const = {"HEAD_DIM": geom.Dh, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "HAS_KV_LENS": geom.kv_lens,
             "WRITE_LSE": geom.return_lse, "WIDE_DOT": q.device.type == "cpu", "PV_FP8": pv8, "KB": KEY_BLOCK}
    launch = PreparedLaunch(_quantized_attention_kernel, (n_m * geom.B * geom.Hq,), const, n_ptrs=9,
                            options=cfg.launch_options(), device=q.device)
    B, Sq, Sk, Hq, Hk, Dh = geom.B, geom.Sq, geom.Sk, geom.Hq, geom.Hk, geom.Dh
    ints = (Sq, Sk, Hq, Hk, Hq // Hk, n_m, key_blocks(Sk), geom.scale * LOG2E)
    qk, smooth, want_lse, device = geom.qk, geom.smooth_k, geom.return_lse, q.device
    no_index = torch.zeros(1, dtype=torch.int32, device=device)
    no_lse = torch.empty(1, dtype=torch.float32, device=device)

    quant_q = quantize_rows_launch(q, qk)
    quant_k = quantize_key_blocks_launch(k, qk, smooth, geom.kv_lens)
    quant_v = quantize_v_launch(v) if pv8 else None

    def run(q, k, v, kv_lens, *_):
        q8, qs = quant_q(q)
        k8, ks = quant_k(k, key_mean(k, kv_lens).contiguous() if smooth else None, kv_lens)
        v_in, v_scales = quant_v(v, channel_scales(v)) if pv8 else (v, no_lse)
        out = torch.empty((B, Sq, Hq, Dh), dtype=q.dtype, device=device)
        lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=device) if want_lse else no_lse
        vs = v_in.stride()  # bshd v: (sample, token, head); the fp8 codes [B, Hk, Dh, S_pad]: (sample, channel, head)
        v_strides = (vs[0], vs[2], vs[1]) if pv8 else (vs[0], vs[1], vs[2])
        launch(q8, qs, k8, ks, v_in, v_scales, out, lse, no_index if kv_lens is None else kv_lens,
               Sq * Hq * Dh, Hq * Dh, Dh, Sk * Hk * Dh, Hk * Dh, Dh, *v_strides, Sq * Hq * Dh, Hq * Dh, Dh, *ints)
        return (out, lse) if want_lse else out

    return run


def aot_variants(platform: str = "cuda"):
    """int8 and e4m3 codes, bf16 v, head dims 64 and 128, with kv_lens and lse: the builds the compile lanes
    check (e4m3 on sm_89+ and gfx950; on CUDA, head dim 128's sm_90 tiles from sm_90 on and its Ampere tiles
    as a build of their own)."""
    builds = [(qk, dh, quant_config(platform, dh, None, qk), "", False) for qk in ("int8", "fp8") for dh in (64, 128)]
    builds += [(qk, 128, quant_config(platform, 128, None, qk, "fp8"), "", True) for qk in ("int8", "fp8")]
    if platform == "cuda":
        builds.append(("int8", 128, RULE_SM8X[128], ",sm8x", False))
    prepass = [_prepass_variant(qk, dh) for qk in ("int8", "fp8") for dh in (64, 128)]
    prepass += [_key_prepass_variant(qk, dh, smooth) for qk in ("int8", "fp8") for dh in (64, 128)
                for smooth in (False, True)]
    prepass += [_v_prepass_variant(dh) for dh in (64, 128)]
    return [_variant(platform, qk, dh, cfg, tag, pv8) for qk, dh, cfg, tag, pv8 in builds] + prepass


def _prepass_variant(qk: str, dh: int):
    from sgl_diffusion_core import AotVariant

    sig = {"X": "*bf16", "C": "*i8" if qk == "int8" else "*fp8e4nv", "SC": "*fp32"}
    sig.update({n: "i32" for n in ("n_rows", "S", "H", "x_sb", "x_ss", "x_sh")})
    const = {"HEAD_DIM": dh, "ROWS": quant_rows(dh), "INT8": qk == "int8", "FNUZ": False, "BITS": False}
    sig.update({n: "constexpr" for n in const})
    return AotVariant(
        name=f"quantized_attention_prepass[{qk},bf16,Dh={dh},q per row]", kernel=_quantize_rows_kernel,
        signature=sig, constexprs=const, num_warps=4, num_stages=1, min_cuda_arch=89 if qk == "fp8" else 80,
        amd_targets=("gfx950",) if qk == "fp8" else ("gfx942", "gfx950"),
        divisible_by_16=("X", "C", "SC", "x_sb", "x_ss", "x_sh"),
    )


def _v_prepass_variant(dh: int):
    from sgl_diffusion_core import AotVariant

    sig = {"X": "*bf16", "SC": "*fp32", "C": "*fp8e4nv"}
    sig.update({n: "i32" for n in ("S", "S_PAD", "H", "n_blocks", "x_sb", "x_ss", "x_sh")})
    const = {"HEAD_DIM": dh, "KB": KEY_BLOCK, "FNUZ": False, "BITS": False}
    sig.update({n: "constexpr" for n in const})
    return AotVariant(
        name=f"quantized_attention_v_prepass[fp8,bf16,Dh={dh},transposed]", kernel=_quantize_v_kernel,
        signature=sig, constexprs=const, num_warps=4, num_stages=1, min_cuda_arch=89, amd_targets=("gfx950",),
        divisible_by_16=("X", "SC", "C", "S_PAD", "x_sb", "x_ss", "x_sh"),
    )


def _key_prepass_variant(qk: str, dh: int, smooth: bool):
    from sgl_diffusion_core import AotVariant

    sig = {"X": "*bf16", "MEAN": "*fp32", "LENS": "*i32", "C": "*i8" if qk == "int8" else "*fp8e4nv", "SC": "*fp32"}
    sig.update({n: "i32" for n in ("S", "H", "n_blocks", "x_sb", "x_ss", "x_sh")})
    const = {"HEAD_DIM": dh, "KB": KEY_BLOCK, "SMOOTH": smooth, "HAS_LENS": True, "INT8": qk == "int8",
             "FNUZ": False, "BITS": False}
    sig.update({n: "constexpr" for n in const})
    return AotVariant(
        name=f"quantized_attention_key_prepass[{qk},bf16,Dh={dh},smooth={smooth}]",
        kernel=_quantize_key_blocks_kernel, signature=sig, constexprs=const, num_warps=4, num_stages=1,
        min_cuda_arch=89 if qk == "fp8" else 80, amd_targets=("gfx950",) if qk == "fp8" else ("gfx942", "gfx950"),
        divisible_by_16=("X", "MEAN", "C", "SC", "x_sb", "x_ss", "x_sh"),
    )


def _variant(platform: str, qk: str, dh: int, cfg: AttnConfig, tag: str, pv8: bool = False):
    from sgl_diffusion_core import AotVariant

    code = "i8" if qk == "int8" else "fp8e4nv"
    sig = {"Q": f"*{code}", "QS": "*fp32", "K": f"*{code}", "KS": "*fp32", "V": "*fp8e4nv" if pv8 else "*bf16",
           "VS": "*fp32", "O": "*bf16", "LSE": "*fp32", "KV_LENS": "*i32"}
    sig.update({n: "i32" for n in ("q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh", "v_sb", "v_ss", "v_sh",
                                   "o_sb", "o_ss", "o_sh", "Sq", "Sk", "Hq", "Hk", "GROUP", "n_m", "n_kb")})
    sig["qk_scale"] = "fp32"
    const = {"HEAD_DIM": dh, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "HAS_KV_LENS": True,
             "WRITE_LSE": True, "WIDE_DOT": False, "PV_FP8": pv8, "KB": KEY_BLOCK}
    sig.update({n: "constexpr" for n in const})
    fp8 = qk == "fp8" or pv8
    hopper_tiles = platform == "cuda" and dh == 128 and not tag
    pv = "fp8" if pv8 else "bf16"
    return AotVariant(
        name=f"quantized_attention[{qk},pv={pv},Dh={dh},m={cfg.block_m},n={cfg.block_n},w={cfg.num_warps}{tag}]",
        kernel=_quantized_attention_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
        num_stages=cfg.num_stages, min_cuda_arch=90 if hopper_tiles else 89 if fp8 else 80,
        amd_targets=("gfx950",) if fp8 else ("gfx942", "gfx950"),
        divisible_by_16=("Q", "K", "V", "O", "LSE", "q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh",
                         "v_sb", "v_ss", "v_sh", "o_sb", "o_ss", "o_sh"),
    )
