#!/usr/bin/env python3
"""Compile every registered Triton kernel ahead of time for one GPU target; no GPU needed.

    python tools/aot_compile.py --target sm_90 [--json build/aot/sm_90.json] [-k substring]
    python tools/aot_compile.py --target sm_80 --sample     # one variant per kernel and argument types
    python tools/aot_compile.py --target all

Imports every distribution found under ``packages/*/src`` (a domain package registers its
ops and backends on import), walks ``sgl_diffusion_core.REGISTRY.all_specs()`` and, for
every spec with ``aot="module:function"``, calls that function for its list of
``AotVariant`` and compiles each one with ``triton.compile`` for the target. The function
takes no argument, or one: the platform being compiled for (``"cuda"`` or ``"hip"``), so
that a backend can return the launch configurations it really uses there (warp size 64 on
ROCm changes block and warp heuristics). Prints one line per variant as it goes, then a
table of registers, spills, shared memory, stack and compile time. A variant's
``divisible_by_16`` names the arguments a real launch sees as multiples of 16 (Triton's
``tt.divisibility`` specialization, which enables 16-byte vector accesses); without it the
build is the scalar-access kernel of unaligned arguments.

Resource usage:
  CUDA  registers, static shared memory and stack frame from the cubin (Triton's bundled
        ``cuobjdump --dump-resource-usage``); spill stores/loads (bytes per thread) from the
        ``ptxas -v`` log of the ptxas run that built the cubin (Triton passes ``-v`` and
        prints the log with ``TRITON_DUMP_PTXAS_LOG=1``; the PTX of sm_90 and sm_100 targets
        ``sm_90a`` / ``sm_100a``; sm_90+ uses ``ptxas-blackwell``). A variant whose kernel
        the run has already built (same source, specialization and options: Triton's cache
        answers, no ptxas runs) reports the usage measured for that kernel. Only where no
        log was captured does the tool run the bundled ``ptxas -v`` itself on the same PTX
        with Triton's flags. Spills land in the stack frame, not in LOCAL, so ``stack B``
        is the column that grows.
  ROCm  ``.vgpr_count``, ``.sgpr_count``, ``.agpr_count``, ``.vgpr_spill_count``,
        ``.sgpr_spill_count``, ``.group_segment_fixed_size`` (static LDS) and
        ``.private_segment_fixed_size`` (scratch) from the AMDGPU metadata in the amdgcn text.
  Both  ``smem B`` is the dynamic shared memory / LDS Triton launches with
        (``metadata.shared``); ``static smem B`` is what the binary reserves itself
        (1 KiB of system shared memory on sm_90+).

Exits non-zero when a variant fails to compile, when an ``aot`` target does not resolve,
when a Triton backend (a spec that requires ``triton``) has no ``aot`` entry, or when no
variant was found at all: a compile lane that compiled nothing must not pass.

Each run compiles into a fresh, temporary Triton cache (unless ``--cache-dir`` is given),
so compile times are real and a stale cache never hides a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import amd_isa  # noqa: E402

# target name -> (Triton backend, arch, warp size)
TARGETS: dict[str, tuple[str, int | str, int]] = {
    "sm_80": ("cuda", 80, 32),
    "sm_90": ("cuda", 90, 32),
    "sm_100": ("cuda", 100, 32),
    "gfx942": ("hip", "gfx942", 64),
    "gfx950": ("hip", "gfx950", 64),
}


@dataclasses.dataclass
class Result:
    variant: str
    spec: str  # "op/backend"
    target: str
    ok: bool
    seconds: float
    registers: str = "-"  # "72" (CUDA) or "39v/59s/0a" (ROCm: VGPRs/SGPRs/AGPRs)
    spills: str = "-"  # CUDA: "stores/loads" in bytes per thread; ROCm: "vgpr/sgpr" spill counts
    spilled: bool = False
    smem: int | None = None  # dynamic shared memory / LDS bytes Triton launches with
    static_smem: int | None = None  # static shared memory in the binary (CUDA SHARED, ROCm group segment)
    stack: int | None = None  # CUDA stack frame bytes per thread (spills land here) / ROCm private segment
    num_warps: int = 0
    error: str = ""
    notes: list[str] = dataclasses.field(default_factory=list)


# --- discovery ------------------------------------------------------------------------------------


def family_packages() -> list[str]:
    """Import names of every distribution under packages/*/src (one top-level package each)."""
    names = []
    for init in sorted(ROOT.glob("packages/*/src/*/__init__.py")):
        names.append(init.parent.name)
    return names


def import_family() -> list[str]:
    """Import every package of the family (top level only); registration happens on import."""
    names = family_packages()
    if not names:
        raise SystemExit(f"aot_compile: no packages found under {ROOT / 'packages'}/*/src")
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        # Not installed (e.g. run outside .venv): fall back to the source trees.
        for src in sorted(ROOT.glob("packages/*/src")):
            sys.path.insert(0, str(src))
        print(f"aot_compile: {', '.join(missing)} not installed; importing from packages/*/src", flush=True)
    for name in names:
        importlib.import_module(name)
    return names


# --- resource usage --------------------------------------------------------------------------------


def _run_tool(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr or proc.stdout}")
    return proc.stdout + proc.stderr


# CompiledKernel.hash -> the CUDA usage measured for that kernel: a variant identical to one
# built before in this run (Triton's cache answers, no ptxas runs) reports the same numbers.
_CUDA_USAGE: dict[str, tuple[str, int, int, str, bool, list[str]]] = {}


def cuda_usage(kernel: Any, res: Result, workdir: Path, ptxas_log: str | None = None) -> None:
    """``ptxas_log``: the ``-v`` log of the ptxas run that built ``kernel.asm["cubin"]`` (Triton's,
    printed under ``TRITON_DUMP_PTXAS_LOG``); None: run the bundled ptxas -v here."""
    from triton import knobs
    from triton.backends.nvidia.compiler import get_ptxas

    key = getattr(kernel, "hash", None)
    if key is not None and key in _CUDA_USAGE and not ptxas_log:
        res.registers, res.static_smem, res.stack, res.spills, res.spilled, notes = _CUDA_USAGE[key]
        res.notes.extend(notes)
        return
    name = kernel.metadata.name
    cubin = workdir / f"{name}.cubin"
    cubin.write_bytes(kernel.asm["cubin"])
    out = _run_tool([knobs.nvidia.cuobjdump.path, "--dump-resource-usage", str(cubin)])
    m = re.search(r"Function\s+(\S+):\s*\n\s*(REG:.*)", out)
    if m is None:
        raise RuntimeError(f"cuobjdump printed no resource usage for {name}:\n{out}")
    fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", m.group(2)))
    res.registers = fields.get("REG", "?")
    res.static_smem = int(fields.get("SHARED", 0))
    res.stack = int(fields.get("STACK", 0)) + int(fields.get("LOCAL", 0))

    # Spills: the ptxas -v log of the cubin's own build, else ptxas -v on the same PTX with the
    # flags Triton used for the cubin.
    log = ptxas_log
    if not log:
        ptx = kernel.asm["ptx"]
        gpu = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
        if gpu is None:
            raise RuntimeError("no .target line in the PTX")
        ptx_file = workdir / f"{name}.ptx"
        ptx_file.write_text(ptx)
        arch = TARGETS[res.target][1]
        fmad = [] if kernel.metadata.enable_fp_fusion else ["--fmad=false"]
        cmd = [get_ptxas(arch).path, "-v", *fmad, "--regAllocOptLevel=2", f"--gpu-name={gpu.group(1)}"]
        log = _run_tool([*cmd, str(ptx_file), "-o", str(workdir / f"{name}.ptxas.cubin")])
    stores = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    regs = re.search(r"Used (\d+) registers", log)
    if stores is None:
        raise RuntimeError(f"ptxas -v printed no spill line:\n{log}")
    res.spills = f"{stores.group(1)}/{stores.group(2)}"
    res.spilled = int(stores.group(1)) + int(stores.group(2)) > 0
    notes = []
    if regs is not None and regs.group(1) != res.registers:
        notes.append(f"ptxas -v reports {regs.group(1)} registers, the cubin {res.registers}")
    res.notes.extend(notes)
    if key is not None:
        _CUDA_USAGE[key] = (res.registers, res.static_smem, res.stack, res.spills, res.spilled, notes)


def rocm_usage(kernel: Any, res: Result) -> None:
    text = kernel.asm["amdgcn"]
    meta = text.split(".amdgpu_metadata", 1)[-1]  # the YAML kernel metadata block
    vgpr = amd_isa.metadata_field(meta, "vgpr_count")
    sgpr = amd_isa.metadata_field(meta, "sgpr_count")
    agpr = amd_isa.metadata_field(meta, "agpr_count")
    if agpr is None:
        m = re.search(r"^; NumAgprs:\s*(\d+)", text, re.MULTILINE)
        agpr = int(m.group(1)) if m else 0
    if vgpr is None or sgpr is None:
        raise RuntimeError("no .vgpr_count/.sgpr_count in the amdgcn metadata")
    res.registers = f"{vgpr}v/{sgpr}s/{agpr}a"
    vspill = amd_isa.metadata_field(meta, "vgpr_spill_count") or 0
    sspill = amd_isa.metadata_field(meta, "sgpr_spill_count") or 0
    res.spills = f"{vspill}v/{sspill}s"
    res.spilled = vspill + sspill > 0
    res.static_smem = amd_isa.metadata_field(meta, "group_segment_fixed_size")
    res.stack = amd_isa.metadata_field(meta, "private_segment_fixed_size")


# --- compile ----------------------------------------------------------------------------------------


_FMA_PATTERNS = {
    "cuda": re.compile(r"^\s*fma\.rn[.\w]*\s+(?P<ops>[^;]+);"),
    "hip": re.compile(r"^\s*(?P<mn>v_(?:pk_)?(?:fmac?|mad)_(?:mix_)?f32)(?:_e(?:32|64))?\s+(?P<ops>.+)$"),
}
# A multiply by exactly one or an add of zero rounds once either way: the compiler folds a
# conversion (fp16 -> fp32 on AMD: v_fma_mix_f32 a, 1.0, c) or a plain product into the
# FMA encoding without changing the result, so those forms are not contractions.
# +-1.0 and +-0.0 as they appear in PTX / AMDGCN: fp32 literals, and bf16/fp16 bit patterns
# (0x3F80 / 0xBF80 bf16 +-1.0, 0x3C00 / 0xBC00 fp16 +-1.0) held in registers by mov instructions.
# A factor of +-1 makes the product exact, so the FMA rounds once, as the add / subtract it is.
# Packed pairs (``fma.rn.bf16x2``) hold the constant twice in one b32 register, written in hex or as a
# signed decimal: bf16 (1.0, 1.0) = 0x3F803F80 = 1065369472, (-1.0, -1.0) = 0xBF80BF80 = -1082081408,
# (-0.0, -0.0) = 0x80008000 = -2147450880, (+0.0, +0.0) = 0.
_ONE = {"0f3F800000", "0fBF800000", "1.0", "-1.0", "0x3F80", "0x3f80", "0xBF80", "0xbf80", "0x3C00", "0x3c00",
        "0xBC00", "0xbc00", "0x3F803F80", "0x3f803f80", "1065369472", "0xBF80BF80", "0xbf80bf80",
        "-1082081408"}  # fmt: skip
_ZERO = {"0f00000000", "0f80000000", "0", "neg(0)", "-0", "0.0", "0x8000", "0x0000", "0x80008000",
         "-2147450880", "0x00000000"}  # fmt: skip
_PTX_CONST = re.compile(r"^\s*mov\.(?:b16|b32|f32|u16|u32)\s+(%\w+),\s*([-\w.]+);")
# fp32 ``x / y`` on AMD is not one instruction: LLVM expands the correctly rounded division into
# v_div_scale (scaled operands), v_rcp, a Newton-Raphson refinement of FMAs, v_div_fmas and
# v_div_fixup; those FMAs are the division's own steps, not a contraction of the kernel's a * b + c.
# An FMA is one of them when a factor derives (through v_rcp / v_mul / FMAs) from the v_div_scale
# of a division (keyed by its denominator, numerator) whose v_div_fixup has not yet come.
_AMD_DIV_STEP = re.compile(r"^\s*(v_div_scale|v_div_fixup|v_rcp|v_mul|v_fmac?)_f32(?:_e(?:32|64))?\s+(.+)$")
_AMD_VDST = re.compile(r"^\s*[a-z]\w*\s+v(?:(\d+)\b|\[(\d+):(\d+)\])")  # first operand, a VGPR or a range


def _amd_division_steps(asm: str) -> set[int]:
    """Indices of the lines of AMDGCN that are FMAs inside an expanded fp32 division (see above)."""
    tainted: dict[str, tuple[str, ...]] = {}  # VGPR -> (denominator, numerator) of its division
    steps: set[int] = set()
    for i, line in enumerate(asm.splitlines()):
        d = _AMD_VDST.match(line)
        if not d:
            continue
        first, last = (d.group(1), d.group(1)) if d.group(1) else (d.group(2), d.group(3))
        written = [f"v{r}" for r in range(int(first), int(last) + 1)]
        m = _AMD_DIV_STEP.match(line)
        mn, ops = (m.group(1), [re.sub(r"[^\w]", "", o) for o in m.group(2).split(",")]) if m else ("", [])
        factors = ops[1:3] if mn.startswith("v_fma") else ops[1:]
        key = tuple(ops[-2:]) if mn == "v_div_scale" else next((tainted[f] for f in factors if f in tainted), None)
        for r in [r for r, k in tainted.items() if r in written or (mn == "v_div_fixup" and k == tuple(ops[-2:]))]:
            del tainted[r]  # overwritten (a load, a move, v_div_fmas ...), or its division is complete
        if key is not None and mn != "v_div_fixup":
            tainted.update(dict.fromkeys(written, key))
            steps.update([i] if mn.startswith("v_fma") else [])
    return steps


def fused_multiply_adds(asm: str, backend: str) -> list[str]:
    """Lines of PTX / AMDGCN that contract a multiply and an add into one rounding.

    An FMA with a factor of +-1.0 or an addend of +-0.0 rounds once, like the single add,
    subtract or multiply it stands for: that is how sm_80 (no bf16 ``add`` / ``sub`` / ``mul``
    instructions) emits them, so those are not contractions. The constant may be a literal
    or a register set by one ``mov`` of a constant (PTX). The FMAs of an fp32 division's
    correctly rounded expansion on AMD (``_amd_division_steps``) are not contractions either.
    """
    pat = _FMA_PATTERNS[backend]
    consts: dict[str, str] = {}
    if backend == "cuda":
        for line in asm.splitlines():
            c = _PTX_CONST.match(line)
            if c:
                consts.setdefault(c.group(1), c.group(2))
    out = []
    division = _amd_division_steps(asm) if backend == "hip" else set()
    for i, line in enumerate(asm.splitlines()):
        m = pat.search(line)
        if not m or i in division:
            continue
        text = re.sub(r"\s+\w+:\S+|\s+clamp\b", "", m.group("ops"))  # drop AMD modifiers (op_sel_hi:[1,0,0])
        ops = [o.strip() for o in text.split(",")]
        srcs = [consts.get(o, o) for o in ops[1:]]
        if backend == "hip" and m.group("mn").startswith("v_fmac"):
            factors, addend = srcs[:2], None  # dst += a * b
        else:
            factors, addend = srcs[:2], (srcs[2] if len(srcs) > 2 else None)
        if any(f in _ONE for f in factors) or addend in _ZERO:
            continue
        out.append(line.strip())
    return out


def compile_variant(variant: Any, spec_id: str, target: str, workdir: Path) -> Result:
    import triton
    from triton.backends.compiler import GPUTarget

    backend, arch, warp = TARGETS[target]
    name = getattr(variant, "name", repr(variant))
    res = Result(variant=name, spec=spec_id, target=target, ok=False, seconds=0.0)
    t0 = time.perf_counter()
    try:
        res.num_warps = int(variant.num_warps)
        options = {"num_warps": res.num_warps, "num_stages": int(variant.num_stages)}
        options.update(getattr(variant, "options", None) or {})  # e.g. enable_fp_fusion=False
        names = list(variant.kernel.arg_names)
        hinted = set(getattr(variant, "divisible_by_16", ()) or ())
        unknown = hinted - set(names)
        if unknown:
            raise ValueError(f"divisible_by_16 names no parameter of the kernel: {sorted(unknown)}")
        attrs = {
            (i,): [["tt.divisibility", 16]]
            for i, n in enumerate(names)
            if n in hinted and variant.signature.get(n) != "constexpr"
        }
        src = triton.compiler.ASTSource(
            fn=variant.kernel, signature=dict(variant.signature), constexprs=dict(variant.constexprs), attrs=attrs
        )
        # CUDA: Triton runs ptxas with -v; TRITON_DUMP_PTXAS_LOG (set in main) makes it print that
        # log, caught here for the spill report (an error's reproducer is printed again below).
        printed = io.StringIO()
        try:
            with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(printed):
                warnings.simplefilter("always")
                kernel = triton.compile(src, target=GPUTarget(backend, arch, warp), options=options)
        except Exception:
            sys.stdout.write(printed.getvalue())
            raise
        for w in caught:
            res.notes.append(f"{w.category.__name__}: {w.message}")
        res.seconds = time.perf_counter() - t0
        res.smem = int(kernel.metadata.shared)
        vdir = workdir / re.sub(r"[^\w.=-]+", "_", f"{target}-{name}")
        vdir.mkdir(parents=True, exist_ok=True)
        if backend == "cuda":
            cuda_usage(kernel, res, vdir, printed.getvalue() if "bytes spill stores" in printed.getvalue() else None)
        else:
            rocm_usage(kernel, res)
            problems = amd_isa.rocm_checks(kernel.asm["amdgcn"], res, variant)
            if problems:
                raise RuntimeError("; ".join(problems))
        if options.get("enable_fp_fusion") is False and getattr(variant, "explicit_fma", False):
            res.notes.append("explicit FMAs (tl.fma) by design: the no-FMA check is skipped")
        elif options.get("enable_fp_fusion") is False:
            # an exact contract: eager PyTorch never fuses separate ops, so neither may we
            fmas = fused_multiply_adds(kernel.asm["ptx" if backend == "cuda" else "amdgcn"], backend)
            if fmas:
                raise RuntimeError(f"{len(fmas)} fused multiply-add(s) in a kernel built without fusion: {fmas[0]}")
        res.ok = True
    except Exception as exc:  # report every failure, keep compiling the rest
        res.seconds = res.seconds or (time.perf_counter() - t0)
        tb = traceback.format_exception_only(type(exc), exc)
        res.error = "".join(tb).strip()
    return res


def _call_aot(fn: Any, platform_name: str) -> list[Any]:
    """Call an ``aot`` function: with the platform if it takes a parameter, else with nothing."""
    params = [
        p for p in inspect.signature(fn).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    return list(fn(platform_name) if params else fn())


def collect_variants(name_filter: str | None, platform_name: str) -> tuple[list[tuple[str, Any]], list[str]]:
    """``[(spec_id, variant)]`` for every registered spec with ``aot``, and the problems found."""
    import sgl_diffusion_core as core

    problems: list[str] = []
    out: list[tuple[str, Any]] = []
    specs = core.REGISTRY.all_specs()
    if not specs:
        problems.append("the registry holds no KernelSpec at all (did the domain packages register?)")
    for spec in specs:
        spec_id = f"{spec.op}/{spec.backend}"
        if spec.compiled_for:  # built by its own compile lane (FlyDSL: tools/compile_rocm.py)
            continue
        if spec.aot is None:
            if "triton" in spec.capabilities.requires:
                problems.append(f"{spec_id}: a Triton backend with no aot= entry; its kernels are never compiled here")
            continue
        try:
            variants = _call_aot(core.resolve_target(spec.aot), platform_name)
        except Exception as exc:
            problems.append(f"{spec_id}: aot target {spec.aot!r} failed: {type(exc).__name__}: {exc}")
            continue
        if not variants:
            problems.append(f"{spec_id}: aot target {spec.aot!r} returned no variants")
        if spec.contract.kind == "exact":
            for v in variants:
                if (getattr(v, "options", None) or {}).get("enable_fp_fusion") is not False:
                    problems.append(
                        f"{spec_id}: exact contract but variant {v.name!r} allows FMA contraction "
                        "(set options={'enable_fp_fusion': False})"
                    )
        for v in variants:
            missing = [
                a for a in ("name", "kernel", "signature", "constexprs", "num_warps", "num_stages") if not hasattr(v, a)
            ]
            if missing:
                problems.append(f"{spec_id}: {spec.aot} returned {v!r}, not an AotVariant (missing {missing})")
                continue
            if name_filter and name_filter not in v.name:
                continue
            out.append((spec_id, v))
    names = [v.name for _, v in out]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        problems.append(f"duplicate variant names: {', '.join(dups)}")
    return out, problems


def fmt_table(results: list[Result]) -> str:
    head = ("variant", "target", "warps", "registers", "spills", "smem B", "static smem B", "stack B", "compile s")
    rows = [head]
    for r in results:
        if r.ok:
            rows.append(
                (
                    r.variant,
                    r.target,
                    str(r.num_warps),
                    r.registers,
                    r.spills,
                    str(r.smem),
                    str(r.static_smem),
                    str(r.stack),
                    f"{r.seconds:.2f}",
                )
            )
        else:
            rows.append((r.variant, r.target, str(r.num_warps), "FAILED", "-", "-", "-", "-", f"{r.seconds:.2f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def make_plan(targets: list[str], name_filter: str | None) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """``(plan, problems)``: the ``(target, spec_id, variant)`` compiles to run, and what stops any.

    Variants are collected per platform (an aot function may return different configs for cuda
    and hip); a CUDA variant runs only on targets of at least its ``min_cuda_arch``, an AMD variant
    only on its ``amd_targets`` when it names any."""
    plan: list[tuple[str, str, Any]] = []
    problems: list[str] = []
    for plat in dict.fromkeys(TARGETS[t][0] for t in targets):
        variants, probs = collect_variants(name_filter, plat)
        problems += [p for p in probs if p not in problems]
        plan += [
            (t, spec_id, v)
            for t in targets
            if TARGETS[t][0] == plat
            for spec_id, v in variants
            if (TARGETS[t][1] >= getattr(v, "min_cuda_arch", 0) if plat == "cuda" else t in (v.amd_targets or (t,)))
        ]
    return distinct(plan), problems


def distinct(plan: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The plan without repeats: a variant identical to an earlier one of the same target (same
    kernel, argument types, constexprs and options; two ops or two shapes that share a launch)
    builds the same binary, so it is compiled once, under the first name that lists it."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for target, spec_id, v in plan:
        fields = {f.name: getattr(v, f.name) for f in dataclasses.fields(v) if f.name != "name"}
        key = (target, repr(sorted((k, repr(x)) for k, x in fields.items())))
        if key not in seen:
            seen.add(key)
            out.append((target, spec_id, v))
    return out


def sample(plan: list[tuple[str, str, Any]]) -> list[tuple[str, str, Any]]:
    """The first variant of each (target, spec, kernel, argument types): every kernel is still built
    for every dtype it takes; the other constexpr configurations of it are left out."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for target, spec_id, v in plan:
        key = (target, spec_id, getattr(v.kernel, "__name__", repr(v.kernel)), tuple(sorted(v.signature.items())))
        if key not in seen:
            seen.add(key)
            out.append((target, spec_id, v))
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of this tool."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True, choices=[*TARGETS, "all"], help="GPU target, or 'all'")
    ap.add_argument("--json", type=Path, help="write the results as JSON to this file")
    ap.add_argument("-k", dest="name_filter", help="compile only variants whose name contains this")
    ap.add_argument("--cache-dir", type=Path, help="Triton cache directory (default: a fresh temporary one)")
    ap.add_argument(
        "--sample",
        action="store_true",
        help="one variant per kernel and argument types (the first listed), not every constexpr configuration",
    )
    return ap


def print_result(r: Result) -> None:
    """One line per compile (registers, spills, shared memory, or the error), then its notes."""
    if r.ok:
        print(f"ok {r.seconds:.2f}s, registers {r.registers}, spills {r.spills}, smem {r.smem} B", flush=True)
    else:
        print(f"FAILED after {r.seconds:.2f}s", flush=True)
        print("    " + r.error.replace("\n", "\n    "), flush=True)
    for note in r.notes:
        print(f"    note: {note}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    targets = list(TARGETS) if args.target == "all" else [args.target]

    results: list[Result] = []
    tmp = Path(tempfile.mkdtemp(prefix="sgl-aot-"))
    os.environ["TRITON_CACHE_DIR"] = str(args.cache_dir or tmp / "triton-cache")
    os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"  # the spill report reads the log of Triton's own ptxas -v run
    try:
        import triton

        packages = import_family()
        print(f"aot_compile: triton {triton.__version__}; packages: {', '.join(packages)}", flush=True)
        plan, problems = make_plan(targets, args.name_filter)
        if args.sample:
            plan = sample(plan)
        for n, (target, spec_id, v) in enumerate(plan, 1):
            print(f"[{n}/{len(plan)}] {target} {v.name} ({spec_id}) ...", end=" ", flush=True)
            r = compile_variant(v, spec_id, target, tmp / "work")
            results.append(r)
            print_result(r)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if results:
        print()
        print(fmt_table(results))
    failed = [r for r in results if not r.ok]
    spilled = [r for r in results if r.ok and r.spilled]
    if spilled:
        print(
            f"\nwarning: {len(spilled)} variant(s) spill registers: "
            + ", ".join(f"{r.variant}@{r.target} ({r.spills})" for r in spilled)
        )
    if not plan and not problems:
        problems.append(
            "no AOT variant found: no registered spec has an aot= entry"
            + (f" matching -k {args.name_filter!r}" if args.name_filter else "")
        )

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "targets": targets,
            "triton": triton.__version__,
            "python": platform.python_version(),
            "problems": problems,
            "results": [dataclasses.asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"\nwrote {args.json}")

    status = 0
    if problems:
        print("\nerror: " + "\nerror: ".join(problems), file=sys.stderr)
        status = 1
    if failed:
        print(
            f"\nerror: {len(failed)} of {len(results)} compile(s) failed: "
            + ", ".join(f"{r.variant}@{r.target}" for r in failed),
            file=sys.stderr,
        )
        status = 1
    if status == 0:
        print(f"\naot_compile: {len(results)} compile(s) for {', '.join(targets)} ok")
    return status


if __name__ == "__main__":
    sys.exit(main())
