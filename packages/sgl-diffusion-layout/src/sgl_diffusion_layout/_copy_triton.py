"""The two Triton data-movement kernels most layout ops are made of (CUDA, ROCm; CPU under
``TRITON_INTERPRET=1``), and their launch configuration.

``_permute_kernel``: ``dst[r0, r1, r2, m, n] = src[r0, r1, r2, m, n]`` through arbitrary
element strides for ``r0, r1, r2, m`` and a contiguous ``n`` on both sides. One program
per (rows ``(r0, r1, BR consecutive r2)``, tile of ``m``): the row block is decomposed once
per program (three scalar divisions), never per element; each program moves a
``[BR, BM, BN]`` tile (up to 16 KB) with 16-byte accesses along ``n``. Up to three tensors of one geometry (q, k, v)
share a launch: ``program_id(2)`` picks the pair of pointers.

``_gather_kernel``: ``dst[r, m, n] = src[idx[r], m, n]``, the source row ``i`` decomposed
as ``(i // R2, i % R2)`` with its own strides: varlen pack (``idx`` = valid tokens of a
``[B, S, ...]`` tensor) and scatter (``idx`` = inverse map). ``idx[r]`` in ``[LO, 0)`` is
padding (zeros: the inverse map's ``-1``); outside ``[LO, NSRC)`` it is out of range, which
only an unchecked call lets through: the row is NaN and nothing is read.

Data movement never converts values, so the result is bit-identical by construction; all
offsets are int64 (the program ids are widened before any multiplication). The loads take the
default L2 policy: with ``evict_first`` the joint, Ulysses and USP benches ran 1.1-4.0 points of copy
slower at 17 of their 20 cases and tied at the other three, HunyuanVideo's joint cat / split and USP split
at 8 ranks (H200, bf16: docs/benchmarks/hint_ab_h200.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2, tensor_platform, warp_size, warps_for

from ._geometry import GatherGeom, PermuteGeom


@dataclass(frozen=True)
class CopyConfig:
    """A ``[BM, BN]`` tile per program: BN along the contiguous dim, BM along the strided one."""

    bm: int
    bn: int
    num_warps: int
    br: int = 1  # rows of the innermost row dim per program (permute kernel): widens small tiles

    @classmethod
    def from_heuristic(cls, M: int, N: int, elem_bytes: int, platform: str, tile_bytes: int = 16384) -> CopyConfig:
        """Up to ``tile_bytes`` per program (16 KB; the cat+pad and upsample kernels take 8 KB:
        at 16 KB they spilled registers on sm_90), at most 4 KB of a contiguous run per chunk,
        about two 16-byte accesses per thread. A rule, not a sweep's result: no launch sweep of it
        has run on hardware (``sgl-diffusion bench --op layout.<name>`` measures it)."""
        warp = warp_size(platform)
        bn = min(next_pow2(max(N, 1)), max(16, 4096 // elem_bytes))
        bm = max(1, min(next_pow2(max(M, 1)), tile_bytes // (bn * elem_bytes)))
        warps = warps_for(bm * bn * elem_bytes, 16 * 2, warp)
        return cls(bm, bn, warps)

    @classmethod
    def for_permute(cls, R2: int, M: int, N: int, elem_bytes: int, platform: str,
                    tile_bytes: int = 16384) -> CopyConfig:
        """Like ``from_heuristic``, plus ``br`` consecutive rows per program when one row's
        ``[BM, BN]`` tile is small (Ulysses at world 8: 5 heads x 128 = 1.25 KB per row),
        so that every program still moves up to ``tile_bytes``."""
        warp = warp_size(platform)
        base = cls.from_heuristic(M, N, elem_bytes, platform, tile_bytes)
        br = max(1, min(next_pow2(max(R2, 1)), tile_bytes // (base.bm * base.bn * elem_bytes)))
        warps = warps_for(br * base.bm * base.bn * elem_bytes, 16 * 2, warp)
        return cls(base.bm, base.bn, warps, br)

    def launch_options(self) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}


@triton.jit(do_not_specialize=["R1", "R2", "NB2"])
def _permute_kernel(
    S0, S1, S2, D0, D1, D2,
    R1, R2, NB2, M, N,
    ss0, ss1, ss2, ssm,
    ds0, ds1, ds2, dsm,
    BR: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, NT: tl.constexpr,
):
    src = S0
    dst = D0
    if NT > 1:
        j = tl.program_id(2)
        if j == 1:
            src = S1
            dst = D1
        elif j == 2:
            src = S2
            dst = D2
    # program -> (r0, r1, block of BR rows r2): three scalar divisions per program
    r = tl.program_id(0).to(tl.int64)
    rb = r % NB2
    t = r // NB2
    r1 = t % R1
    r0 = t // R1
    r2 = rb * BR + tl.arange(0, BR).to(tl.int64)
    m = tl.program_id(1).to(tl.int64) * BM + tl.arange(0, BM)
    rm_mask = (r2 < R2)[:, None, None] & (m < M)[None, :, None]
    src_rm = src + (r0 * ss0 + r1 * ss1) + (r2 * ss2)[:, None, None] + (m * ssm)[None, :, None]
    dst_rm = dst + (r0 * ds0 + r1 * ds1) + (r2 * ds2)[:, None, None] + (m * dsm)[None, :, None]
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        mask = rm_mask & (n < N)[None, None, :]
        x = tl.load(src_rm + n[None, None, :], mask=mask)
        tl.store(dst_rm + n[None, None, :], x, mask=mask)


@triton.jit(do_not_specialize=["NSRC", "LO", "R2"])
def _gather_kernel(
    S0, S1, S2, D0, D1, D2, IDX,
    NSRC, LO, R2, M, N,
    ss0, ss2, ssm,
    ds_row, dsm,
    BM: tl.constexpr, BN: tl.constexpr, NT: tl.constexpr,
):
    src = S0
    dst = D0
    if NT > 1:
        j = tl.program_id(2)
        if j == 1:
            src = S1
            dst = D1
        elif j == 2:
            src = S2
            dst = D2
    r = tl.program_id(0).to(tl.int64)
    i = tl.load(IDX + r).to(tl.int64)
    valid = (i >= 0) & (i < NSRC)
    # padding ([LO, 0)) is written as zeros, an out-of-range index as NaN; neither reads anything
    fill = tl.where((i < LO) | (i >= NSRC), float("nan"), 0.0)
    ic = tl.where(valid, i, 0)
    src_row = src + ((ic // R2) * ss0 + (ic % R2) * ss2)
    dst_row = dst + r * ds_row
    m = tl.program_id(1).to(tl.int64) * BM + tl.arange(0, BM)
    mmask = (m < M)[:, None]
    lmask = (m < tl.where(valid, M, 0))[:, None]  # nothing is read for a padding row
    src_m = src_row + m[:, None] * ssm
    dst_m = dst_row + m[:, None] * dsm
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        nmask = (n < N)[None, :]
        mask = mmask & nmask
        x = tl.load(src_m + n[None, :], mask=lmask & nmask, other=fill)
        tl.store(dst_m + n[None, :], x, mask=mask)


def permute_launches(g: PermuteGeom, device: torch.device, dtype: torch.dtype, cfg: CopyConfig | None = None):
    """A callable ``(srcs, dsts) -> None`` copying each ``srcs[j]`` into ``dsts[j]`` (one launch
    when the tensors share their strides, else one per tensor); a no-op when empty. ``cfg``:
    the launch (default ``CopyConfig.for_permute``; a sweep passes others)."""
    nt = len(g.src)
    if g.empty:
        return lambda srcs, dsts: None
    plat = tensor_platform(device)
    cfg = cfg or CopyConfig.for_permute(g.R2, g.M, g.N, dtype.itemsize, plat)
    nb2 = triton.cdiv(g.R2, cfg.br)
    shared = len(set(g.src)) == 1 and len(set(g.dst)) == 1
    groups = [tuple(range(nt))] if shared else [(j,) for j in range(nt)]
    launches = []
    for js in groups:
        s, d = g.src[js[0]], g.dst[js[0]]
        launch = PreparedLaunch(
            _permute_kernel, (g.R0 * g.R1 * nb2, triton.cdiv(g.M, cfg.bm), len(js)),
            {"BR": cfg.br, "BM": cfg.bm, "BN": cfg.bn, "NT": len(js)}, device=device, n_ptrs=6,
            options=cfg.launch_options(),
        )
        scalars = (g.R1, g.R2, nb2, g.M, g.N, *s, *d)
        launches.append((launch, js, scalars))

    def run(srcs, dsts):
        for launch, js, scalars in launches:
            ss = [srcs[j] for j in js] + [srcs[js[0]]] * (3 - len(js))
            dd = [dsts[j] for j in js] + [dsts[js[0]]] * (3 - len(js))
            launch(*ss, *dd, *scalars)

    return run


def gather_launches(g: GatherGeom, device: torch.device, dtype: torch.dtype):
    """A callable ``(srcs, dsts, idx) -> None``; a no-op when empty."""
    nt = len(g.src)
    if g.empty:
        return lambda srcs, dsts, idx: None
    plat = tensor_platform(device)
    cfg = CopyConfig.from_heuristic(g.M, g.N, dtype.itemsize, plat)
    shared = len(set(g.src)) == 1 and len(set(g.dst)) == 1
    groups = [tuple(range(nt))] if shared else [(j,) for j in range(nt)]
    launches = []
    for js in groups:
        s, d = g.src[js[0]], g.dst[js[0]]
        launch = PreparedLaunch(
            _gather_kernel, (g.rows, triton.cdiv(g.M, cfg.bm), len(js)),
            {"BM": cfg.bm, "BN": cfg.bn, "NT": len(js)}, device=device, n_ptrs=7,
            options=cfg.launch_options(),
        )
        scalars = (g.nsrc, g.lo, max(g.R2, 1), g.M, g.N, *s, *d)
        launches.append((launch, js, scalars))

    def run(srcs, dsts, idx):
        for launch, js, scalars in launches:
            ss = [srcs[j] for j in js] + [srcs[js[0]]] * (3 - len(js))
            dd = [dsts[j] for j in js] + [dsts[js[0]]] * (3 - len(js))
            launch(*ss, *dd, idx, *scalars)

    return run


# --- contiguous rows into contiguous destinations (the joint ops) --------------------------------


@dataclass(frozen=True)
class RowsConfig:
    """A ``[BR, BK]`` tile per program of ``_rows_kernel``: BR units of BK contiguous elements."""

    br: int
    bk: int
    num_warps: int

    @classmethod
    def from_heuristic(cls, K: int, flat: bool, elem_bytes: int, platform: str,
                       tile_bytes: int = 16384) -> RowsConfig:
        """``bk``: the largest power of two dividing the row length ``K`` (a unit never straddles
        two source rows), at most 2 KB; when every part is flat (contiguous source rows) any
        unit works and it is 1 KB. ``br`` units fill ``tile_bytes`` (16 KB: 8 KB tiles per
        program were the ceiling of the per-row grid at SD3.5's 128-byte heads), about four
        16-byte accesses per thread."""
        warp = warp_size(platform)
        cap = 2048 // elem_bytes
        bk = min(cap // 2, max(1, tile_bytes // elem_bytes)) if flat else min(cap, K & -K)
        br = max(1, tile_bytes // (bk * elem_bytes))
        warps = warps_for(br * bk * elem_bytes, 16 * 4, warp)
        return cls(br, bk, warps)

    def launch_options(self) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}


@dataclass(frozen=True)
class RowsPart:
    """Part of a rows copy: per batch ``b`` (B of them), ``S`` source rows of ``K`` contiguous
    elements at ``soff + b * sb + s * ss`` go to ``doff + b * db + s * K`` (+ ``j * dsj`` for the
    ``j``-th tensor), all in elements."""

    S: int
    ss: int
    sb: int
    soff: int
    db: int
    doff: int


def _lowbit(v: int) -> int:
    """The largest power of two dividing ``v`` (any, for 0)."""
    return v & -v if v else 1 << 30


def rows_plan(parts: tuple[RowsPart, RowsPart], B: int, K: int, dsj: int, nt: int, elem_bytes: int,
              platform: str, cfg: RowsConfig | None = None):
    """``(grid, constexprs, options, scalars)`` of one ``_rows_kernel`` launch copying both parts
    of ``nt`` tensors, or ``None`` where the kernel cannot serve (a unit of at least 32 bytes
    must divide ``K`` unless every source row is contiguous, B at most 65535, the unit count
    within int32). A part whose source rows are contiguous (``ss == K``) is copied flat, in
    units that ignore row boundaries; otherwise a row is ``K // BK`` units."""
    if B > 65535 or K <= 0 or any(p.S < 0 for p in parts):
        return None
    flat = [p.ss == K or p.S <= 1 for p in parts]
    cfg = cfg or RowsConfig.from_heuristic(K, all(flat), elem_bytes, platform)
    bk = cfg.bk
    if not all(flat) and (K % bk or bk * elem_bytes < 32):
        return None
    per_part, nbs = [], []
    for p, fl in zip(parts, flat):
        lim = p.S * K
        nc, ss, units = (1, bk, -(-lim // bk)) if fl else (K // bk, p.ss, p.S * (K // bk))
        if units + cfg.br >= 2**31:
            return None
        nbs.append(-(-units // cfg.br))
        per_part.append((nc, ss, p.sb, p.soff, lim, p.db, p.doff))
    # VEC: a power of two (16-byte accesses at most) dividing every element offset the kernel
    # forms, so that it can state their alignment (the pointers' own is checked per launch)
    g = dsj
    for pp in per_part:
        for v in pp[1:]:
            g = math.gcd(g, v)
    vec = min(16 // elem_bytes, bk, _lowbit(g))
    if nbs[0] + nbs[1] == 0 or B == 0:
        return "empty"
    grid = (nbs[0] + nbs[1], B, nt)
    const = {"BR": cfg.br, "BK": bk, "NT": nt, "VEC": vec}
    scalars = (nbs[0], *per_part[0], *per_part[1], dsj)
    return grid, const, cfg.launch_options(), scalars


_ROWS_SCALARS = ["NB0", "nc0", "ss0", "sb0", "soff0", "lim0", "db0", "doff0",
                 "nc1", "ss1", "sb1", "soff1", "lim1", "db1", "doff1", "dsj"]


@triton.jit
def _rows_part(nc, ss, sb, soff, lim, db, doff, VEC: tl.constexpr):
    """One part's scalars of ``_rows_kernel``, each offset restated as a multiple of VEC."""
    return (nc.to(tl.int32), ss.to(tl.int64) // VEC * VEC, sb.to(tl.int64) // VEC * VEC,
            soff.to(tl.int64) // VEC * VEC, lim.to(tl.int64), db.to(tl.int64) // VEC * VEC,
            doff.to(tl.int64) // VEC * VEC)


@triton.jit
def _rows_source(A, B, C, j, NT: tl.constexpr):
    """Tensor ``j`` of a part (q, k, v: ``NT = 3``)."""
    src = A
    if NT > 1:
        if j == 1:
            src = B
        elif j == 2:
            src = C
    return src


@triton.jit(do_not_specialize=_ROWS_SCALARS)
def _rows_kernel(
    S0, S1, S2, S3, S4, S5, D0, D1,
    NB0,
    nc0, ss0, sb0, soff0, lim0, db0, doff0,
    nc1, ss1, sb1, soff1, lim1, db1, doff1,
    dsj,
    BR: tl.constexpr, BK: tl.constexpr, NT: tl.constexpr, VEC: tl.constexpr,
):
    # program -> (part, block of BR units) on axis 0, batch on axis 1, tensor j on axis 2.
    # No argument is specialized (a new sequence length must not recompile); every offset is a
    # multiple of VEC (the host checked) and `// VEC * VEC` restates it for the compiler, which
    # then proves 16-byte alignment.
    pid = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    j = tl.program_id(2)
    if pid < NB0:
        blk = pid
        nc, ss, sb, soff, lim, db, doff = _rows_part(nc0, ss0, sb0, soff0, lim0, db0, doff0, VEC)
        src = _rows_source(S0, S1, S2, j, NT)
        dst = D0
    else:
        blk = pid - NB0
        nc, ss, sb, soff, lim, db, doff = _rows_part(nc1, ss1, sb1, soff1, lim1, db1, doff1, VEC)
        src = _rows_source(S3, S4, S5, j, NT)
        dst = D1
    dsj = dsj.to(tl.int64) // VEC * VEC
    u0 = blk * BR  # int32: the host bounded the unit count
    # elements left in this part, bounded by the tile (int32 from here)
    rem = tl.minimum(lim - u0.to(tl.int64) * BK, BR * BK).to(tl.int32) // VEC * VEC
    u = u0 + tl.arange(0, BR)  # one int32 division per unit row, none per element
    row = u // nc
    src_u = src + (soff + b * sb + row.to(tl.int64) * ss + ((u - row * nc) * BK).to(tl.int64))[:, None]
    dst_0 = dst + (doff + j.to(tl.int64) * dsj + b * db + u0.to(tl.int64) * BK)
    offs = tl.arange(0, BR)[:, None] * BK + tl.arange(0, BK)[None, :]
    mask = offs < rem
    x = tl.load(src_u + tl.arange(0, BK)[None, :], mask=mask)
    tl.store(dst_0 + offs, x, mask=mask)


def rows_launch(parts: tuple[RowsPart, RowsPart], B: int, K: int, dsj: int, nt: int, device: torch.device,
                dtype: torch.dtype, cfg: RowsConfig | None = None):
    """A callable ``(srcs6, dsts2) -> None`` (``srcs6``: part 0's ``nt`` sources, then part 1's,
    padded to three each; ``dsts2``: part 0's and part 1's destination), or ``None`` where
    ``rows_plan`` says the kernel cannot serve."""
    plan = rows_plan(parts, B, K, dsj, nt, dtype.itemsize, tensor_platform(device), cfg)
    if plan is None:
        return None
    if plan == "empty":
        return lambda srcs, dsts: None
    grid, const, options, scalars = plan
    launch = PreparedLaunch(_rows_kernel, grid, const, device=device, n_ptrs=8, options=options)

    def run(srcs, dsts):
        launch(*srcs, *dsts, *scalars)

    return run


def rows_aot_variants(platform: str, op: str, shapes: dict[str, tuple[int, bool]], nts: tuple[int, ...] = (1, 3)):
    """AOT variants of ``_rows_kernel`` as ``op`` launches it: per dtype, per named ``(K, flat)``."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, name in _NAMES.items():
        for label, (K, flat) in shapes.items():
            cfg = RowsConfig.from_heuristic(K, flat, dt.itemsize, platform)
            for nt in nts:
                sig = {p: f"*{name}" for p in ("S0", "S1", "S2", "S3", "S4", "S5", "D0", "D1")}
                sig["NB0"] = "i32"
                for i in "01":
                    sig.update({f"{n}{i}": "i32" for n in ("nc", "ss")})
                    sig.update({f"{n}{i}": "i64" for n in ("sb", "soff", "lim", "db", "doff")})
                sig["dsj"] = "i64"
                const = {"BR": cfg.br, "BK": cfg.bk, "NT": nt, "VEC": 16 // dt.itemsize}
                sig.update({n: "constexpr" for n in const})
                out.append(AotVariant(
                    name=f"{op}:rows_kernel[{name},{label},K={K},flat={flat},nt={nt},br={cfg.br},bk={cfg.bk},"
                         f"w={cfg.num_warps}]",
                    kernel=_rows_kernel, signature=sig, constexprs=const,
                    num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
                ))
    return out


_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


def copy_aot_variants(platform: str, op: str, shapes: dict[str, tuple[int, int]], *, gather: bool = False,
                      nts: tuple[int, ...] = (1, 3), R2: int = 75600):
    """AOT variants of the permute (or gather) kernel as ``op`` launches it: per dtype, per
    named ``(M, N)`` tile problem, per number of tensors in one launch (``nts``)."""
    from sgl_diffusion_core import AotVariant

    kernel = _gather_kernel if gather else _permute_kernel
    out = []
    for dt, name in _NAMES.items():
        for label, (M, N) in shapes.items():
            cfg = (CopyConfig.from_heuristic(M, N, dt.itemsize, platform) if gather
                   else CopyConfig.for_permute(R2, M, N, dt.itemsize, platform))
            for nt in nts:
                sig = {p: f"*{name}" for p in ("S0", "S1", "S2", "D0", "D1", "D2")}
                if gather:
                    sig["IDX"] = "*i64"
                    ints = ("NSRC", "LO", "R2", "M", "N", "ss0", "ss2", "ssm", "ds_row", "dsm")
                else:
                    ints = ("R1", "R2", "NB2", "M", "N", "ss0", "ss1", "ss2", "ssm", "ds0", "ds1", "ds2", "dsm")
                sig.update({n: "i32" for n in ints})
                # strides a >2^31-element tensor needs are i64 (Triton picks the type per value)
                for n in ("ss0", "ds0") if not gather else ("ss0", "ds_row"):
                    sig[n] = "i64"
                const = {"BM": cfg.bm, "BN": cfg.bn, "NT": nt}
                if not gather:
                    const["BR"] = cfg.br
                sig.update({n: "constexpr" for n in const})
                out.append(AotVariant(
                    name=f"{op}:{kernel.__name__.strip('_')}[{name},{label},M={M},N={N},nt={nt},"
                         f"br={cfg.br},bm={cfg.bm},bn={cfg.bn},w={cfg.num_warps}]",
                    kernel=kernel, signature=sig, constexprs=const,
                    num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
                ))
    return out
