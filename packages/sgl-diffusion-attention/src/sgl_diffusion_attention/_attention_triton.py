"""Flash-attention forward in Triton (CUDA and ROCm from one source; CPU under ``TRITON_INTERPRET=1``).

One program per (query block, sample, head), on a 1-D grid whose consecutive programs take
consecutive query blocks of one head (their K/V tiles are shared through L2). A program loads
its ``BLOCK_M`` queries once and walks the keys in ``BLOCK_N`` tiles: scores in fp32 with
``scale * log2(e)`` folded in so that the softmax uses ``exp2``, the running max and sum
rescale the fp32 accumulator (online softmax), and the probabilities are rounded to the input
dtype for the product with V (as every flash kernel does). The key loop stops at the sample's
length (``kv_lens[b]`` or its varlen segment): full tiles unmasked, one masked tail tile.

Every operand is addressed as ``base + b*sb + s*ss + h*sh + d`` (d contiguous), so bshd, bhsd
and strided views of a fused QKV projection are read in place; varlen segments start at their
``cu_seqlens`` row, GQA maps q head ``h`` to k/v head ``h // GROUP``. Per-sample base offsets
are 64-bit; offsets inside a sample are 32-bit (the op refuses a sample spanning 2**31
elements). A varlen grid has ``cdiv(max_seqlen_q, BLOCK_M)`` query blocks per (segment, head)
(the packed length when no bound is given); a program past its segment's end returns at once.
(A program looping over its segment's query blocks would make any grid correct, but the loop
nest spills scalar registers on gfx942.) An out-of-range ``kv_lens`` value or varlen segment is
clamped to the tensors and its rows written as NaN.

``WIDE_DOT`` (CPU, the interpreter only): the Triton interpreter (3.9) computes ``tl.dot`` of
bf16 operands wrong, so there the operands are widened to fp32 first; the probabilities are
still rounded to the input dtype before the product with V, as on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, UnsupportedInputError, device_arch, next_pow2, tensor_platform

LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class AttnConfig:
    """Tiles and launch options of one kernel build."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def launch_options(self) -> dict[str, int]:
        return {"num_warps": self.num_warps, "num_stages": self.num_stages}


# The launch rule: platform -> head-dim tile -> configuration. CUDA from a sweep on one H200 (bf16,
# docs/benchmarks/attention_sweep_h200.json): at head dim 128, 128 x 128 tiles with 8 warps and 3
# stages were the fastest of 8 configurations at FLUX (469 TFLOP/s), Wan 720p (492) and HunyuanVideo
# 720p with kv_lens (496), 2-3% over 128 x 64; at 64, 64 x 64 with 4 warps (418 at FLUX's tokens);
# at 256, 128 x 64 with 8 warps and 2 stages (382, 2.7x the 64 x 32 tiles). The same head-dim-128 order
# holds on an H100 with the scale in exp2's multiply-add (docs/benchmarks/attention_sweep_h100.json: 463 /
# 418 / 509 TFLOP/s at FLUX, Qwen-Image with kv_lens and Wan 720p). ROCm: not measured on
# hardware; tiles the compile lanes build without spills (tools/aot_compile.py reports registers,
# spills and LDS of every build). The interpreter (cpu) takes 32 x 32 tiles, so that small test
# shapes cross several tiles.
RULE: dict[str, dict[int, AttnConfig]] = {
    "cuda": {32: AttnConfig(128, 64, 4, 3), 64: AttnConfig(64, 64, 4, 3), 128: AttnConfig(128, 128, 8, 3),
             256: AttnConfig(128, 64, 8, 2)},
    "hip": {32: AttnConfig(128, 64, 4, 1), 64: AttnConfig(128, 64, 4, 1), 128: AttnConfig(128, 64, 4, 1),
            256: AttnConfig(64, 32, 4, 1)},
    "cpu": {32: AttnConfig(32, 32, 4, 1), 64: AttnConfig(32, 32, 4, 1), 128: AttnConfig(32, 32, 4, 1),
            256: AttnConfig(16, 16, 4, 1)},
}


def head_dim_tile(dh: int) -> int:
    return max(32, next_pow2(dh))


# CUDA below sm_90: 164 KB of shared memory holds three stages of 128 x 64 K/V tiles at head dim 128
# (not of 128 x 128 ones), and Ampere's MMA keeps the query tile in registers: at head dim 256 only
# 16 x 32 tiles compile without register spills for sm_80.
RULE_SM8X: dict[int, AttnConfig] = {128: AttnConfig(128, 64, 8, 3), 256: AttnConfig(16, 32, 4, 2)}


def config_for(platform: str, dh: int, arch: int | str | None = None) -> AttnConfig:
    tile = head_dim_tile(dh)
    if platform == "cuda" and isinstance(arch, int) and arch < 90 and tile in RULE_SM8X:
        return RULE_SM8X[tile]
    return RULE.get(platform, RULE["cuda"])[tile]


@triton.jit
def _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, n0, seqlen_k, offs_n, dmask, k_ss, v_ss, qk_scale,
              MASK_N: tl.constexpr, EVEN_D: tl.constexpr, WIDE_DOT: tl.constexpr):
    """One tile of keys: scores, online-softmax update, P @ V. ``MASK_N``: the tail tile."""
    rows = n0 + offs_n
    if MASK_N:
        if EVEN_D:
            kv_mask = rows[:, None] < seqlen_k
        else:
            kv_mask = (rows[:, None] < seqlen_k) & dmask[None, :]
        k = tl.load(k_ptrs + n0 * k_ss, mask=kv_mask, other=0.0)
        v = tl.load(v_ptrs + n0 * v_ss, mask=kv_mask, other=0.0)
    elif EVEN_D:
        k = tl.load(k_ptrs + n0 * k_ss)
        v = tl.load(v_ptrs + n0 * v_ss)
    else:
        k = tl.load(k_ptrs + n0 * k_ss, mask=dmask[None, :], other=0.0)
        v = tl.load(v_ptrs + n0 * v_ss, mask=dmask[None, :], other=0.0)
    if WIDE_DOT:
        k = k.to(tl.float32)
    s = tl.dot(q, tl.trans(k))
    return softmax_pv(acc, l_i, m_i, s, qk_scale, v, rows, seqlen_k, MASK_N, WIDE_DOT)


@triton.jit
def softmax_pv(acc, l_i, m_i, s, s_scale, v, rows, seqlen_k, MASK_N: tl.constexpr, WIDE_DOT: tl.constexpr):
    """The online-softmax step of one key tile (shared by the dense, block-sparse and 8-bit kernels):
    scores ``s`` (fp32) of keys ``rows`` (those past ``seqlen_k`` masked in the tail tile) times
    ``s_scale`` (> 0) are the base-2 logits; the running max (of the logits) and sum updated, ``acc``
    rescaled, ``p`` in v's dtype times ``v`` added. The scale is applied in the exponent's fused
    multiply-add (``s * s_scale - m``), not as a pass of its own over the tile."""
    if MASK_N:
        s = tl.where(rows[None, :] < seqlen_k, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1) * s_scale)
    alpha = tl.math.exp2(m_i - m_new)
    p = tl.math.exp2(s * s_scale - m_new[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    p = p.to(v.dtype)
    if WIDE_DOT:
        acc = tl.dot(p.to(tl.float32), v.to(tl.float32), acc)
    else:
        acc = tl.dot(p, v, acc)
    return acc, l_i, m_new


@triton.jit
def _load_q(Qb, m0, seqlen_q, q_ss, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
            WIDE_DOT: tl.constexpr):
    """The query tile of rows ``m0 .. m0 + BLOCK_M - 1`` (zeros past ``seqlen_q`` and the head dim)."""
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q_mask = (offs_m[:, None] < seqlen_q) & (offs_d < HEAD_DIM)[None, :]
    q = tl.load(Qb + offs_m[:, None] * q_ss + offs_d[None, :], mask=q_mask, other=0.0)
    if WIDE_DOT:
        q = q.to(tl.float32)
    return q


@triton.jit
def _store_rows(acc, l_i, m_i, bad, Ob, Lb, m0, seqlen_q, o_ss, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
                BLOCK_M: tl.constexpr, WRITE_LSE: tl.constexpr):
    """Output ``acc / l`` (0 for a row with no key, NaN where ``bad``) and, with ``WRITE_LSE``, the lse
    (natural log; -inf for a row with no key) of rows ``m0 .. m0 + BLOCK_M - 1``."""
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    q_mask = (offs_m[:, None] < seqlen_q) & (offs_d < HEAD_DIM)[None, :]
    empty = l_i == 0.0
    o = acc / tl.where(empty, 1.0, l_i)[:, None]
    o = tl.where(bad, float("nan"), o)
    tl.store(Ob + offs_m[:, None] * o_ss + offs_d[None, :], o.to(Ob.dtype.element_ty), mask=q_mask)
    if WRITE_LSE:
        lse = tl.where(empty, float("-inf"), (m_i + tl.math.log2(tl.where(empty, 1.0, l_i))) * 0.6931471805599453)
        lse = tl.where(bad, float("nan"), lse)
        tl.store(Lb + offs_m, lse, mask=offs_m < seqlen_q)


@triton.jit
def _query_block(Qb, Kb, Vb, Ob, Lb, m0, seqlen_q, seqlen_k,
                 q_ss, k_ss, v_ss, o_ss, qk_scale, bad,
                 HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 EVEN_D: tl.constexpr, WRITE_LSE: tl.constexpr, WIDE_DOT: tl.constexpr):
    """Attention of the queries ``m0 .. m0 + BLOCK_M - 1`` of one (sample, head) over its keys
    (``Qb`` .. ``Lb``: the operands at the sample and head's first row)."""
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < HEAD_DIM
    q = _load_q(Qb, m0, seqlen_q, q_ss, HEAD_DIM, BLOCK_D, BLOCK_M, WIDE_DOT)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    k_ptrs = Kb + offs_n[:, None] * k_ss + offs_d[None, :]
    v_ptrs = Vb + offs_n[:, None] * v_ss + offs_d[None, :]
    n_full = (seqlen_k // BLOCK_N) * BLOCK_N
    for n0 in range(0, n_full, BLOCK_N):
        acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, n0, seqlen_k, offs_n, dmask, k_ss, v_ss,
                                  qk_scale, False, EVEN_D, WIDE_DOT)
    if n_full < seqlen_k:
        acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, n_full, seqlen_k, offs_n, dmask, k_ss, v_ss,
                                  qk_scale, True, EVEN_D, WIDE_DOT)
    _store_rows(acc, l_i, m_i, bad, Ob, Lb, m0, seqlen_q, o_ss, HEAD_DIM, BLOCK_D, BLOCK_M, WRITE_LSE)


@triton.jit(do_not_specialize=["Sq", "Sk", "n_m"])
def _attention_fwd_kernel(
    Q, K, V, O, LSE, KV_LENS, CU_Q, CU_K,
    q_sb, q_ss, q_sh, k_sb, k_ss, k_sh, v_sb, v_ss, v_sh, o_sb, o_ss, o_sh, l_sb, l_sh,
    Sq, Sk, Hq, GROUP, n_m, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    EVEN_D: tl.constexpr, HAS_KV_LENS: tl.constexpr, VARLEN: tl.constexpr, WRITE_LSE: tl.constexpr,
    WIDE_DOT: tl.constexpr,
):
    pid = tl.program_id(0)
    bh = pid // n_m
    pid_m = pid - bh * n_m
    b = bh // Hq
    h = bh - b * Hq
    h64 = h.to(tl.int64)
    hk64 = (h // GROUP).to(tl.int64)
    if VARLEN:  # segment b: rows cu[b] .. cu[b+1]-1 of the packed tensors, clamped to them
        q0 = tl.load(CU_Q + b)
        q1 = tl.load(CU_Q + b + 1)
        k0 = tl.load(CU_K + b)
        k1 = tl.load(CU_K + b + 1)
        bad = (q0 < 0) | (q1 < q0) | (q1 > Sq) | (k0 < 0) | (k1 < k0) | (k1 > Sk)
        q0 = tl.minimum(tl.maximum(q0, 0), Sq)
        q1 = tl.minimum(tl.maximum(q1, q0), Sq)
        k0 = tl.minimum(tl.maximum(k0, 0), Sk)
        k1 = tl.minimum(tl.maximum(k1, k0), Sk)
        q0_64 = q0.to(tl.int64)
        k0_64 = k0.to(tl.int64)
        Qb = Q + (h64 * q_sh + q0_64 * q_ss)
        Kb = K + (hk64 * k_sh + k0_64 * k_ss)
        Vb = V + (hk64 * v_sh + k0_64 * v_ss)
        Ob = O + (h64 * o_sh + q0_64 * o_ss)
        Lb = LSE + (h64 * l_sh + q0_64)
        if pid_m * BLOCK_M < q1 - q0:  # a query block of this segment
            _query_block(Qb, Kb, Vb, Ob, Lb, pid_m * BLOCK_M, q1 - q0, k1 - k0, q_ss, k_ss, v_ss, o_ss, qk_scale, bad,
                         HEAD_DIM, BLOCK_D, BLOCK_M, BLOCK_N, EVEN_D, WRITE_LSE, WIDE_DOT)
    else:
        b64 = b.to(tl.int64)
        seqlen_k = Sk
        bad = Sk < 0  # False, as a tensor
        if HAS_KV_LENS:  # sample b attends to keys 0 .. kv_lens[b]-1
            kv = tl.load(KV_LENS + b)
            bad = (kv < 1) | (kv > Sk)
            seqlen_k = tl.minimum(tl.maximum(kv, 0), Sk).to(tl.int32)
        _query_block(Q + (b64 * q_sb + h64 * q_sh), K + (b64 * k_sb + hk64 * k_sh), V + (b64 * v_sb + hk64 * v_sh),
                     O + (b64 * o_sb + h64 * o_sh), LSE + (b64 * l_sb + h64 * l_sh), pid_m * BLOCK_M, Sq, seqlen_k,
                     q_ss, k_ss, v_ss, o_ss, qk_scale, bad, HEAD_DIM, BLOCK_D, BLOCK_M, BLOCK_N, EVEN_D, WRITE_LSE,
                     WIDE_DOT)


def _grid_m(geom, cfg: AttnConfig) -> int:
    """Query blocks per (sample, head): Sq's; varlen: max_seqlen_q's, or the packed length's (a bound)."""
    rows = geom.Sq if not geom.varlen or geom.max_seqlen_q is None else min(geom.max_seqlen_q, geom.Sq)
    return max(1, triton.cdiv(rows, cfg.block_m))


def _int_args(geom, n_m: int) -> tuple:
    lse_sb, lse_sh = (0, geom.Sq) if geom.varlen else (geom.Hq * geom.Sq, geom.Sq)
    strides = [getattr(getattr(geom, t), f) for t in ("q", "k", "v", "o") for f in ("sb", "ss", "sh")]
    return (*strides, lse_sb, lse_sh, geom.Sq, geom.Sk, geom.Hq, geom.Hq // geom.Hk, n_m, geom.scale * LOG2E)


def prepare(geom, q, k, v, kv_lens, cu_q, cu_k, out, *, config: AttnConfig | None = None):
    """A runner for one call signature: ``(q, k, v, kv_lens, cu_q, cu_k, out, *scalars) -> out | (out, lse)``."""
    plat = tensor_platform(q.device)
    cfg = config or config_for(plat, geom.Dh, device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None)
    n_m = _grid_m(geom, cfg)
    block_d = head_dim_tile(geom.Dh)
    const = {"HEAD_DIM": geom.Dh, "BLOCK_D": block_d, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
             "EVEN_D": block_d == geom.Dh, "HAS_KV_LENS": geom.kv_lens, "VARLEN": geom.varlen,
             "WRITE_LSE": geom.return_lse, "WIDE_DOT": q.device.type == "cpu"}
    launch = PreparedLaunch(_attention_fwd_kernel, (n_m * geom.B * geom.Hq,), const, n_ptrs=8,
                            options=cfg.launch_options(), device=q.device)
    ints = _int_args(geom, n_m)
    device, shape, dtype, lse_shape, want_lse = q.device, geom.out_shape, geom.dtype, geom.lse_shape, geom.return_lse
    like = q.is_contiguous() and not geom.given_out
    no_index = torch.zeros(1, dtype=torch.int32, device=device)
    no_lse = torch.empty(1, dtype=torch.float32, device=device)
    host_lens, host_cu = geom.kv_lens_host, geom.cu_host

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        # index values known on the host: copied to the device (a pageable copy returns at once)
        if host_lens:
            kv_lens = _to_device(kv_lens, "kv_lens", device)
        if host_cu:
            cu_q, cu_k = _to_device(cu_q, "cu_seqlens_q", device), _to_device(cu_k, "cu_seqlens_k", device)
        if out is None:
            out = torch.empty_like(q) if like else torch.empty(shape, dtype=dtype, device=device)
        lse = torch.empty(lse_shape, dtype=torch.float32, device=device) if want_lse else no_lse
        launch(q, k, v, out, lse, no_index if kv_lens is None else kv_lens, no_index if cu_q is None else cu_q,
               no_index if cu_k is None else cu_k, *ints)
        return (out, lse) if want_lse else out

    return run


def _to_device(t: torch.Tensor, name: str, device) -> torch.Tensor:
    """An index tensor given on the CPU, on the kernel's device (refused during CUDA-graph capture, where the
    copy would not be replayed with new values)."""
    if torch.cuda.is_current_stream_capturing():
        raise UnsupportedInputError(f"attention: {name} on the CPU cannot be copied to the device during CUDA-graph "
                                    f"capture; pass {name} on q's device")
    return t.to(device, non_blocking=True)


_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
_INTS = ("q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh", "v_sb", "v_ss", "v_sh", "o_sb", "o_ss", "o_sh",
         "l_sb", "l_sh", "Sq", "Sk", "Hq", "GROUP", "n_m")
# a real bshd / bhsd launch: 16-byte aligned tensors, head dim a multiple of 16 (so are the strides)
_ALIGNED = ("Q", "K", "V", "O", "LSE", "KV_LENS", "CU_Q", "CU_K", "q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh",
            "v_sb", "v_ss", "v_sh", "o_sb", "o_ss", "o_sh", "l_sb", "l_sh")
# (name, kv_lens, varlen, lse): what the rule serves; varlen builds for bf16 only
_MODES = (("dense", False, False, False), ("dense+lse", False, False, True), ("kv_lens", True, False, False),
          ("kv_lens+lse", True, False, True), ("varlen", False, True, False), ("varlen+lse", False, True, True))


def _variant(dt, name: str, dh: int, mode: str, kvl: bool, varlen: bool, lse: bool, cfg: AttnConfig, tag: str = "",
             min_cuda_arch: int = 0):
    from sgl_diffusion_core import AotVariant

    sig = {p: f"*{name}" for p in ("Q", "K", "V", "O")}
    sig.update({"LSE": "*fp32", "KV_LENS": "*i32", "CU_Q": "*i32", "CU_K": "*i32"})
    sig.update({n: "i32" for n in _INTS})
    sig["qk_scale"] = "fp32"
    const = {"HEAD_DIM": dh, "BLOCK_D": head_dim_tile(dh), "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
             "EVEN_D": True, "HAS_KV_LENS": kvl, "VARLEN": varlen, "WRITE_LSE": lse, "WIDE_DOT": False}
    sig.update({n: "constexpr" for n in const})
    return AotVariant(
        name=f"attention[{name},Dh={dh},{mode},m={cfg.block_m},n={cfg.block_n},w={cfg.num_warps},"
             f"s={cfg.num_stages}{tag}]",
        kernel=_attention_fwd_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
        num_stages=cfg.num_stages, divisible_by_16=_ALIGNED, min_cuda_arch=min_cuda_arch,
    )


def aot_variants(platform: str = "cuda"):
    """bf16 / fp16 at head dims 64, 128 and 256 (the rule's configurations), dense and kv_lens, with
    and without lse; varlen (with and without lse) in bf16: 30 builds. On CUDA, the sm_90+ builds at
    head dims 128 and 256 are skipped for sm_80, which builds the Ampere configurations (kv_lens + lse,
    bf16 and fp16) instead: 34 builds."""
    out = []
    for dt, name in _NAMES.items():
        for dh in (64, 128, 256):
            cfg = config_for(platform, dh)
            ampere = platform == "cuda" and dh in RULE_SM8X
            for mode, kvl, varlen, lse in _MODES:
                if not (varlen and dt is not torch.bfloat16):
                    out.append(_variant(dt, name, dh, mode, kvl, varlen, lse, cfg, min_cuda_arch=90 if ampere else 0))
            if ampere:
                out.append(_variant(dt, name, dh, "kv_lens+lse", True, False, True, RULE_SM8X[dh], ",sm8x"))
    return out
