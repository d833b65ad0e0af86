"""Triton kernel of the rope family (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``); private
because ``apply_rope``, ``apply_rope_qk``, ``rope_3d`` and ``qk_norm_rope`` share it.

One program per (token, block of ``HB`` heads) of q or of k (q's head blocks first, then
k's, so q and k go in one launch), on a flat grid where a token's blocks are adjacent.
The angles of a token are read or computed once per program and reused for its ``HB``
heads:

* ``ANGLES == 0``: a cos/sin table, ``[S, W]`` or ``[B, S, W]`` with ``W = r/2`` (one
  angle per pair) or ``W = r`` (one value per position), or a complex ``freqs_cis``
  (``view_as_real``: column stride 2, sin at element offset 1);
* ``ANGLES == 1``: from the token's (t, h, w) position on a ``grid_thw`` grid
  (``s = (t * gh + h) * gw + w``) and a per-pair inverse-frequency vector ``FREQ`` of r/2
  fp32 values (the only table in memory: 256 bytes at Dh=128);
* ``ANGLES == 2``: the same from explicit position ids ``[B, S, 3]`` (or ``[S, 3]``).

Pairs: rotate-half (``INTERLEAVED=False``) rotates element ``j`` with ``j + r/2``;
interleaved rotates ``2j`` with ``2j + 1``. The rotary part is read as two ``[HB, r/2]``
tiles; the tail ``r .. Dh`` is copied (out of place), normalized (qk_norm_rope) or left
alone (in place). ``NORM`` (1 = RMS, 2 = LayerNorm over Dh, fp32 statistics) runs before
the rotation. ``EXACT`` (the ``triton_exact`` backend, :func:`prepare_exact`) reproduces
the eager chain ``x * cos + rotate(x) * sin`` with every product and the sum rounded to
``T`` (the promoted dtype of x and the table) and no FMA (the launch sets
``enable_fp_fusion=False``); otherwise fp32 math and one rounding. Token and head offsets
are int64 (tensors over 2^31 elements).
"""

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2, tensor_platform, triton_math, warp_size, warps_for

from ._geometry import runner, union

TL = triton_math.TL_DTYPES


@triton.jit
def _rotate_heads(
    X, XO, W, x_base, o_base, sh, osh, h0, H,
    c1, s1, c2, s2, eps, j, jm, i1, i2,
    DH: tl.constexpr, R2: tl.constexpr, HALF: tl.constexpr, TAIL: tl.constexpr, TAILB: tl.constexpr,
    HB: tl.constexpr, INTERLEAVED: tl.constexpr, NORM: tl.constexpr, HAS_W: tl.constexpr,
    WRITE_TAIL: tl.constexpr, EXACT: tl.constexpr, T: tl.constexpr, OUT: tl.constexpr,
):
    hh = h0 + tl.arange(0, HB)
    hm = hh < H
    rows = hh.to(tl.int64)[:, None]
    m = hm[:, None] & jm[None, :]
    xp = X + x_base + rows * sh
    op = XO + o_base + rows * osh
    if INTERLEAVED:
        # pairs are adjacent: one contiguous [HB, 2*HALF] load (16-byte accesses), split in registers
        d = tl.arange(0, 2 * HALF)
        md = hm[:, None] & (d < 2 * R2)[None, :]
        x1, x2 = tl.split(tl.reshape(triton_math.widen(tl.load(xp + d[None, :], mask=md, other=0.0)),
                                     [HB, HALF, 2]))
    else:
        x1 = triton_math.widen(tl.load(xp + i1[None, :], mask=m, other=0.0))
        x2 = triton_math.widen(tl.load(xp + i2[None, :], mask=m, other=0.0))
    HAS_TAIL: tl.constexpr = TAIL > 0 and (NORM != 0 or WRITE_TAIL)
    t = tl.arange(0, TAILB)
    tm = hm[:, None] & (t < TAIL)[None, :]
    xt = tl.zeros([HB, TAILB], dtype=tl.float32)
    if HAS_TAIL:
        xt = triton_math.widen(tl.load(xp + 2 * R2 + t[None, :], mask=tm, other=0.0))
    if NORM != 0:
        if NORM == 2:
            mean = (tl.sum(x1, axis=1) + tl.sum(x2, axis=1) + tl.sum(xt, axis=1)) / DH
            x1 = tl.where(m, x1 - mean[:, None], 0.0)
            x2 = tl.where(m, x2 - mean[:, None], 0.0)
            xt = tl.where(tm, xt - mean[:, None], 0.0)
        ssq = tl.sum(x1 * x1, axis=1) + tl.sum(x2 * x2, axis=1) + tl.sum(xt * xt, axis=1)
        rstd = 1.0 / tl.sqrt(ssq / DH + eps)
        x1 = x1 * rstd[:, None]
        x2 = x2 * rstd[:, None]
        xt = xt * rstd[:, None]
        if HAS_W:
            if INTERLEAVED:
                dw = tl.arange(0, 2 * HALF)
                w1, w2 = tl.split(tl.reshape(triton_math.widen(tl.load(W + dw, mask=dw < 2 * R2, other=0.0)),
                                             [HALF, 2]))
            else:
                w1 = triton_math.widen(tl.load(W + i1, mask=jm, other=0.0))
                w2 = triton_math.widen(tl.load(W + i2, mask=jm, other=0.0))
            x1 = x1 * w1[None, :]
            x2 = x2 * w2[None, :]
            if HAS_TAIL:
                xt = xt * triton_math.widen(tl.load(W + 2 * R2 + t, mask=t < TAIL, other=0.0))[None, :]
    if EXACT:
        o1 = triton_math.round_to(
            triton_math.round_to(x1 * c1[None, :], T) - triton_math.round_to(x2 * s1[None, :], T), T)
        o2 = triton_math.round_to(
            triton_math.round_to(x2 * c2[None, :], T) + triton_math.round_to(x1 * s2[None, :], T), T)
    else:
        o1 = x1 * c1[None, :] - x2 * s1[None, :]
        o2 = x2 * c2[None, :] + x1 * s2[None, :]
    if INTERLEAVED:
        o = tl.reshape(tl.join(triton_math.narrow(o1, OUT), triton_math.narrow(o2, OUT)), [HB, 2 * HALF])
        tl.store(op + d[None, :], o, mask=md)
    else:
        tl.store(op + i1[None, :], triton_math.narrow(o1, OUT), mask=m)
        tl.store(op + i2[None, :], triton_math.narrow(o2, OUT), mask=m)
    if HAS_TAIL:
        tl.store(op + 2 * R2 + t[None, :], triton_math.narrow(xt, OUT), mask=tm)


@triton.jit(do_not_specialize=["S", "gh", "gw", "eps"])
def _rope_kernel(
    Q, K, QO, KO, COS, SIN, FREQ, POS, QW, KW,
    S, HQ, HK, NQB, NB,
    q_sb, q_ss, q_sh, k_sb, k_ss, k_sh,
    qo_sb, qo_ss, qo_sh, ko_sb, ko_ss, ko_sh,
    c_sb, c_ss, c_sc, s_off,
    p_sb, p_ss, p_sa,
    gh, gw, ax1, ax2,
    eps,
    DH: tl.constexpr, R2: tl.constexpr, HALF: tl.constexpr, TAIL: tl.constexpr, TAILB: tl.constexpr,
    HB: tl.constexpr, INTERLEAVED: tl.constexpr, FULL: tl.constexpr, ANGLES: tl.constexpr,
    NORM: tl.constexpr, HAS_QW: tl.constexpr, HAS_KW: tl.constexpr, WRITE_TAIL: tl.constexpr,
    EXACT: tl.constexpr, T: tl.constexpr, OUT: tl.constexpr,
):
    # one flat grid, head blocks of a token adjacent: its table row is read from DRAM once and
    # the other blocks hit the cache (a (token, block) 2-D grid streamed the table once per
    # head block: +12% bytes at Wan)
    pid = tl.program_id(0).to(tl.int64)
    tok = pid // NB
    hb = (pid - tok * NB).to(tl.int32)
    b = tok // S
    s = tok - b * S
    j = tl.arange(0, HALF)
    jm = j < R2
    if INTERLEAVED:
        i1 = 2 * j
        i2 = 2 * j + 1
    else:
        i1 = j
        i2 = j + R2
    if ANGLES == 0:
        cb = b * c_sb + s * c_ss
        if FULL and INTERLEAVED:
            dc = tl.arange(0, 2 * HALF)
            mc = dc < 2 * R2
            c1, c2 = tl.split(tl.reshape(triton_math.widen(tl.load(COS + cb + dc * c_sc, mask=mc, other=0.0)),
                                         [HALF, 2]))
            s1, s2 = tl.split(tl.reshape(triton_math.widen(tl.load(SIN + s_off + cb + dc * c_sc, mask=mc,
                                                                   other=0.0)), [HALF, 2]))
        elif FULL:
            c1 = triton_math.widen(tl.load(COS + cb + i1 * c_sc, mask=jm, other=0.0))
            c2 = triton_math.widen(tl.load(COS + cb + i2 * c_sc, mask=jm, other=0.0))
            s1 = triton_math.widen(tl.load(SIN + s_off + cb + i1 * c_sc, mask=jm, other=0.0))
            s2 = triton_math.widen(tl.load(SIN + s_off + cb + i2 * c_sc, mask=jm, other=0.0))
        else:
            c1 = triton_math.widen(tl.load(COS + cb + j * c_sc, mask=jm, other=0.0))
            s1 = triton_math.widen(tl.load(SIN + s_off + cb + j * c_sc, mask=jm, other=0.0))
            c2 = c1
            s2 = s1
    else:
        if ANGLES == 1:
            plane = gh * gw
            pt = s // plane
            rem = s - pt * plane
            ph = rem // gw
            pw = rem - ph * gw
            p0 = pt.to(tl.float32)
            p1 = ph.to(tl.float32)
            p2 = pw.to(tl.float32)
        else:
            pp = POS + b * p_sb + s * p_ss
            p0 = tl.load(pp).to(tl.float32)
            p1 = tl.load(pp + p_sa).to(tl.float32)
            p2 = tl.load(pp + 2 * p_sa).to(tl.float32)
        inv = tl.load(FREQ + j, mask=jm, other=0.0)
        ang = tl.where(j < ax1, p0, tl.where(j < ax2, p1, p2)) * inv
        c1 = tl.cos(ang)
        s1 = tl.sin(ang)
        c2 = c1
        s2 = s1
    if hb < NQB:
        _rotate_heads(Q, QO, QW, b * q_sb + s * q_ss, b * qo_sb + s * qo_ss, q_sh, qo_sh, hb * HB, HQ,
                      c1, s1, c2, s2, eps, j, jm, i1, i2,
                      DH, R2, HALF, TAIL, TAILB, HB, INTERLEAVED, NORM, HAS_QW, WRITE_TAIL, EXACT, T, OUT)
    else:
        _rotate_heads(K, KO, KW, b * k_sb + s * k_ss, b * ko_sb + s * ko_ss, k_sh, ko_sh, (hb - NQB) * HB, HK,
                      c1, s1, c2, s2, eps, j, jm, i1, i2,
                      DH, R2, HALF, TAIL, TAILB, HB, INTERLEAVED, NORM, HAS_KW, WRITE_TAIL, EXACT, T, OUT)


def heads_per_program(Dh: int, H: int, elem_bytes: int) -> int:
    """Launch rule: heads per program, about 2 KB of x (8 heads of 128 bf16 values), at most the
    head count; a token's angles are then read or computed once for that many heads while a
    program stays small enough to keep the grid full (``apply_rope`` 96-100% and ``rope_3d``
    99-100% of copy at Wan and HunyuanVideo: docs/benchmarks/apply_rope_bench_h200.json,
    docs/benchmarks/rope_3d_bench_h200.json)."""
    return max(1, min(next_pow2(H), 2048 // (next_pow2(Dh) * elem_bytes) or 1))


def _num_warps(HB: int, half: int, platform: str) -> int:
    """Launch rule: 8 values of each half-tile per thread (two 16-byte accesses per half at bf16),
    so every load is a full vector access (measured with :func:`heads_per_program`:
    docs/benchmarks/apply_rope_bench_h200.json)."""
    return warps_for(HB * half, 8, warp_size(platform))


def _prepare(geom, q, k, cos, sin, pos, q_weight, k_weight):
    """A runner ``(q, k, cos, sin, pos, q_weight, k_weight, eps) -> (q_out, k_out)`` for one signature."""
    g = geom
    plat = tensor_platform(q.device)
    half = next_pow2(g.r // 2)
    tailb = next_pow2(g.Dh - g.r) if g.Dh > g.r else 1
    HB = heads_per_program(g.Dh, max(g.q.H, g.k.H if g.k else 1), q.element_size())
    warps = _num_warps(HB, half, plat)
    nqb = triton.cdiv(g.q.H, HB)
    nkb = triton.cdiv(g.k.H, HB) if g.k is not None else 0
    freq = None
    if g.angles != 0:
        freq = torch.tensor(g.inv_freq, dtype=torch.float32, device=q.device)
    const = {
        "DH": g.Dh, "R2": g.r // 2, "HALF": half, "TAIL": g.Dh - g.r, "TAILB": tailb, "HB": HB,
        "INTERLEAVED": g.interleaved, "FULL": g.full_table, "ANGLES": g.angles, "NORM": g.norm,
        "HAS_QW": q_weight is not None, "HAS_KW": k_weight is not None, "WRITE_TAIL": not g.inplace,
        "EXACT": g.exact, "T": TL[g.t], "OUT": TL[g.out],
    }
    launch = PreparedLaunch(
        _rope_kernel, (g.B * g.S * (nqb + nkb),), const, device=q.device, n_ptrs=10,
        options={"num_warps": warps, "num_stages": 1}, fp_fusion=not g.exact,
    )
    kq, kk = g.q, g.k if g.k is not None else g.q
    tab = g.table
    scalars = (
        g.S, g.q.H, g.k.H if g.k is not None else 0, nqb, nqb + nkb,
        kq.sb, kq.ss, kq.sh, kk.sb, kk.ss, kk.sh,
        g.q_out.sb, g.q_out.ss, g.q_out.sh,
        *((g.k_out.sb, g.k_out.ss, g.k_out.sh) if g.k is not None else (0, 0, 0)),
        tab.sb, tab.ss, tab.sc, tab.s_off,
        *g.pos_strides,
        g.grid_hw[0], g.grid_hw[1], g.axis_bounds[0], g.axis_bounds[1],
    )
    q_shape, k_shape = g.q_out.shape, g.k_out.shape if g.k is not None else None
    dtype, device, inplace = g.out, q.device, g.inplace

    def run(q, k, cos, sin, pos, q_weight, k_weight, eps):
        qo = q if inplace else torch.empty(q_shape, dtype=dtype, device=device)
        ko = None
        if k is not None:
            ko = k if inplace else torch.empty(k_shape, dtype=dtype, device=device)
        if cos is not None and sin is None:  # complex table: real parts, imaginary at offset 1
            cos = sin = torch.view_as_real(cos)
        launch(q, q if k is None else k, qo, qo if ko is None else ko,
               q if cos is None else cos, q if sin is None else sin, q if freq is None else freq,
               q if pos is None else pos, q if q_weight is None else q_weight,
               q if k_weight is None else k_weight, *scalars, eps)
        return qo, ko

    return run


def prepare(geom, *tensors):
    """The ``triton`` backend (contract ``close``: fp32 math, one rounding): a runner taking the
    op's own tensors (and ``eps`` for ``qk_norm_rope``), for one call signature."""
    return runner(geom.op, _prepare(geom, *union(geom.op, tensors)))


def prepare_exact(geom, *tensors):
    """The ``triton_exact`` backend: the same kernel in its exact mode (every product and sum
    rounded to the eager dtype, no FMA); real tables only (its capabilities)."""
    g = dataclasses.replace(geom, exact=True)
    return runner(g.op, _prepare(g, *union(g.op, tensors)))


# what a launch on [B, S, H, 128] q / k (contiguous or a view of a fused QKV projection) and a [.., S, R]
# table specializes as multiples of 16: the pointers, the token / head / batch strides, the table's rows
_ALIGNED = ("Q", "K", "QO", "KO", "COS", "SIN", "FREQ", "POS", "QW", "KW", "q_sb", "q_ss", "q_sh", "k_sb", "k_ss",
            "k_sh", "qo_sb", "qo_ss", "qo_sh", "ko_sb", "ko_ss", "ko_sh", "c_sb", "c_ss")


def _variants(platform: str, op: str, combos):
    """AOT variants of the kernel at Dh=128, bf16 q/k (Wan 40 heads, HunyuanVideo 24 heads), one
    per ``(interleaved, angles, exact, norm, table dtype)`` combination."""
    from sgl_diffusion_core import AotVariant

    ptr_names = ("Q", "K", "QO", "KO", "COS", "SIN", "FREQ", "POS", "QW", "KW")
    int_names = ("S", "HQ", "HK", "NQB", "NB", "q_sb", "q_ss", "q_sh", "k_sb", "k_ss", "k_sh", "qo_sb", "qo_ss",
                 "qo_sh", "ko_sb", "ko_ss", "ko_sh", "c_sb", "c_ss", "c_sc", "s_off", "p_sb", "p_ss", "p_sa", "gh",
                 "gw", "ax1", "ax2")
    const_names = ("DH", "R2", "HALF", "TAIL", "TAILB", "HB", "INTERLEAVED", "FULL", "ANGLES", "NORM", "HAS_QW",
                   "HAS_KW", "WRITE_TAIL", "EXACT", "T", "OUT")
    HB = heads_per_program(128, 40, 2)
    out = []
    for interleaved, angles, exact, norm, tdt in combos:
        sig = {n: "*bf16" for n in ptr_names}
        sig.update({"COS": f"*{tdt}", "SIN": f"*{tdt}", "FREQ": "*fp32", "POS": "*fp32"})
        sig.update({n: "i32" for n in int_names})
        sig["eps"] = "fp32"
        sig.update({n: "constexpr" for n in const_names})
        const = {"DH": 128, "R2": 64, "HALF": 64, "TAIL": 0, "TAILB": 1, "HB": HB, "INTERLEAVED": interleaved,
                 "FULL": False, "ANGLES": angles, "NORM": norm, "HAS_QW": norm != 0, "HAS_KW": norm != 0,
                 "WRITE_TAIL": True, "EXACT": exact, "T": tl.float32 if tdt == "fp32" else tl.bfloat16,
                 "OUT": tl.bfloat16}
        name = (f"{op}[bf16,Dh=128,HB={HB},{'interleaved' if interleaved else 'rotate-half'},"
                f"angles={('table', 'grid', 'pos')[angles]},cos={tdt},{'exact' if exact else 'close'},norm={norm}]")
        out.append(AotVariant(name=name, kernel=_rope_kernel, signature=sig, constexprs=const,
                              num_warps=_num_warps(HB, 64, platform), options={"enable_fp_fusion": not exact},
                              divisible_by_16=_ALIGNED))
    return out


_PAIRS = (False, True)


def aot_apply_rope(platform: str = "cuda"):
    return _variants(platform, "apply_rope", [(i, 0, False, 0, t) for i in _PAIRS for t in ("fp32", "bf16")])


def aot_apply_rope_qk(platform: str = "cuda"):
    return _variants(platform, "apply_rope_qk", [(i, 0, False, 0, "fp32") for i in _PAIRS])


def aot_rope_3d(platform: str = "cuda"):
    return _variants(platform, "rope_3d", [(i, a, False, 0, "fp32") for i in _PAIRS for a in (1, 2)])


def aot_qk_norm_rope(platform: str = "cuda"):
    return _variants(platform, "qk_norm_rope", [(i, 0, False, n, "fp32") for i in _PAIRS for n in (1, 2)])


def aot_apply_rope_exact(platform: str = "cuda"):
    return _variants(platform, "apply_rope_exact", [(i, 0, True, 0, t) for i in _PAIRS for t in ("fp32", "bf16")])


def aot_apply_rope_qk_exact(platform: str = "cuda"):
    return _variants(platform, "apply_rope_qk_exact", [(i, 0, True, 0, "fp32") for i in _PAIRS])
