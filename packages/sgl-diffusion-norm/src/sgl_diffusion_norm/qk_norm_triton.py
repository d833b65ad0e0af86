"""Triton kernel for ``qk_norm`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

One launch normalizes q and k: programs ``0 .. NQ-1`` take tiles of q's rows, the rest tiles
of k's. A row is one head ``(b, s, h)`` of ``Dh`` values (last dim contiguous); a program
holds a 2-D tile ``[HEADS, BLOCK_D]`` (``HEADS`` consecutive rows of the flattened
``(b, s, h)`` index) in registers and reduces along axis 1, so a tile of ~4 KB is read with
16-byte accesses and written once. Row ``r`` is found at ``(r // H) * ss + (r % H) * sh``
when samples and tokens merge (``sb == S * ss`` or ``B == 1``: contiguous q and views of a
fused QKV projection), else at ``b * sb + s * ss + h * sh``. Offsets are int64. ``Dh`` is a
constexpr (a model has one head size), so the column mask of odd sizes (72, 80, 100) keeps
its 16-byte alignment; ``S``, ``H`` and the row counts are runtime values.

Statistics in fp32 (centred variance for LayerNorm, in registers), one final rounding with
ties to even (``triton_math.narrow``: the interpreter would truncate). Contract ``close``.
x loads with the default L2 policy: with ``evict_first`` the three bench cases ran 1.8-2.4 points of
copy slower (H200, bf16: docs/benchmarks/hint_ab_h200.json).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math, warp_size, warps_for


@dataclass(frozen=True)
class HeadsConfig:
    """Rows (heads) per program, the padded head size, and warps; one per (Dh, dtype, platform)."""

    heads: int
    block_d: int
    num_warps: int

    def launch_options(self, platform: str) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}

    @classmethod
    def from_heuristic(cls, D: int, elem_bytes: int, platform: str, arch: int | str | None = None) -> HeadsConfig:
        return _heads_config(D, elem_bytes, platform)


# Bytes of x per program: 4 KB (16 heads of 128 bf16 values).
_TILE_BYTES = 4096


@functools.cache
def _heads_config(D: int, elem_bytes: int, platform: str) -> HeadsConfig:
    """The launch rule: ``4096 / (next_pow2(Dh) * itemsize)`` heads per program (at most 64), two
    16-byte accesses per thread; a 4 KB tile keeps every warp on whole 16-byte runs of a head and
    enough programs resident to saturate DRAM: 96.8-97.8% of copy at Wan / HunyuanVideo (H200,
    bf16, docs/benchmarks/qk_norm_bench_h200.json)."""
    warp = warp_size(platform)
    block_d = next_pow2(max(D, 1))
    heads = max(1, min(64, _TILE_BYTES // (block_d * elem_bytes)))
    tile = heads * block_d * elem_bytes
    warps = warps_for(tile, 16 * 2, warp)
    return HeadsConfig(heads=heads, block_d=block_d, num_warps=warps)


@triton.jit
def _norm_rows(X, Y, W, tile, rows, H, S,
               x_sb, x_ss, x_sh, y_sb, y_ss, y_sh, eps,
               D: tl.constexpr, BLOCK_D: tl.constexpr, HEADS: tl.constexpr,
               LAYER: tl.constexpr, HAS_W: tl.constexpr, W_MODE: tl.constexpr,
               X_MERGED: tl.constexpr, Y_MERGED: tl.constexpr, BIG: tl.constexpr):
    # row r -> (bs, h) with bs = b * S + s; int32 divisions unless there are 2^31 rows or more
    # (an int64 division is a long instruction sequence); offsets are always int64
    if BIG:
        r = tile * HEADS + tl.arange(0, HEADS).to(tl.int64)
    else:
        r = tile.to(tl.int32) * HEADS + tl.arange(0, HEADS)
    rmask = r < rows
    bs = r // H
    h = (r - bs * H).to(tl.int64)
    if X_MERGED and Y_MERGED:
        bs = bs.to(tl.int64)
        x_off = bs * x_ss + h * x_sh
        y_off = bs * y_ss + h * y_sh
    else:
        b = bs // S
        s = (bs - b * S).to(tl.int64)
        b = b.to(tl.int64)
        bs = bs.to(tl.int64)
        if X_MERGED:
            x_off = bs * x_ss + h * x_sh
        else:
            x_off = b * x_sb + s * x_ss + h * x_sh
        if Y_MERGED:
            y_off = bs * y_ss + h * y_sh
        else:
            y_off = b * y_sb + s * y_ss + h * y_sh
    cols = tl.arange(0, BLOCK_D)
    cmask = cols < D
    mask = rmask[:, None] & cmask[None, :]
    x = tl.load(X + x_off[:, None] + cols[None, :], mask=mask, other=0.0)
    x = x.to(tl.float32)
    if LAYER:
        mean = tl.sum(x, axis=1) / D
        xc = tl.where(mask, x - mean[:, None], 0.0)
        var = tl.sum(xc * xc, axis=1) / D
        y = xc * (1.0 / tl.sqrt(var + eps))[:, None]
    else:
        ms = tl.sum(x * x, axis=1) / D
        y = x * (1.0 / tl.sqrt(ms + eps))[:, None]
    if HAS_W:
        w = tl.load(W + cols, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        if W_MODE == 1:  # layer, weight dtype != x dtype: the eager chain casts the weight to x.dtype
            w = triton_math.round_to(w, Y.dtype.element_ty)
        if W_MODE == 2:  # rms, half weight of another dtype: the chain's products are in weight.dtype
            y = triton_math.round_to(triton_math.round_to(y, W.dtype.element_ty) * w[None, :], W.dtype.element_ty)
        else:
            y = y * w[None, :]
    tl.store(Y + y_off[:, None] + cols[None, :], triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["q_rows", "k_rows", "q_S", "k_S", "q_tiles", "eps"])
def _qk_norm_kernel(
    Q, K, QW, KW, QO, KO,
    q_rows, q_H, q_S, q_sb, q_ss, q_sh, qo_sb, qo_ss, qo_sh,
    k_rows, k_H, k_S, k_sb, k_ss, k_sh, ko_sb, ko_ss, ko_sh,
    q_tiles, eps,
    D: tl.constexpr, BLOCK_D: tl.constexpr, HEADS: tl.constexpr, LAYER: tl.constexpr,
    HAS_QW: tl.constexpr, HAS_KW: tl.constexpr, QW_MODE: tl.constexpr, KW_MODE: tl.constexpr,
    Q_MERGED: tl.constexpr, QO_MERGED: tl.constexpr, K_MERGED: tl.constexpr, KO_MERGED: tl.constexpr,
    BIG: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    if pid < q_tiles:
        _norm_rows(Q, QO, QW, pid, q_rows, q_H, q_S, q_sb, q_ss, q_sh, qo_sb, qo_ss, qo_sh, eps,
                   D, BLOCK_D, HEADS, LAYER, HAS_QW, QW_MODE, Q_MERGED, QO_MERGED, BIG)
    else:
        _norm_rows(K, KO, KW, pid - q_tiles, k_rows, k_H, k_S, k_sb, k_ss, k_sh, ko_sb, ko_ss, ko_sh, eps,
                   D, BLOCK_D, HEADS, LAYER, HAS_KW, KW_MODE, K_MERGED, KO_MERGED, BIG)


def config_for(D: int, dtype: torch.dtype, device: torch.device) -> HeadsConfig:
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    return HeadsConfig.from_heuristic(D, dtype.itemsize, plat, arch)


def weight_mode(layer: bool, x: torch.Tensor, w: torch.Tensor | None) -> int:
    """How the kernel applies a weight whose dtype differs from x's, to stay on the eager chain
    (``qk_norm_torch``): 0 as it is (fp32 product), 1 rounded to x.dtype first (LayerNorm),
    2 both factors and the product rounded to the weight's half dtype (RMS)."""
    if w is None or w.dtype == x.dtype:
        return 0
    if layer:
        return 1
    return 2 if w.dtype in (torch.float16, torch.bfloat16) else 0


def _strides(h, out_strides):
    """Runtime ints and the MERGED flag of one operand: (sb, ss, sh) of the input and the output."""
    osb, oss, osh = out_strides
    x_merged = h.B == 1 or h.sb == h.S * h.ss
    o_merged = h.B == 1 or osb == h.S * oss
    return (h.sb, h.ss, h.sh, osb, oss, osh), x_merged, o_merged


def prepare(geom, q, k, q_weight, k_weight, *, config: HeadsConfig | None = None):
    """A runner ``(q, k, q_weight, k_weight, norm, eps) -> (q_out, k_out)`` for one call signature
    (``norm`` is fixed by the plan: ``geom.norm``)."""
    from sgl_diffusion_core import PreparedLaunch

    gq, gk = geom.q, geom.k
    wide = q.dtype if q.dtype.itemsize >= k.dtype.itemsize else k.dtype
    cfg = config or config_for(geom.D, wide, q.device)
    inplace = geom.inplace

    def contiguous_strides(h):
        return (h.S * h.H * geom.D, h.H * geom.D, geom.D)

    q_out = (gq.sb, gq.ss, gq.sh) if inplace else contiguous_strides(gq)
    k_out = (gk.sb, gk.ss, gk.sh) if inplace else contiguous_strides(gk)
    q_str, q_m, qo_m = _strides(gq, q_out)
    k_str, k_m, ko_m = _strides(gk, k_out)
    q_tiles = -(-gq.rows // cfg.heads)
    k_tiles = -(-gk.rows // cfg.heads)
    scalars = (gq.rows, gq.H, gq.S, *q_str, gk.rows, gk.H, gk.S, *k_str, q_tiles)
    launch = PreparedLaunch(
        _qk_norm_kernel,
        (q_tiles + k_tiles,),
        {"D": geom.D, "BLOCK_D": cfg.block_d, "HEADS": cfg.heads, "LAYER": geom.norm == "layer",
         "HAS_QW": q_weight is not None, "HAS_KW": k_weight is not None,
         "QW_MODE": weight_mode(geom.norm == "layer", q, q_weight),
         "KW_MODE": weight_mode(geom.norm == "layer", k, k_weight),
         "Q_MERGED": q_m, "QO_MERGED": qo_m, "K_MERGED": k_m, "KO_MERGED": ko_m,
         "BIG": max(gq.rows, gk.rows) + cfg.heads >= 2**31},
        device=q.device,
        n_ptrs=6,
        options=cfg.launch_options(tensor_platform(q.device)),
    )
    q_shape, k_shape, device = gq.shape, gk.shape, q.device
    q_dtype, k_dtype = q.dtype, k.dtype

    if inplace:
        def run(q, k, q_weight, k_weight, norm, eps):
            launch(q, k, q if q_weight is None else q_weight, k if k_weight is None else k_weight, q, k,
                   *scalars, eps)
            return q, k
    else:
        def run(q, k, q_weight, k_weight, norm, eps):
            qo = torch.empty(q_shape, dtype=q_dtype, device=device)
            ko = torch.empty(k_shape, dtype=k_dtype, device=device)
            launch(q, k, q if q_weight is None else q_weight, k if k_weight is None else k_weight, qo, ko,
                   *scalars, eps)
            return qo, ko

    return run


# what a launch on [B, S, H, Dh] q / k (contiguous or views of a fused QKV projection) specializes as
# multiples of 16 where Dh is one: the pointers and the batch / token / head strides (Dh = 100: none)
_ALIGNED = ("Q", "K", "QW", "KW", "QO", "KO", "q_sb", "q_ss", "q_sh", "qo_sb", "qo_ss", "qo_sh", "k_sb", "k_ss", "k_sh",
            "ko_sb", "ko_ss", "ko_sh")


def aot_variants(platform: str = "cuda"):
    """Production head sizes (128: Wan, HunyuanVideo, FLUX; 64: SD3, LTX; 256; odd 72/80/100)
    in bf16/fp16/fp32, RMS with weights and LayerNorm without, contiguous q/k and QKV views."""
    from sgl_diffusion_core import AotVariant

    ints = ("q_rows", "q_H", "q_S", "q_sb", "q_ss", "q_sh", "qo_sb", "qo_ss", "qo_sh",
            "k_rows", "k_H", "k_S", "k_sb", "k_ss", "k_sh", "ko_sb", "ko_ss", "ko_sh", "q_tiles")
    consts = ("D", "BLOCK_D", "HEADS", "LAYER", "HAS_QW", "HAS_KW", "QW_MODE", "KW_MODE",
              "Q_MERGED", "QO_MERGED", "K_MERGED", "KO_MERGED", "BIG")
    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for D in (64, 128, 256, 72, 80, 100):
            for layer, merged in ((False, True), (True, False)):
                cfg = _heads_config(D, esize, platform)
                sig = {n: f"*{dt}" for n in ("Q", "K", "QW", "KW", "QO", "KO")}
                idx = "i64" if D == 256 else "i32"  # > 2^31-element tensors pass i64 strides
                sig.update({n: idx for n in ints})
                sig["eps"] = "fp32"
                sig.update({n: "constexpr" for n in consts})
                const = {"D": D, "BLOCK_D": cfg.block_d, "HEADS": cfg.heads, "LAYER": layer,
                         "HAS_QW": not layer, "HAS_KW": not layer, "QW_MODE": 0, "KW_MODE": 0,
                         "Q_MERGED": merged, "QO_MERGED": merged, "K_MERGED": merged, "KO_MERGED": merged,
                         "BIG": D == 256}
                name = (f"qk_norm[{dt},Dh={D},{'layer' if layer else 'rms+w'},heads={cfg.heads},"
                        f"w={cfg.num_warps},merged={merged},{idx}]")
                out.append(AotVariant(name=name, kernel=_qk_norm_kernel, signature=sig, constexprs=const,
                                      num_warps=cfg.num_warps, num_stages=1, options={"enable_fp_fusion": True},
                                      divisible_by_16=_ALIGNED if D % 16 == 0 else ()))
    return out
