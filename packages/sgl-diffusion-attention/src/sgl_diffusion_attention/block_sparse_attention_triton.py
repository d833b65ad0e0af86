"""Block-sparse flash-attention forward in Triton (CUDA and ROCm from one source; CPU under ``TRITON_INTERPRET=1``).

The dense kernel's structure (``_attention_triton``: its query load, key tile and epilogue are
shared) with the key loop replaced by a walk over the map: a program takes ``BLOCK_M`` queries of
one (sample, head), reads its query block's row of the map (``kv_counts[i]`` entries of
``kv_blocks[i]``) and, for each listed key block, runs the online-softmax update over its
``block_n // BLOCK_N`` key tiles, unmasked. The last key block, when it is partial and listed (last,
as entries increase), comes after the loop in masked tiles up to ``Sk``: the dense kernel's full
tiles then one masked tail, which keeps one copy of the tile in the loop. Kernel tiles divide the
map's blocks (both powers of two), so a program never straddles two query blocks. A query block
with no key block writes output 0 and lse -inf.

Map values a GPU call does not check (a count outside ``[0, width]``, an entry outside
``[0, n_kv_blocks)``, the partial last key block listed before another entry) are clamped so that
nothing is read outside the tensors, and the rows of that query block are written as NaN. Entries
are trusted to be increasing (a repeated block would be counted twice): ``block_map_from_mask`` and
``video_block_map`` build them so.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, device_arch, tensor_platform

from ._attention_triton import LOG2E, _key_tile, _load_q, _store_rows, config_for, head_dim_tile


@dataclass(frozen=True)
class SparseConfig:
    """Kernel tiles (dividing the map's blocks), launch options and the form of the key-tile loops of one
    build: ``unroll`` unrolls the ``block_n // BLOCK_N`` tiles of a listed block (straight code that the
    pipeliner overlaps across blocks), else they are a loop of their own."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    unroll: bool = True


def config_for_map(platform: str, dh: int, block: tuple[int, int], arch: int | str | None = None) -> SparseConfig:
    """The dense rule's tiles (``_attention_triton.config_for``) cut down to the map's blocks, with these
    changes, each the smallest that the compile lanes (``tools/aot_compile.py``) build with no spill:
    4 warps for a query tile under 128 rows on sm_90+ (one warpgroup's 64 rows); on ROCm at head dim 64,
    32-key tiles under 64-row query tiles (64 x 64 spills scalar registers on gfx942); below sm_90, the
    key tiles of a block as a loop (unrolled, they spill at head dim 128 on sm_80). Not swept on hardware."""
    cfg = config_for(platform, dh, arch)
    bm, bn = min(cfg.block_m, block[0]), min(cfg.block_n, block[1])
    ampere = platform == "cuda" and isinstance(arch, int) and arch < 90
    warps = cfg.num_warps if bm >= 128 or ampere else min(cfg.num_warps, 4)
    if platform == "hip" and dh <= 64 and bm <= 64:
        bn = min(bn, 32)
    return SparseConfig(bm, bn, warps, cfg.num_stages, unroll=not ampere)


@triton.jit(do_not_specialize=["Sq", "Sk", "n_m", "width", "n_kv"])
def _block_sparse_fwd_kernel(
    Q, K, V, O, LSE, KV_BLOCKS, KV_COUNTS,
    q_sb, q_ss, q_sh, k_sb, k_ss, k_sh, v_sb, v_ss, v_sh, o_sb, o_ss, o_sh, l_sb, l_sh,
    Sq, Sk, Hq, GROUP, n_m, width, n_kv, qk_scale,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    MAP_M: tl.constexpr, MAP_N: tl.constexpr, EVEN_D: tl.constexpr, WRITE_LSE: tl.constexpr,
    WIDE_DOT: tl.constexpr, UNROLL: tl.constexpr,
):
    pid = tl.program_id(0)
    bh = pid // n_m
    pid_m = pid - bh * n_m
    b = (bh // Hq).to(tl.int64)
    h = bh - (bh // Hq) * Hq
    h64 = h.to(tl.int64)
    hk64 = (h // GROUP).to(tl.int64)
    Qb = Q + (b * q_sb + h64 * q_sh)
    Kb = K + (b * k_sb + hk64 * k_sh)
    Vb = V + (b * v_sb + hk64 * v_sh)
    m0 = pid_m * BLOCK_M
    row = m0 // MAP_M
    count = tl.load(KV_COUNTS + row)
    bad = (count < 0) | (count > width)
    count = tl.minimum(tl.maximum(count, 0), width)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    dmask = offs_d < HEAD_DIM
    q = _load_q(Qb, m0, Sq, q_ss, HEAD_DIM, BLOCK_D, BLOCK_M, WIDE_DOT)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    k_ptrs = Kb + offs_n[:, None] * k_ss + offs_d[None, :]
    v_ptrs = Vb + offs_n[:, None] * v_ss + offs_d[None, :]
    entries = KV_BLOCKS + row.to(tl.int64) * width
    # the listed blocks of MAP_N keys unmasked, then the partial last key block (listed last) masked
    n_full = Sk // MAP_N
    last = tl.load(entries + tl.maximum(count - 1, 0))
    tail = (count > 0) & (n_full < n_kv) & (last == n_kv - 1)
    n_plain = count - tail.to(tl.int32)
    bad = bad | ((n_full == 0) & (n_plain > 0))
    n_plain = tl.where(n_full > 0, n_plain, 0)
    for i in range(0, n_plain):
        blk = tl.load(entries + i)
        bad = bad | (blk < 0) | (blk >= n_full)
        blk = tl.minimum(tl.maximum(blk, 0), n_full - 1)
        if UNROLL:
            for j in tl.static_range(MAP_N // BLOCK_N):
                acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, blk * MAP_N + j * BLOCK_N, Sk, offs_n,
                                          dmask, k_ss, v_ss, qk_scale, False, EVEN_D, WIDE_DOT)
        else:
            for j in range(0, MAP_N // BLOCK_N):
                acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, blk * MAP_N + j * BLOCK_N, Sk, offs_n,
                                          dmask, k_ss, v_ss, qk_scale, False, EVEN_D, WIDE_DOT)
    if tail:
        n0 = n_full * MAP_N
        if UNROLL:
            for j in tl.static_range(MAP_N // BLOCK_N):
                if n0 + j * BLOCK_N < Sk:
                    acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, n0 + j * BLOCK_N, Sk, offs_n, dmask,
                                              k_ss, v_ss, qk_scale, True, EVEN_D, WIDE_DOT)
        else:
            for j in range(0, tl.cdiv(Sk - n0, BLOCK_N)):
                acc, l_i, m_i = _key_tile(acc, l_i, m_i, q, k_ptrs, v_ptrs, n0 + j * BLOCK_N, Sk, offs_n, dmask, k_ss,
                                          v_ss, qk_scale, True, EVEN_D, WIDE_DOT)
    _store_rows(acc, l_i, m_i, bad, O + (b * o_sb + h64 * o_sh), LSE + (b * l_sb + h64 * l_sh), m0, Sq, o_ss,
                HEAD_DIM, BLOCK_D, BLOCK_M, WRITE_LSE)


def _int_args(geom, n_m: int, width: int) -> tuple:
    strides = [getattr(getattr(geom, t), f) for t in ("q", "k", "v", "o") for f in ("sb", "ss", "sh")]
    return (*strides, geom.Hq * geom.Sq, geom.Sq, geom.Sq, geom.Sk, geom.Hq, geom.Hq // geom.Hk, n_m, width,
            geom.n_kv_blocks, geom.scale * LOG2E)


def prepare(geom, q, k, v, kv_blocks, kv_counts, *, config: SparseConfig | None = None):
    """A runner for one call signature: ``(q, k, v, kv_blocks, kv_counts, *scalars) -> out | (out, lse)``."""
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    cfg = config or config_for_map(plat, geom.Dh, geom.block, arch)
    n_m = triton.cdiv(geom.Sq, cfg.block_m)
    block_d = head_dim_tile(geom.Dh)
    const = {"HEAD_DIM": geom.Dh, "BLOCK_D": block_d, "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
             "MAP_M": geom.block[0], "MAP_N": geom.block[1], "EVEN_D": block_d == geom.Dh,
             "WRITE_LSE": geom.return_lse, "WIDE_DOT": q.device.type == "cpu", "UNROLL": cfg.unroll}
    launch = PreparedLaunch(_block_sparse_fwd_kernel, (n_m * geom.B * geom.Hq,), const, n_ptrs=7,
                            options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}, device=q.device)
    ints = _int_args(geom, n_m, kv_blocks.shape[1])
    device, shape, dtype, want_lse = q.device, geom.out_shape, geom.dtype, geom.return_lse
    lse_shape = (geom.B, geom.Hq, geom.Sq)
    no_lse = torch.empty(1, dtype=torch.float32, device=device)

    def run(q, k, v, kv_blocks, kv_counts, *_):
        out = torch.empty(shape, dtype=dtype, device=device)
        lse = torch.empty(lse_shape, dtype=torch.float32, device=device) if want_lse else no_lse
        launch(q, k, v, out, lse, kv_blocks, kv_counts, *ints)
        return (out, lse) if want_lse else out

    return run


_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
_INTS = ("q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh", "v_sb", "v_ss", "v_sh", "o_sb", "o_ss", "o_sh",
         "l_sb", "l_sh", "Sq", "Sk", "Hq", "GROUP", "n_m", "width", "n_kv")
# a real launch: 16-byte aligned tensors, head dim a multiple of 16 (so are the strides)
_ALIGNED = ("Q", "K", "V", "O", "LSE", "KV_BLOCKS", "KV_COUNTS", "q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh",
            "v_sb", "v_ss", "v_sh", "o_sb", "o_ss", "o_sh", "l_sb", "l_sh")


def _variant(name: str, dh: int, block: tuple[int, int], lse: bool, cfg: SparseConfig, tag: str,
             min_cuda_arch: int):
    from sgl_diffusion_core import AotVariant

    sig = {p: f"*{name}" for p in ("Q", "K", "V", "O")}
    sig.update({"LSE": "*fp32", "KV_BLOCKS": "*i32", "KV_COUNTS": "*i32", **{n: "i32" for n in _INTS},
                "qk_scale": "fp32"})
    const = {"HEAD_DIM": dh, "BLOCK_D": head_dim_tile(dh), "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
             "MAP_M": block[0], "MAP_N": block[1], "EVEN_D": True, "WRITE_LSE": lse, "WIDE_DOT": False,
             "UNROLL": cfg.unroll}
    sig.update({n: "constexpr" for n in const})
    loop = "" if cfg.unroll else ",loop"
    return AotVariant(
        name=f"block_sparse_attention[{name},Dh={dh},map={block[0]}x{block[1]},{'lse' if lse else 'out'},"
             f"m={cfg.block_m},n={cfg.block_n},w={cfg.num_warps},s={cfg.num_stages}{loop}{tag}]",
        kernel=_block_sparse_fwd_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
        num_stages=cfg.num_stages, divisible_by_16=_ALIGNED, min_cuda_arch=min_cuda_arch,
    )


def aot_variants(platform: str = "cuda"):
    """bf16 / fp16 at head dims 64 and 128, maps of 64 x 64 and 128 x 128 blocks, with and without lse:
    16 builds. On CUDA each is listed twice (32): the sm_90 build (sm_90+) and the sm_8x one (``,sm8x``:
    the key tiles of a block as a loop, ``RULE_SM8X``'s tiles), which every CUDA target builds."""
    out = []
    for name in _NAMES.values():
        for dh in (64, 128):
            for block in ((64, 64), (128, 128)):
                for lse in (False, True):
                    cfg = config_for_map(platform, dh, block, 90 if platform == "cuda" else None)
                    old = config_for_map(platform, dh, block, 80) if platform == "cuda" else cfg
                    out.append(_variant(name, dh, block, lse, cfg, "", 90 if old != cfg else 0))
                    if old != cfg:
                        out.append(_variant(name, dh, block, lse, old, ",sm8x", 0))
    return out
