"""FlyDSL kernel of the row-norm family, contract ``close`` (ROCm: gfx942, gfx950, gfx1201).
The ``flydsl`` backend of ``layer_norm``, ``rms_norm``, ``ln_modulate``, ``rms_modulate``
(``prepare``, ``prepare_norm``) and ``gated_residual_norm_modulate`` (``prepare_gated``).

Imported only when the ``flydsl`` backend is chosen (or by the compile lane and the tests of
the launch rule); ``flydsl`` itself is imported inside :func:`build`, so the rule, the
numerical model and the refusals are importable without it.

The kernel: one workgroup per row ``(b, s)``. Every thread owns ``tiles`` vectors of
``vec`` elements (one 128-bit global access each: 8 bf16/fp16 or 4 fp32 values), strided by
the workgroup size, so a row is read once and held in registers. Each row's global accesses
go through a buffer descriptor rebased on the row with the row's byte length as its range:
loads past the end of the row return 0 and stores past it are dropped by the hardware, so the
last, partial tile needs no branch and nothing outside the row is ever touched.

Arithmetic (fp32, the order the numerical model in :func:`model` reproduces step by step):
per thread, each vector is summed left to right and the vector sums are added tile by tile;
the workgroup sum is a butterfly over the wave (``shuffle_xor`` with offsets ``wave/2 .. 1``,
so every lane ends with the same value) followed, with several waves, by a left-to-right sum
of the per-wave values through LDS. LayerNorm: ``mean = sum(x) * (1/D)``, then the centred
``var = sum((x - mean)^2) * (1/D)`` over the registers (padding lanes masked); RMSNorm:
``ms = sum(x^2) * (1/D)``. ``rstd = rsqrt(var + eps)``, then ``y = (x - mean) * rstd``
``[* weight][+ bias][* (scale_offset + scale)][+ shift]``, rounded once to x's dtype.
No fast-math flags: every product and sum is rounded on its own (no FMA contraction), which
the gated residual needs to be bit-exact to eager.

The gated residual (``new = residual + gate * update``): ``gate * update`` rounded to
``promote(gate, update)``, the sum to ``promote(residual, t1)`` then to residual's dtype,
stored as the new residual and normalised.

Modulation and residual rows are found as in the Triton kernel: ``base + b*sb + (s // L)*ss``
with runtime strides, so per-channel, per-sample, per-token (strided) and per-frame layouts
share one build and a new sequence length never recompiles. Specialised at compile time: D,
the dtypes of every tensor, which optional tensors are present, and the launch rule
(:func:`config_for`). The wave size comes from the compile target (:data:`WAVE`), never from
the device the process runs on. (FlyDSL reads the kernel's parameter annotations as objects,
so this module does not postpone annotations.)
"""

import functools
import math
import os
from dataclasses import dataclass, field

import torch

from sgl_diffusion_core import UnsupportedInputError

# The compile targets and their wave size (the launch rule and the butterfly are built for it).
WAVE = {"gfx942": 64, "gfx950": 64, "gfx1201": 32}
ARCHS = tuple(WAVE)
# Threads per row the rule aims for, the most a workgroup may have, and the most values a
# thread holds (fp32 registers for the row itself).
TARGET_THREADS = 256
MAX_THREADS = 1024
MAX_VALUES = 64
MIN_REGISTER_WAVES = 4  # waves per SIMD the rule assumes: at most 512 / 4 = 128 VGPRs per lane
VGPR_BUDGET = {"gfx942": 128, "gfx950": 128, "gfx1201": 256}
ALIGN = 16  # bytes: every data pointer and every row stride (128-bit accesses)
_DT = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


@dataclass(frozen=True)
class FlyRowConfig:
    """The launch of one row: ``threads`` per workgroup, ``tiles`` vectors of ``vec`` per thread."""

    threads: int
    vec: int
    tiles: int
    wave: int

    @property
    def waves(self) -> int:
        return self.threads // self.wave


def config_for(D: int, elem_bytes: int, wave: int) -> FlyRowConfig:
    """The launch rule: 128-bit vectors (``vec = 16 / elem_bytes``); among the tile counts
    from the fewest that keep the workgroup at or under 256 threads (or 1024 for rows too long
    for that) to three more, the one whose workgroup (a whole number of waves) leaves the fewest
    idle vector slots, the fewest tiles on a tie. Wave64, bf16: D=3072 192 threads x 2 tiles,
    5120 128 x 5, 2240 64 x 5 (280 vectors in 320 slots), 6144 256 x 3, 65536 1024 x 8.

    Not measured on AMD hardware: a rule of thumb (no idle lanes, few waves per row so many
    rows are in flight), held to the register budget by ``MAX_VALUES``.
    """
    if D <= 0 or D % 8:
        raise ValueError(f"the FlyDSL row kernels need D divisible by 8, got {D}")
    vec = 16 // elem_bytes
    nv = D // vec
    cap = MAX_VALUES // vec
    lo = -(-nv // TARGET_THREADS)
    if lo > cap:
        lo = -(-nv // MAX_THREADS)
    if lo > cap:
        raise ValueError(f"D={D} ({nv} vectors of {vec}) exceeds what a workgroup holds in registers")
    best = None
    for tiles in range(lo, min(lo + 3, cap) + 1):
        threads = -(-(-(-nv // tiles)) // wave) * wave
        if threads > MAX_THREADS:
            continue
        idle = threads * tiles - nv
        if best is None or idle < best[0]:
            best = (idle, FlyRowConfig(threads, vec, tiles, wave))
    assert best is not None
    return best[1]


@dataclass(frozen=True)
class Variant:
    """Everything one build is specialised on (the compile cache key)."""

    arch: str
    D: int
    norm: str  # "layer" | "rms"
    x: str  # dtype names ("bf16", "fp16", "fp32"); None = tensor absent
    scale: str | None = None
    shift: str | None = None
    weight: str | None = None
    bias: str | None = None
    res: bool = False  # gated residual in front of the norm
    update: str | None = None
    gate: str | None = None
    t1: str = "fp32"  # gate * update is rounded to this
    sum: str = "fp32"  # residual + t1 is rounded to this, then to x's dtype
    out: str | None = None  # the result's dtype (eager's promotion; default x's)
    cfg: FlyRowConfig = field(init=False)

    def __post_init__(self) -> None:
        if self.arch not in WAVE:
            raise ValueError(f"unknown FlyDSL target {self.arch!r}; known: {', '.join(ARCHS)}")
        if self.out is None:
            object.__setattr__(self, "out", self.x)
        object.__setattr__(self, "cfg", config_for(self.D, _BYTES[self.x], WAVE[self.arch]))

    @property
    def name(self) -> str:
        mods = ",".join(f"{k}={getattr(self, k)}" for k in ("scale", "shift", "weight", "bias", "update", "gate")
                        if getattr(self, k) is not None)
        c = self.cfg
        res = f",res(t1={self.t1},sum={self.sum})" if self.res else ""
        out = f"->{self.out}" if self.out != self.x else ""
        return (f"row_norm[{self.norm},{self.x}{out},D={self.D},{c.threads}x{c.tiles}x{c.vec}"
                f"{',' + mods if mods else ''}{res}]@{self.arch}")


_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
_TORCH = {name: dt for dt, name in _DT.items()}


def _round(v: torch.Tensor, dt: str) -> torch.Tensor:
    """fp32 values rounded to ``dt`` and widened back (round to nearest even)."""
    if dt == "fp32":
        return v
    return v.to(torch.bfloat16 if dt == "bf16" else torch.float16).to(torch.float32)


# --- the numerical model ----------------------------------------------------------------------


def _thread_sums(v: torch.Tensor, cfg: FlyRowConfig) -> torch.Tensor:
    """``v``: fp32 ``[rows, tiles, threads, vec]`` (zeros in the padding). Each thread's sum:
    each vector left to right, then the vector sums tile by tile (as the kernel adds them)."""
    acc = torch.zeros(v.shape[0], cfg.threads, dtype=torch.float32)
    for t in range(cfg.tiles):
        r = v[:, t, :, 0].clone()
        for e in range(1, cfg.vec):
            r = r + v[:, t, :, e]
        acc = acc + r
    return acc


def _workgroup_sum(acc: torch.Tensor, cfg: FlyRowConfig) -> torch.Tensor:
    """The butterfly over each wave, then the per-wave values summed left to right: ``[rows]``."""
    rows = acc.shape[0]
    w = acc.reshape(rows, cfg.waves, cfg.wave)
    lanes = torch.arange(cfg.wave)
    off = cfg.wave // 2
    while off >= 1:
        w = w + w[:, :, lanes ^ off]
        off //= 2
    total = w[:, 0, 0]
    for k in range(1, cfg.waves):
        total = total + w[:, k, 0]
    return total


def _tiles(x: torch.Tensor, cfg: FlyRowConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` fp32 ``[rows, D]`` laid out as the kernel's registers ``[rows, tiles, threads, vec]``
    (vector ``t*threads + i`` of the row is thread i's tile t), and the mask of real vectors."""
    rows, D = x.shape
    slots = cfg.tiles * cfg.threads
    nv = D // cfg.vec
    pad = torch.zeros(rows, slots * cfg.vec, dtype=torch.float32)
    pad[:, :D] = x
    valid = (torch.arange(slots) < nv).reshape(cfg.tiles, cfg.threads)
    return pad.reshape(rows, cfg.tiles, cfg.threads, cfg.vec), valid


def model(variant: Variant, x, scale=None, shift=None, weight=None, bias=None, *, update=None, gate=None,
          eps: float = 1e-6, scale_offset: float = 1.0):
    """The kernel's arithmetic on the CPU, step by step in fp32: same layout of the row over
    threads, same summation order, same roundings. Tensors as the op takes them, already
    broadcast to ``[rows, D]`` (modulation rows expanded); returns ``out`` (and the new residual
    when ``variant.res``), in x's dtype. ``rsqrt`` is torch's (correctly rounded where the
    GPU's ``v_rsq_f32`` may differ by an ulp of fp32)."""
    cfg = variant.cfg
    f = lambda t: None if t is None else t.to(torch.float32)  # noqa: E731
    xv = f(x)
    new = None
    if variant.res:
        t1 = f(update)
        if gate is not None:
            t1 = _round(f(gate) * t1, variant.t1)
        new = _round(_round(xv + t1, variant.sum), variant.x)
        xv = new
    v, valid = _tiles(xv, cfg)
    inv_d = torch.tensor(1.0 / variant.D, dtype=torch.float32)
    eps32 = torch.tensor(eps, dtype=torch.float32)
    mask = valid[None, :, :, None]
    if variant.norm == "layer":
        mean = _workgroup_sum(_thread_sums(v, cfg), cfg) * inv_d
        c = torch.where(mask, v - mean[:, None, None, None], torch.zeros(()))
        var = _workgroup_sum(_thread_sums(c * c, cfg), cfg) * inv_d
        xc = xv - mean[:, None]
    else:
        var = _workgroup_sum(_thread_sums(v * v, cfg), cfg) * inv_d
        xc = xv
    rstd = torch.rsqrt(var + eps32)
    y = xc * rstd[:, None]
    if weight is not None:
        y = y * f(weight)
    if bias is not None:
        y = y + f(bias)
    if scale is not None:
        y = y * (torch.tensor(scale_offset, dtype=torch.float32) + f(scale))
    if shift is not None:
        y = y + f(shift)
    out = y.to(_TORCH[variant.out])
    return (out, new.to(x.dtype)) if variant.res else out


# --- the kernel ---------------------------------------------------------------------------------


def _clean_env() -> None:
    """FlyDSL 0.5 reads the unprefixed ``ARCH`` and ``COMPILE_ONLY`` variables: an ``ARCH`` left
    by a build system would retarget every kernel, and ``COMPILE_ONLY`` makes every launch a
    silent no-op. Refuse to build or launch under either."""
    for var in ("ARCH", "COMPILE_ONLY"):
        if os.environ.get(var):
            raise UnsupportedInputError(
                f"the environment sets {var}={os.environ[var]!r}, which FlyDSL 0.5 reads "
                f"({'it retargets every kernel' if var == 'ARCH' else 'every launch would do nothing'}); "
                f"unset it to use the flydsl backend (FLYDSL_GPU_ARCH names a compile target)")


@functools.cache
def build(variant: Variant):
    """The FlyDSL launcher (``@flyc.jit``) of one variant. Arguments: the nine tensors (flat
    views, see :func:`_flat`; absent ones may repeat x), ``rows``, the runtime geometry
    (``S``, x, scale, shift, update and gate strides and frame lengths), ``eps``,
    ``scale_offset``, then the stream."""
    _clean_env()
    import flydsl.compiler as flyc
    import flydsl.expr as fx
    from flydsl.expr import const_expr, gpu, range_constexpr
    from flydsl.expr import math as fmath
    from flydsl.expr.typing import ReductionOp

    v = variant
    cfg = v.cfg
    D, VEC, T, TILES, WAVE_N, NW = v.D, cfg.vec, cfg.threads, cfg.tiles, cfg.wave, cfg.waves
    NV = D // VEC
    FX = {"bf16": fx.BFloat16, "fp16": fx.Float16, "fp32": fx.Float32}
    LAYER = v.norm == "layer"
    PARTIAL = TILES * T > NV  # the last tile has idle vector slots
    INV_D = 1.0 / D
    has = {k: getattr(v, k) is not None for k in ("scale", "shift", "weight", "bias", "gate")}

    def atom_for(dt):
        bits = VEC * _BYTES[dt] * 8
        per = min(bits, 128)
        op = {128: fx.rocdl.BufferCopy128b, 64: fx.rocdl.BufferCopy64b, 32: fx.rocdl.BufferCopy32b}[per]
        return fx.make_copy_atom(op(), _BYTES[dt] * 8), bits // per

    def row_of(t, off, dt):
        """t's row starting ``off`` elements in, as ``[vectors, pieces]`` behind a descriptor
        whose range is the row."""
        ptr = fx.add_offset(fx.get_iter(t), off)
        view = fx.make_view(fx.rocdl.make_buffer_ptr(ptr, num_records_bytes=fx.Int64(D * _BYTES[dt])),
                            fx.make_layout(D, 1))
        _, pieces = atom_for(dt)
        return fx.logical_divide(view, fx.make_layout(VEC // pieces, 1))

    def load(row, idx, dt):
        atom, pieces = atom_for(dt)
        r = fx.make_rmem_tensor(VEC, FX[dt])
        if const_expr(pieces == 1):
            fx.copy_atom_call(atom, fx.slice(row, (None, idx)), r)
        else:
            rd = fx.logical_divide(r, fx.make_layout(VEC // pieces, 1))
            for p in range_constexpr(pieces):
                fx.copy_atom_call(atom, fx.slice(row, (None, idx * pieces + p)), fx.slice(rd, (None, p)))
        return fx.memref_load_vec(r).to(fx.Float32)

    def store(row, idx, dt, val):
        atom, pieces = atom_for(dt)
        r = fx.make_rmem_tensor(VEC, FX[dt])
        fx.memref_store_vec(val.to(FX[dt]), r)
        if const_expr(pieces == 1):
            fx.copy_atom_call(atom, r, fx.slice(row, (None, idx)))
        else:
            rd = fx.logical_divide(r, fx.make_layout(VEC // pieces, 1))
            for p in range_constexpr(pieces):
                fx.copy_atom_call(atom, fx.slice(rd, (None, p)), fx.slice(row, (None, idx * pieces + p)))

    def rnd(val, dt):
        return val if dt == "fp32" else val.to(FX[dt]).to(fx.Float32)

    if NW > 1:

        @fx.struct
        class Slots:  # per-wave partial sums of the two reductions
            s0: fx.Array[fx.Float32, NW, 16]
            s1: fx.Array[fx.Float32, NW, 16]

    @flyc.kernel(known_block_size=[T, 1, 1])
    def row_norm_kernel(
        X: fx.Tensor, SC: fx.Tensor, SH: fx.Tensor, W: fx.Tensor, BI: fx.Tensor, Y: fx.Tensor,
        U: fx.Tensor, G: fx.Tensor, NR: fx.Tensor,
        S: fx.Int32, x_sb: fx.Int32, x_ss: fx.Int32,
        sc_sb: fx.Int32, sc_ss: fx.Int32, sc_L: fx.Int32,
        sh_sb: fx.Int32, sh_ss: fx.Int32, sh_L: fx.Int32,
        u_sb: fx.Int32, u_ss: fx.Int32,
        g_sb: fx.Int32, g_ss: fx.Int32, g_L: fx.Int32,
        eps: fx.Float32, scale_offset: fx.Float32,
    ):
        row = fx.block_idx.x
        tid = fx.thread_idx.x
        b = row // S
        s = row - b * S
        b64 = fx.Int64(b)
        s64 = fx.Int64(s)
        out_row = row_of(Y, fx.Int64(row) * D, v.out)
        x_row = row_of(X, b64 * fx.Int64(x_sb) + s64 * fx.Int64(x_ss), v.x)
        if const_expr(has["scale"]):
            sc_row = row_of(SC, b64 * fx.Int64(sc_sb) + fx.Int64(s // sc_L) * fx.Int64(sc_ss), v.scale)
        if const_expr(has["shift"]):
            sh_row = row_of(SH, b64 * fx.Int64(sh_sb) + fx.Int64(s // sh_L) * fx.Int64(sh_ss), v.shift)
        if const_expr(has["weight"]):
            w_row = row_of(W, fx.Int64(0), v.weight)
        if const_expr(has["bias"]):
            bi_row = row_of(BI, fx.Int64(0), v.bias)
        if const_expr(v.res):
            u_row = row_of(U, b64 * fx.Int64(u_sb) + s64 * fx.Int64(u_ss), v.update)
            nr_row = row_of(NR, fx.Int64(row) * D, v.x)
            if const_expr(has["gate"]):
                g_row = row_of(G, b64 * fx.Int64(g_sb) + fx.Int64(s // g_L) * fx.Int64(g_ss), v.gate)
        if const_expr(NW > 1):
            lds = fx.SharedAllocator().allocate(Slots).peek()
            slots0 = lds.s0.view(fx.make_layout(NW, 1))
            slots1 = lds.s1.view(fx.make_layout(NW, 1))

        def workgroup_sum(p, slots):
            for k in range_constexpr(int(math.log2(WAVE_N))):
                p = p + p.shuffle_xor(WAVE_N >> (k + 1), WAVE_N)
            if const_expr(NW == 1):
                return p
            if tid % WAVE_N == 0:
                fx.memref_store(p, slots, tid // WAVE_N)
            gpu.barrier()
            total = fx.memref_load(slots, 0)
            for k in range_constexpr(1, NW):
                total = total + fx.memref_load(slots, k)
            return total

        vals = []
        acc = fx.Float32(0.0)
        for t in range_constexpr(TILES):
            idx = tid + t * T
            xv = load(x_row, idx, v.x)
            if const_expr(v.res):
                t1 = load(u_row, idx, v.update)
                if const_expr(has["gate"]):
                    t1 = rnd(load(g_row, idx, v.gate) * t1, v.t1)
                xv = rnd(rnd(xv + t1, v.sum), v.x)
                store(nr_row, idx, v.x, xv)
            vals.append(xv)
            if const_expr(LAYER):
                acc = acc + xv.reduce(ReductionOp.ADD)
            else:
                acc = acc + (xv * xv).reduce(ReductionOp.ADD)
        if const_expr(LAYER):
            mean = workgroup_sum(acc, slots0 if NW > 1 else None) * INV_D
            acc2 = fx.Float32(0.0)
            for t in range_constexpr(TILES):
                c = vals[t] - mean
                part = (c * c).reduce(ReductionOp.ADD)
                if const_expr(PARTIAL and t == TILES - 1):
                    part = (tid + t * T < NV).select(part, fx.Float32(0.0))
                acc2 = acc2 + part
            var = workgroup_sum(acc2, slots1 if NW > 1 else None) * INV_D
        else:
            var = workgroup_sum(acc, slots0 if NW > 1 else None) * INV_D
        rstd = fmath.rsqrt(var + eps)
        for t in range_constexpr(TILES):
            idx = tid + t * T
            y = (vals[t] - mean) * rstd if const_expr(LAYER) else vals[t] * rstd
            if const_expr(has["weight"]):
                y = y * load(w_row, idx, v.weight)
            if const_expr(has["bias"]):
                y = y + load(bi_row, idx, v.bias)
            if const_expr(has["scale"]):
                y = y * (load(sc_row, idx, v.scale) + scale_offset)
            if const_expr(has["shift"]):
                y = y + load(sh_row, idx, v.shift)
            store(out_row, idx, v.out, y)

    @flyc.jit
    def launch(
        X: fx.Tensor, SC: fx.Tensor, SH: fx.Tensor, W: fx.Tensor, BI: fx.Tensor, Y: fx.Tensor,
        U: fx.Tensor, G: fx.Tensor, NR: fx.Tensor, rows: fx.Int32,
        S: fx.Int32, x_sb: fx.Int32, x_ss: fx.Int32,
        sc_sb: fx.Int32, sc_ss: fx.Int32, sc_L: fx.Int32,
        sh_sb: fx.Int32, sh_ss: fx.Int32, sh_L: fx.Int32,
        u_sb: fx.Int32, u_ss: fx.Int32,
        g_sb: fx.Int32, g_ss: fx.Int32, g_L: fx.Int32,
        eps: fx.Float32, scale_offset: fx.Float32,
        stream: fx.Stream = fx.Stream(None),
    ):
        row_norm_kernel(X, SC, SH, W, BI, Y, U, G, NR, S, x_sb, x_ss, sc_sb, sc_ss, sc_L, sh_sb, sh_ss, sh_L,
                        u_sb, u_ss, g_sb, g_ss, g_L, eps, scale_offset).launch(
            grid=(rows, 1, 1), block=(T, 1, 1), stream=stream)

    return launch


# --- compile ahead of time (no GPU) ----------------------------------------------------------


def _placeholder(dt: str, n: int = 4096):
    import flydsl.compiler as flyc

    t = torch.empty(n, dtype={"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dt])
    return flyc.from_dlpack(t).mark_layout_dynamic(leading_dim=0, divisibility=16 // _BYTES[dt])


def compile_variant(variant: Variant):
    """Compile one variant for its target with CPU placeholder tensors (no GPU touched) and
    return FlyDSL's ``CompiledFunction`` (``.export_to_c(dir, name)`` writes the code object and
    a C header). The process must target ``variant.arch``: ``FLYDSL_GPU_ARCH`` set to it."""
    import flydsl.compiler as flyc

    got = os.environ.get("FLYDSL_GPU_ARCH", "")
    if got != variant.arch:
        raise RuntimeError(f"compiling {variant.name} needs FLYDSL_GPU_ARCH={variant.arch}, the environment has "
                           f"{got or 'none'}")
    v = variant
    x = _placeholder(v.x)
    t = lambda dt: x if dt is None else _placeholder(dt)  # noqa: E731
    tensors = (x, t(v.scale), t(v.shift), t(v.weight), t(v.bias), _placeholder(v.out), t(v.update), t(v.gate),
               _placeholder(v.x) if v.res else x)
    ints = (16, 8, 8 * v.D, v.D, 0, v.D, 1, 0, v.D, 1, 8 * v.D, v.D, 0, v.D, 1)
    return flyc.compile(build(v), *tensors, *ints, 1e-6, 1.0)


# --- the backend: runners for one call signature ----------------------------------------------

_I32 = 2**31 - 1


def _dt(t: torch.Tensor | None) -> str | None:
    return None if t is None else _DT[t.dtype]


def _mod(lay) -> tuple[int, int, int]:
    return (0, 0, 1) if lay is None else (lay.sb, lay.ss, lay.L)


def _flat(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view from t's first element over every element t reaches (the kernel indexes it
    with t's strides)."""
    span = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if n > 1)
    return t.as_strided((span,), (1,))


def _arch(t: torch.Tensor) -> str:
    from sgl_diffusion_core import device_arch

    arch = device_arch("hip", t.device.index)
    if arch not in WAVE:
        raise UnsupportedInputError(f"flydsl: device arch {arch} is not a FlyDSL target ({', '.join(ARCHS)})")
    return arch


def static_problems(named: dict[str, torch.Tensor | None], ints: tuple[int, ...]) -> list[str]:
    """What one call signature asks that the kernel cannot do (the plan key fixes all of it):
    row strides that break 128-bit alignment, or sizes past 32-bit indexing."""
    out = []
    for name, t in named.items():
        if t is None:
            continue
        eb = t.element_size()
        bad = [st for n, st in zip(t.shape[:-1], t.stride()[:-1]) if n > 1 and (st * eb) % ALIGN]
        if bad:
            out.append(f"{name}: row strides {list(t.stride())} are not multiples of {ALIGN} bytes "
                       f"(the kernel reads 128-bit vectors)")
    if any(abs(i) > _I32 for i in ints):
        out.append("a size or stride exceeds 2^31 - 1 elements (the kernel indexes rows with 32-bit integers)")
    return out


def check_pointers(named: dict[str, torch.Tensor | None]) -> None:
    """Every data pointer 16-byte aligned (checked per call: the plan key does not see addresses)."""
    for name, t in named.items():
        if t is not None and t.numel() and t.data_ptr() % ALIGN:
            raise UnsupportedInputError(
                f"flydsl: {name} starts {t.data_ptr() % ALIGN} bytes past a {ALIGN}-byte boundary (a view "
                f"at an odd offset); the kernel reads 128-bit vectors: use backend='triton' or a copy")


class _Runner:
    """Compiles the variant on the first call, then launches the compiled function."""

    def __init__(self, variant: Variant, rows: int, ints: tuple[int, ...]):
        self.variant, self.rows, self.ints = variant, rows, ints
        self.fn = None

    def __call__(self, tensors: tuple, eps: float, scale_offset: float) -> None:
        import flydsl.compiler as flyc

        _clean_env()
        args = [flyc.from_dlpack(_flat(t)).mark_layout_dynamic(leading_dim=0, divisibility=16 // t.element_size())
                for t in tensors]
        stream = torch.cuda.current_stream(tensors[0].device)
        if self.fn is None:
            self.fn = flyc.compile(build(self.variant), *args, self.rows, *self.ints, float(eps),
                                   float(scale_offset), stream)
        self.fn(*args, self.rows, *self.ints, float(eps), float(scale_offset), stream)


def _norm_runner(geom, x, scale, shift, weight, bias):
    g = geom.x
    named = {"x": x, "scale": scale, "shift": shift, "weight": weight, "bias": bias}
    ints = (g.S, g.sb, g.ss, *_mod(geom.scale), *_mod(geom.shift), 0, 0, 0, 0, 1)
    problems = static_problems(named, (g.rows, *ints))
    if problems:
        raise UnsupportedInputError("flydsl cannot serve these inputs:\n" + "\n".join(f"  - {p}" for p in problems))
    v = Variant(_arch(x), g.D, geom.norm, _DT[x.dtype], scale=_dt(scale), shift=_dt(shift), weight=_dt(weight),
                bias=_dt(bias), out=_DT[geom.chain.out])
    return named, _Runner(v, g.rows, ints)


def prepare(geom, x, scale, shift, weight, bias):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` for one call
    signature of ``ln_modulate`` / ``rms_modulate``."""
    _clean_env()
    _, launch = _norm_runner(geom, x, scale, shift, weight, bias)
    shape, dtype = geom.x.shape, geom.chain.out

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        check_pointers({"x": x, "scale": scale, "shift": shift, "weight": weight, "bias": bias})
        out = torch.empty(shape, dtype=dtype, device=x.device)
        launch((x, scale, x if shift is None else shift, x if weight is None else weight,
                x if bias is None else bias, out, x, x, x), eps, scale_offset)
        return out

    return run


def prepare_norm(geom, x, weight, bias):
    """A runner ``(x, weight, bias, eps, scale_offset) -> out`` for one call signature of
    ``layer_norm`` / ``rms_norm``."""
    _clean_env()
    _, launch = _norm_runner(geom, x, None, None, weight, bias)
    shape, dtype = geom.x.shape, geom.chain.out

    def run(x, weight, bias, eps, scale_offset):
        check_pointers({"x": x, "weight": weight, "bias": bias})
        out = torch.empty(shape, dtype=dtype, device=x.device)
        launch((x, x, x, x if weight is None else weight, x if bias is None else bias, out, x, x, x), eps,
               scale_offset)
        return out

    return run


def prepare_gated(geom, residual, update, gate, scale, shift, weight, bias):
    """A runner ``(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset) ->
    (out, new_residual)`` for one call signature of ``gated_residual_norm_modulate``."""
    _clean_env()
    g, u = geom.residual, geom.update
    named = {"residual": residual, "update": update, "gate": gate, "scale": scale, "shift": shift,
             "weight": weight, "bias": bias}
    ints = (g.S, g.sb, g.ss, *_mod(geom.scale), *_mod(geom.shift), u.sb, u.ss, *_mod(geom.gate))
    problems = static_problems(named, (g.rows, *ints))
    if problems:
        raise UnsupportedInputError("flydsl cannot serve these inputs:\n" + "\n".join(f"  - {p}" for p in problems))
    v = Variant(_arch(residual), g.D, geom.norm, _DT[residual.dtype], scale=_dt(scale), shift=_dt(shift),
                weight=_dt(weight), bias=_dt(bias), res=True, update=_dt(update), gate=_dt(gate),
                t1=_DT[geom.t1], sum=_DT[geom.sum])
    launch = _Runner(v, g.rows, ints)
    shape, dtype = g.shape, residual.dtype

    def run(residual, update, gate, scale, shift, weight, bias, _norm, eps, scale_offset):
        check_pointers({"residual": residual, "update": update, "gate": gate, "scale": scale, "shift": shift,
                        "weight": weight, "bias": bias})
        out = torch.empty(shape, dtype=dtype, device=residual.device)
        new = torch.empty(shape, dtype=dtype, device=residual.device)
        x = residual
        launch((x, scale, x if shift is None else shift, x if weight is None else weight, x if bias is None else bias,
                out, update, update if gate is None else gate, new), eps, scale_offset)
        return out, new

    return run


# --- the variants the compile lane builds --------------------------------------------------------

# The widths of real DiTs (docs/design.md, SHAPES), the narrowest and the widest row the backend takes.
WIDTHS = (1536, 2240, 2432, 3072, 3840, 5120, 6144)
EXTREMES = (8, 65536)


def _unique(vs) -> list[Variant]:
    return list({v.name: v for v in vs}.values())


def _modulated(arch: str, norm: str) -> list[Variant]:
    out = []
    for D in WIDTHS + EXTREMES:
        out.append(Variant(arch, D, norm, "bf16", scale="bf16", shift="bf16"))
        out.append(Variant(arch, D, norm, "bf16", scale="fp32", shift="fp32", weight="bf16", bias="bf16"))
    for D in (3072, 5120):
        out.append(Variant(arch, D, norm, "fp16", scale="fp16", shift="fp16"))
        out.append(Variant(arch, D, norm, "fp32", scale="fp32", shift="fp32", weight="fp32", bias="fp32"))
        out.append(Variant(arch, D, norm, "bf16", scale="bf16"))  # no shift
    return _unique(out)


def flydsl_variants_ln_modulate(arch: str) -> list[Variant]:
    """ln_modulate: every width of the acceptance list and the extremes, bf16 with bf16 or fp32
    modulation, with and without the affine; fp16 and fp32 streams at FLUX / Wan widths."""
    return _modulated(arch, "layer")


def flydsl_variants_rms_modulate(arch: str) -> list[Variant]:
    """rms_modulate: as ln_modulate."""
    return _modulated(arch, "rms")


def flydsl_variants_layer_norm(arch: str) -> list[Variant]:
    """layer_norm: every width, plain and affine, bf16; fp32 at FLUX / Wan widths."""
    out = []
    for D in WIDTHS + EXTREMES:
        out.append(Variant(arch, D, "layer", "bf16"))
        out.append(Variant(arch, D, "layer", "bf16", weight="bf16", bias="bf16"))
    for D in (3072, 5120):
        out.append(Variant(arch, D, "layer", "fp32", weight="fp32", bias="fp32"))
    return _unique(out)


def flydsl_variants_rms_norm(arch: str) -> list[Variant]:
    """rms_norm: every width, plain, bf16 weight, and fp32 weight (eager's result is then fp32)."""
    out = []
    for D in WIDTHS + EXTREMES:
        out.append(Variant(arch, D, "rms", "bf16"))
        out.append(Variant(arch, D, "rms", "bf16", weight="bf16"))
        out.append(Variant(arch, D, "rms", "bf16", weight="fp32", out="fp32"))
    for D in (3072, 5120):
        out.append(Variant(arch, D, "rms", "fp32", weight="fp32"))
    return _unique(out)


def flydsl_variants_gated(arch: str) -> list[Variant]:
    """gated_residual_norm_modulate: every width, both norms, bf16 streams (eager's bf16
    roundings); fp32 streams at FLUX / Wan widths."""
    out = []
    for D in WIDTHS + EXTREMES:
        for norm in ("layer", "rms"):
            out.append(Variant(arch, D, norm, "bf16", scale="bf16", shift="bf16", res=True, update="bf16",
                               gate="bf16", t1="bf16", sum="bf16"))
    for D in (3072, 5120):
        for norm in ("layer", "rms"):
            out.append(Variant(arch, D, norm, "fp32", scale="fp32", shift="fp32", res=True, update="fp32",
                               gate="fp32"))
    return _unique(out)


# --- what the compile lane checks in each build's ISA (tools/compile_rocm.py) -------------------

# Every build has two FMAs that are not the exact forms (factor 1, addend 0, division steps) the
# compile lanes exempt, in the per-row scalar code all builds share; a contraction of the
# per-element arithmetic would add at least one per vector element.
SCALAR_FMAS = 2
_WIDE_LOAD = ("buffer_load_dwordx4", "buffer_load_b128")
_WIDE_STORE = ("buffer_store_dwordx4", "buffer_store_b128")


def check_isa(variant: Variant, isa: dict) -> list[str]:
    """Problems with one build, from the fields ``tools/compile_rocm.py`` reads off its ISA
    (``vgpr``, ``agpr``, ``scratch``, ``wave``, ``spills``, ``ops``: instruction counts,
    ``contracted``: FMAs that are not an exact form)."""
    cfg, out = variant.cfg, []
    if isa["scratch"] or isa["spills"]:
        out.append(f"uses scratch ({isa['scratch']} B private segment, {isa['spills']} spills)")
    if isa["wave"] != cfg.wave:
        out.append(f"built for wave{isa['wave']}, the launch rule assumes wave{cfg.wave}")
    budget = VGPR_BUDGET[variant.arch]
    if isa["vgpr"] + isa["agpr"] > budget:
        out.append(f"{isa['vgpr']} VGPRs + {isa['agpr']} AGPRs exceed the {budget} the rule assumes "
                   f"({MIN_REGISTER_WAVES} waves per SIMD; a {cfg.threads}-thread workgroup must fit)")
    ops = isa["ops"]
    streams = 2 if variant.res else 1  # x (residual) and update are read once per tile each
    wide = sum(ops.get(k, 0) for k in _WIDE_LOAD)
    if wide < cfg.tiles * streams:
        out.append(f"{wide} 128-bit loads for {cfg.tiles} tiles x {streams} streamed rows: the streaming loads "
                   "are not 128-bit")
    if variant.out != "fp32" or _BYTES[variant.x] == 4:
        if sum(ops.get(k, 0) for k in _WIDE_STORE) < cfg.tiles:
            out.append("the row's stores are not 128-bit")
    narrow = {k: n for k, n in ops.items() if k.startswith(("global_load", "global_store", "flat_load", "flat_store"))}
    if narrow:
        out.append(f"global/flat accesses outside the row's buffer descriptor: {narrow}")
    contracted = isa["contracted"]
    if len(contracted) > SCALAR_FMAS:
        out.append(f"{len(contracted)} contracted FMAs (at most {SCALAR_FMAS}, in the scalar statistics every build "
                   f"shares, are expected): the per-element arithmetic was contracted, where the kernel promises "
                   f"one rounding per product and per sum: {contracted[:4]}")
    return out
