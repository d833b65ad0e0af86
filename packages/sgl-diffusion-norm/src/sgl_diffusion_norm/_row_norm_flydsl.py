"""FlyDSL kernel of the row-norm family, contract ``close`` (ROCm: gfx942, gfx950, gfx1201).
The ``flydsl`` backend of ``layer_norm``, ``rms_norm``, ``ln_modulate``, ``rms_modulate``
(``prepare``, ``prepare_norm``) and ``gated_residual_norm_modulate`` (``prepare_gated``).

Imported only when the ``flydsl`` backend is chosen (or by the compile lane and the tests);
``flydsl`` itself is imported inside :func:`build`, so the refusals are importable without it.
The launch rule, the variants, the numerical model and the ISA checks live in
``_row_norm_flydsl_rule`` (plain torch).

The kernel: one workgroup per row ``(b, s)``. Every thread owns ``tiles`` vectors of
``vec`` elements (one 128-bit global access each: 8 bf16/fp16 or 4 fp32 values), strided by
the workgroup size, so a row is read once and held in registers. Each row's global accesses
go through a buffer descriptor rebased on the row with the row's byte length as its range:
loads past the end of the row return 0 and stores past it are dropped by the hardware, so the
last, partial tile needs no branch and nothing outside the row is ever touched.

Arithmetic (fp32, the order the numerical model in :func:`model` reproduces step by step): per
thread, each vector is summed left to right and the vector sums are added tile by tile; the
workgroup sum is a butterfly over the wave (``shuffle_xor`` with offsets ``wave/2 .. 1``, so
every lane ends with the same value) followed, with several waves, by a left-to-right sum of
the per-wave values through LDS (every lane of a wave holds the same sum and writes it).
LayerNorm: ``mean = sum(x) * (1/D)``, then the centred ``var = sum((x - mean)^2) * (1/D)`` over
the registers (padding lanes masked); RMSNorm: ``ms = sum(x^2) * (1/D)``. ``rstd = rsqrt(var +
eps)``, then ``y = (x - mean) * rstd`` ``[* weight][+ bias][* (scale_offset + scale)][+
shift]``, rounded once to x's dtype. No fast-math flags: every product and sum is rounded on
its own (no FMA contraction), which the gated residual needs to be bit-exact to eager.

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
import os

import torch

from sgl_diffusion_core import UnsupportedInputError

from ._row_norm_flydsl_rule import (  # noqa: F401 (the compile lane reaches these through this module)
    _BYTES,
    _DT,
    ALIGN,
    ARCHS,
    WAVE,
    Variant,
    check_isa,
    flydsl_variants_gated,
    flydsl_variants_layer_norm,
    flydsl_variants_ln_modulate,
    flydsl_variants_rms_modulate,
    flydsl_variants_rms_norm,
)

# --- the kernel ---------------------------------------------------------------------------------


def _clean_env() -> None:
    """FlyDSL 0.5 reads the unprefixed ``ARCH`` and ``COMPILE_ONLY`` variables: an ``ARCH`` left
    by a build system would retarget every kernel, and ``COMPILE_ONLY`` makes every launch a
    silent no-op. Refuse to build or launch under either."""
    for var in ("ARCH", "COMPILE_ONLY"):
        if os.environ.get(var):
            why = "it retargets every kernel" if var == "ARCH" else "every launch would do nothing"
            raise UnsupportedInputError(
                f"the environment sets {var}={os.environ[var]!r}, which FlyDSL 0.5 reads ({why}); unset it to use "
                "the flydsl backend (FLYDSL_GPU_ARCH names a compile target)"
            )


# The pieces of the kernel, called while FlyDSL traces it (Python-level helpers: every branch in
# them is on compile-time values).


def _atom(dt: str, vec: int):
    """The copy atom of one vector of ``vec`` elements of ``dt`` and how many pieces it takes (at
    most 128 bits each: a vector of 8 fp32 values is two)."""
    import flydsl.expr as fx

    bits = vec * _BYTES[dt] * 8
    per = min(bits, 128)
    op = {128: fx.rocdl.BufferCopy128b, 64: fx.rocdl.BufferCopy64b, 32: fx.rocdl.BufferCopy32b}[per]
    return fx.make_copy_atom(op(), _BYTES[dt] * 8), bits // per


def _row(t, off, dt: str, D: int, vec: int):
    """t's row starting ``off`` elements in, as ``[vectors, pieces]`` behind a buffer descriptor
    whose range is the row (loads past it read 0, stores past it are dropped)."""
    import flydsl.expr as fx

    ptr = fx.add_offset(fx.get_iter(t), off)
    view = fx.make_view(fx.rocdl.make_buffer_ptr(ptr, num_records_bytes=fx.Int64(D * _BYTES[dt])),
                        fx.make_layout(D, 1))
    return fx.logical_divide(view, fx.make_layout(vec // _atom(dt, vec)[1], 1))


def _fx_type(dt: str):
    import flydsl.expr as fx

    return {"bf16": fx.BFloat16, "fp16": fx.Float16, "fp32": fx.Float32}[dt]


def _copy(row, idx, dt: str, vec: int, reg, load: bool) -> None:
    import flydsl.expr as fx

    atom, pieces = _atom(dt, vec)
    if pieces == 1:
        glob, regs = [fx.slice(row, (None, idx))], [reg]
    else:
        rd = fx.logical_divide(reg, fx.make_layout(vec // pieces, 1))
        glob = [fx.slice(row, (None, idx * pieces + p)) for p in range(pieces)]
        regs = [fx.slice(rd, (None, p)) for p in range(pieces)]
    for g, r in zip(glob, regs):
        fx.copy_atom_call(atom, g, r) if load else fx.copy_atom_call(atom, r, g)


def _load(row, idx, dt: str, vec: int):
    import flydsl.expr as fx

    r = fx.make_rmem_tensor(vec, _fx_type(dt))
    _copy(row, idx, dt, vec, r, load=True)
    return fx.memref_load_vec(r).to(fx.Float32)


def _store(row, idx, dt: str, vec: int, val) -> None:
    import flydsl.expr as fx

    r = fx.make_rmem_tensor(vec, _fx_type(dt))
    fx.memref_store_vec(val.to(_fx_type(dt)), r)
    _copy(row, idx, dt, vec, r, load=False)


def _rnd(val, dt: str):
    """fp32 values rounded to ``dt`` and widened back."""
    import flydsl.expr as fx

    return val if dt == "fp32" else val.to(_fx_type(dt)).to(fx.Float32)


def _workgroup_sum(p, slots, tid, cfg):
    """The butterfly over the wave, then (several waves) the per-wave sums added in wave order."""
    import flydsl.expr as fx
    from flydsl.expr import gpu

    off = cfg.wave // 2
    while off:
        p = p + p.shuffle_xor(off, cfg.wave)
        off //= 2
    if cfg.waves == 1:
        return p
    fx.memref_store(p, slots, tid // cfg.wave)  # every lane of the wave holds the same value
    gpu.barrier()
    total = fx.memref_load(slots, 0)
    for k in range(1, cfg.waves):
        total = total + fx.memref_load(slots, k)
    return total


def _statistics(v: Variant, rows: dict, slots, tid, eps):
    """Read the row (the gated residual first: summed, rounded, stored), then its statistics:
    the row's fp32 vectors, the mean (None for RMSNorm) and ``rstd``."""
    import flydsl.expr as fx
    from flydsl.expr import math as fmath
    from flydsl.expr.typing import ReductionOp

    cfg = v.cfg
    nv = v.D // cfg.vec
    vals, acc = [], fx.Float32(0.0)
    for t in range(cfg.tiles):
        idx = tid + t * cfg.threads
        xv = _load(rows["x"], idx, v.x, cfg.vec)
        if v.res:
            t1 = _load(rows["update"], idx, v.update, cfg.vec)
            if v.gate is not None:
                t1 = _rnd(_load(rows["gate"], idx, v.gate, cfg.vec) * t1, v.t1)
            xv = _rnd(_rnd(xv + t1, v.sum), v.x)
            _store(rows["new"], idx, v.x, cfg.vec, xv)
        vals.append(xv)
        acc = acc + (xv if v.norm == "layer" else xv * xv).reduce(ReductionOp.ADD)
    mean = None
    if v.norm == "layer":
        mean = _workgroup_sum(acc, slots[0], tid, cfg) * (1.0 / v.D)
        acc = fx.Float32(0.0)
        for t in range(cfg.tiles):
            c = vals[t] - mean
            part = (c * c).reduce(ReductionOp.ADD)
            if t == cfg.tiles - 1 and cfg.tiles * cfg.threads > nv:  # idle slots of the last tile
                part = (tid + t * cfg.threads < nv).select(part, fx.Float32(0.0))
            acc = acc + part
        var = _workgroup_sum(acc, slots[1], tid, cfg) * (1.0 / v.D)
    else:
        var = _workgroup_sum(acc, slots[0], tid, cfg) * (1.0 / v.D)
    return vals, mean, fmath.rsqrt(var + eps)


def _write(v: Variant, rows: dict, tid, vals, mean, rstd, scale_offset) -> None:
    """``(x - mean) * rstd [* weight][+ bias][* (scale + scale_offset)][+ shift]``, rounded once."""
    cfg = v.cfg
    for t in range(cfg.tiles):
        idx = tid + t * cfg.threads
        y = (vals[t] - mean) * rstd if mean is not None else vals[t] * rstd
        for name, op in (("weight", "mul"), ("bias", "add"), ("scale", "scale"), ("shift", "add")):
            dt = getattr(v, name)
            if dt is None:
                continue
            m = _load(rows[name], idx, dt, cfg.vec)
            y = y * m if op == "mul" else y + m if op == "add" else y * (m + scale_offset)
        _store(rows["out"], idx, v.out, cfg.vec, y)


@functools.cache
def build(variant: Variant):
    """The FlyDSL launcher (``@flyc.jit``) of one variant. Arguments: the nine tensors (flat
    views, see :func:`_flat`; absent ones may repeat x), ``rows``, the runtime geometry
    (``S``, x, scale, shift, update and gate strides and frame lengths), ``eps``,
    ``scale_offset``, then the stream."""
    _clean_env()
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    v, cfg = variant, variant.cfg
    I64 = fx.Int64

    @fx.struct
    class Slots:  # per-wave partial sums of the two reductions
        s0: fx.Array[fx.Float32, max(cfg.waves, 1), 16]
        s1: fx.Array[fx.Float32, max(cfg.waves, 1), 16]

    @flyc.kernel(known_block_size=[cfg.threads, 1, 1])
    def row_norm_kernel(
        X: fx.Tensor, SC: fx.Tensor, SH: fx.Tensor, W: fx.Tensor, BI: fx.Tensor, Y: fx.Tensor,
        U: fx.Tensor, G: fx.Tensor, NR: fx.Tensor,
        S: fx.Int32, x_sb: fx.Int32, x_ss: fx.Int32, sc_sb: fx.Int32, sc_ss: fx.Int32, sc_L: fx.Int32,
        sh_sb: fx.Int32, sh_ss: fx.Int32, sh_L: fx.Int32, u_sb: fx.Int32, u_ss: fx.Int32,
        g_sb: fx.Int32, g_ss: fx.Int32, g_L: fx.Int32, eps: fx.Float32, scale_offset: fx.Float32,
    ):  # fmt: skip
        row = fx.block_idx.x
        tid = fx.thread_idx.x
        b = row // S
        s = row - b * S
        at = {  # name -> (tensor, element offset of this row's vector, dtype)
            "x": (X, I64(b) * I64(x_sb) + I64(s) * I64(x_ss), v.x),
            "out": (Y, I64(row) * v.D, v.out),
            "scale": (SC, I64(b) * I64(sc_sb) + I64(s // sc_L) * I64(sc_ss), v.scale),
            "shift": (SH, I64(b) * I64(sh_sb) + I64(s // sh_L) * I64(sh_ss), v.shift),
            "weight": (W, I64(0), v.weight),
            "bias": (BI, I64(0), v.bias),
            "update": (U, I64(b) * I64(u_sb) + I64(s) * I64(u_ss), v.update),
            "gate": (G, I64(b) * I64(g_sb) + I64(s // g_L) * I64(g_ss), v.gate),
            "new": (NR, I64(row) * v.D, v.x if v.res else None),
        }
        rows = {k: _row(t, off, dt, v.D, cfg.vec) for k, (t, off, dt) in at.items() if dt is not None}
        slots = (None, None)
        if cfg.waves > 1:
            lds = fx.SharedAllocator().allocate(Slots).peek()
            slots = (lds.s0.view(fx.make_layout(cfg.waves, 1)), lds.s1.view(fx.make_layout(cfg.waves, 1)))
        vals, mean, rstd = _statistics(v, rows, slots, tid, eps)
        _write(v, rows, tid, vals, mean, rstd, scale_offset)

    @flyc.jit
    def launch(
        X: fx.Tensor, SC: fx.Tensor, SH: fx.Tensor, W: fx.Tensor, BI: fx.Tensor, Y: fx.Tensor,
        U: fx.Tensor, G: fx.Tensor, NR: fx.Tensor, rows: fx.Int32,
        S: fx.Int32, x_sb: fx.Int32, x_ss: fx.Int32, sc_sb: fx.Int32, sc_ss: fx.Int32, sc_L: fx.Int32,
        sh_sb: fx.Int32, sh_ss: fx.Int32, sh_L: fx.Int32, u_sb: fx.Int32, u_ss: fx.Int32,
        g_sb: fx.Int32, g_ss: fx.Int32, g_L: fx.Int32, eps: fx.Float32, scale_offset: fx.Float32,
        stream: fx.Stream = fx.Stream(None),  # noqa: B008 (FlyDSL's launcher signature)
    ):  # fmt: skip
        row_norm_kernel(X, SC, SH, W, BI, Y, U, G, NR, S, x_sb, x_ss, sc_sb, sc_ss, sc_L, sh_sb, sh_ss, sh_L,
                        u_sb, u_ss, g_sb, g_ss, g_L, eps, scale_offset).launch(
            grid=(rows, 1, 1), block=(cfg.threads, 1, 1), stream=stream)  # fmt: skip

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
        raise RuntimeError(
            f"compiling {variant.name} needs FLYDSL_GPU_ARCH={variant.arch}, the environment has {got or 'none'}"
        )
    v = variant
    x = _placeholder(v.x)
    t = lambda dt: x if dt is None else _placeholder(dt)  # noqa: E731
    tensors = (
        x,
        t(v.scale),
        t(v.shift),
        t(v.weight),
        t(v.bias),
        _placeholder(v.out),
        t(v.update),
        t(v.gate),
        _placeholder(v.x) if v.res else x,
    )
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
            out.append(
                f"{name}: row strides {list(t.stride())} are not multiples of {ALIGN} bytes "
                f"(the kernel reads 128-bit vectors)"
            )
    if any(abs(i) > _I32 for i in ints):
        out.append("a size or stride exceeds 2^31 - 1 elements (the kernel indexes rows with 32-bit integers)")
    return out


def check_pointers(named: dict[str, torch.Tensor | None]) -> None:
    """Every data pointer 16-byte aligned (checked per call: the plan key does not see addresses)."""
    for name, t in named.items():
        if t is not None and t.numel() and t.data_ptr() % ALIGN:
            raise UnsupportedInputError(
                f"flydsl: {name} starts {t.data_ptr() % ALIGN} bytes past a {ALIGN}-byte boundary (a view "
                f"at an odd offset); the kernel reads 128-bit vectors: use backend='triton' or a copy"
            )


class _Runner:
    """Compiles the variant on the first call, then launches the compiled function."""

    def __init__(self, variant: Variant, rows: int, ints: tuple[int, ...]):
        self.variant, self.rows, self.ints = variant, rows, ints
        self.fn = None

    def __call__(self, tensors: tuple, eps: float, scale_offset: float) -> None:
        import flydsl.compiler as flyc

        _clean_env()
        args = [
            flyc.from_dlpack(_flat(t)).mark_layout_dynamic(leading_dim=0, divisibility=16 // t.element_size())
            for t in tensors
        ]
        stream = torch.cuda.current_stream(tensors[0].device)
        if self.fn is None:
            self.fn = flyc.compile(
                build(self.variant), *args, self.rows, *self.ints, float(eps), float(scale_offset), stream
            )
        self.fn(*args, self.rows, *self.ints, float(eps), float(scale_offset), stream)


def _norm_runner(geom, x, scale, shift, weight, bias):
    g = geom.x
    named = {"x": x, "scale": scale, "shift": shift, "weight": weight, "bias": bias}
    ints = (g.S, g.sb, g.ss, *_mod(geom.scale), *_mod(geom.shift), 0, 0, 0, 0, 1)
    problems = static_problems(named, (g.rows, *ints))
    if problems:
        raise UnsupportedInputError("flydsl cannot serve these inputs:\n" + "\n".join(f"  - {p}" for p in problems))
    v = Variant(
        _arch(x),
        g.D,
        geom.norm,
        _DT[x.dtype],
        scale=_dt(scale),
        shift=_dt(shift),
        weight=_dt(weight),
        bias=_dt(bias),
        out=_DT[geom.chain.out],
    )
    return named, _Runner(v, g.rows, ints)


def _tensors(x, scale, shift, weight, bias, out, update=None, gate=None, new=None) -> tuple:
    """The kernel's nine tensors in its order; an absent one is x (the kernel never reads it)."""
    return tuple(x if t is None else t for t in (x, scale, shift, weight, bias, out, update, gate, new))


def prepare(geom, x, scale, shift, weight, bias):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` for one call
    signature of ``ln_modulate`` / ``rms_modulate``."""
    _clean_env()
    _, launch = _norm_runner(geom, x, scale, shift, weight, bias)
    shape, dtype = geom.x.shape, geom.chain.out

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        check_pointers({"x": x, "scale": scale, "shift": shift, "weight": weight, "bias": bias})
        out = torch.empty(shape, dtype=dtype, device=x.device)
        launch(_tensors(x, scale, shift, weight, bias, out), eps, scale_offset)
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
        launch(_tensors(x, None, None, weight, bias, out), eps, scale_offset)
        return out

    return run


def prepare_gated(geom, residual, update, gate, scale, shift, weight, bias):
    """A runner ``(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset) ->
    (out, new_residual)`` for one call signature of ``gated_residual_norm_modulate``."""
    _clean_env()
    g, u = geom.residual, geom.update
    names = ("residual", "update", "gate", "scale", "shift", "weight", "bias")
    named = dict(zip(names, (residual, update, gate, scale, shift, weight, bias)))
    ints = (g.S, g.sb, g.ss, *_mod(geom.scale), *_mod(geom.shift), u.sb, u.ss, *_mod(geom.gate))
    problems = static_problems(named, (g.rows, *ints))
    if problems:
        raise UnsupportedInputError("flydsl cannot serve these inputs:\n" + "\n".join(f"  - {p}" for p in problems))
    v = Variant(_arch(residual), g.D, geom.norm, _DT[residual.dtype], scale=_dt(scale), shift=_dt(shift),
                weight=_dt(weight), bias=_dt(bias), res=True, update=_dt(update), gate=_dt(gate),
                t1=_DT[geom.t1], sum=_DT[geom.sum])  # fmt: skip
    launch = _Runner(v, g.rows, ints)
    shape, dtype = g.shape, residual.dtype

    def run(residual, update, gate, scale, shift, weight, bias, _norm, eps, scale_offset):
        check_pointers(dict(zip(names, (residual, update, gate, scale, shift, weight, bias))))
        out = torch.empty(shape, dtype=dtype, device=residual.device)
        new = torch.empty(shape, dtype=dtype, device=residual.device)
        launch(_tensors(residual, scale, shift, weight, bias, out, update, update if gate is None else gate, new),
               eps, scale_offset)  # fmt: skip
        return out, new

    return run
