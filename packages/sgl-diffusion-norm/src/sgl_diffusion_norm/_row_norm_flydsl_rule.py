"""The launch rule, the variants, the numerical model and the ISA checks of the FlyDSL row-norm
kernel (``_row_norm_flydsl``): plain torch, importable without ``flydsl``.

:func:`config_for` is the launch rule; a :class:`Variant` is everything one build is
specialised on; :func:`model` repeats the kernel's arithmetic on the CPU step by step (how the
tests check the kernel's maths without an AMD GPU); ``flydsl_variants_*`` list what the compile
lane builds and :func:`check_isa` what it checks in each build.
"""

from dataclasses import dataclass, field

import torch

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
        per_thread = -(-nv // tiles)
        threads = -(-per_thread // wave) * wave
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
        mods = ",".join(
            f"{k}={getattr(self, k)}"
            for k in ("scale", "shift", "weight", "bias", "update", "gate")
            if getattr(self, k) is not None
        )
        c = self.cfg
        res = f",res(t1={self.t1},sum={self.sum})" if self.res else ""
        out = f"->{self.out}" if self.out != self.x else ""
        return (
            f"row_norm[{self.norm},{self.x}{out},D={self.D},{c.threads}x{c.tiles}x{c.vec}"
            f"{',' + mods if mods else ''}{res}]@{self.arch}"
        )


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


def model(
    variant: Variant,
    x,
    scale=None,
    shift=None,
    weight=None,
    bias=None,
    *,
    update=None,
    gate=None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
):
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
            out.append(
                Variant(
                    arch,
                    D,
                    norm,
                    "bf16",
                    scale="bf16",
                    shift="bf16",
                    res=True,
                    update="bf16",
                    gate="bf16",
                    t1="bf16",
                    sum="bf16",
                )
            )
    for D in (3072, 5120):
        for norm in ("layer", "rms"):
            out.append(Variant(arch, D, norm, "fp32", scale="fp32", shift="fp32", res=True, update="fp32", gate="fp32"))
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
        out.append(
            f"{isa['vgpr']} VGPRs + {isa['agpr']} AGPRs exceed the {budget} the rule assumes "
            f"({MIN_REGISTER_WAVES} waves per SIMD; a {cfg.threads}-thread workgroup must fit)"
        )
    ops = isa["ops"]
    streams = 2 if variant.res else 1  # x (residual) and update are read once per tile each
    wide = sum(ops.get(k, 0) for k in _WIDE_LOAD)
    if wide < cfg.tiles * streams:
        out.append(
            f"{wide} 128-bit loads for {cfg.tiles} tiles x {streams} streamed rows: the streaming loads are not 128-bit"
        )
    if variant.out != "fp32" or _BYTES[variant.x] == 4:
        if sum(ops.get(k, 0) for k in _WIDE_STORE) < cfg.tiles:
            out.append("the row's stores are not 128-bit")
    narrow = {k: n for k, n in ops.items() if k.startswith(("global_load", "global_store", "flat_load", "flat_store"))}
    if narrow:
        out.append(f"global/flat accesses outside the row's buffer descriptor: {narrow}")
    contracted = isa["contracted"]
    if len(contracted) > SCALAR_FMAS:
        out.append(
            f"{len(contracted)} contracted FMAs (at most {SCALAR_FMAS}, in the scalar statistics every build "
            f"shares, are expected): the per-element arithmetic was contracted, where the kernel promises "
            f"one rounding per product and per sum: {contracted[:4]}"
        )
    return out
