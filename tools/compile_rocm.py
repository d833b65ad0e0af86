#!/usr/bin/env python3
"""The FlyDSL compile lane: build every FlyDSL kernel variant for AMD targets and check its ISA; no GPU needed.

    python tools/compile_rocm.py --setup                  # install flydsl and ld.lld, lay out ROCM_PATH
    python tools/compile_rocm.py --target gfx942 [--json build/rocm/gfx942.json] [--export DIR] [-k substring]
    python tools/compile_rocm.py --target all

Imports every distribution under ``packages/*/src`` and walks the registry for backends whose
``compiled_for`` names the target (the FlyDSL backends); each one's ``aot`` function lists the
variants its launch rules can choose for that target. Every variant is compiled with CPU
placeholder tensors (``compile_variant`` of the backend module), exported as an object file
and a C header (``export_to_c``), and its final ISA (FlyDSL's ``FLYDSL_DEBUG_DUMP_ASM``) is
read: ``.vgpr_count``, ``.agpr_count``, ``.sgpr_count``, ``.private_segment_fixed_size``
(scratch), the spill counts, ``.wavefront_size`` and the count of every memory and FMA
instruction. The backend module's ``check_isa(variant, isa)`` names what is wrong (scratch,
wave size, VGPRs over the occupancy the rule assumes, streaming accesses narrower than 128
bits, FMA contraction); a failing check prints the kernel, the variant and the target.

Each target compiles in its own process with a clean environment: ``FLYDSL_GPU_ARCH`` set to
the target (the wave size comes from it), FlyDSL's unprefixed ``ARCH`` and ``COMPILE_ONLY``
removed (FlyDSL 0.5 reads them: an ``ARCH`` left by a build system would retarget every
kernel), a fresh FlyDSL cache, and ``ROCM_PATH`` pointing at a layout with ``llvm/bin/ld.lld``
and an empty ``amdgcn/bitcode/`` (the final link; these kernels call no ROCm math library).

``--setup`` installs what the lane needs: ``flydsl`` (the version of sgl-diffusion-norm's
``[flydsl]`` extra) into this interpreter; when no ``ld.lld`` is found, Debian's ``lld-19``
(apt-get, as root) or else the LLD of the ``ziglang`` wheel behind an ``ld.lld`` wrapper; and
the ``ROCM_PATH`` layout under ``build/rocm/rocm-path``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import glob
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

TARGETS = ("gfx942", "gfx950", "gfx1201")
ROCM_LAYOUT = ROOT / "build" / "rocm" / "rocm-path"
FLYDSL_REQUIREMENT = "flydsl>=0.5,<0.6"
LLD_CANDIDATES = ("ld.lld-19", "/usr/lib/llvm-19/bin/ld.lld", "ld.lld")
ZIG_REQUIREMENT = "ziglang>=0.13"  # its wheel carries LLD with the AMDGPU target
_LEAKY = ("ARCH", "COMPILE_ONLY")  # FlyDSL 0.5's unprefixed variables


@dataclasses.dataclass
class Result:
    variant: str
    spec: str
    target: str
    ok: bool
    seconds: float
    vgpr: int = 0
    agpr: int = 0
    sgpr: int = 0
    scratch: int = 0
    spills: int = 0
    wave: int = 0
    ops: dict = dataclasses.field(default_factory=dict)
    contracted: list = dataclasses.field(default_factory=list)
    problems: list = dataclasses.field(default_factory=list)
    error: str = ""


# --- setup --------------------------------------------------------------------------------------


def find_lld() -> str | None:
    for c in LLD_CANDIDATES:
        p = shutil.which(c) if "/" not in c else (c if os.access(c, os.X_OK) else None)
        if p:
            return p
    return None


def rocm_layout(lld: str) -> Path:
    """``<layout>/llvm/bin/ld.lld`` -> lld and an empty ``<layout>/amdgcn/bitcode``."""
    (ROCM_LAYOUT / "llvm" / "bin").mkdir(parents=True, exist_ok=True)
    (ROCM_LAYOUT / "amdgcn" / "bitcode").mkdir(parents=True, exist_ok=True)
    link = ROCM_LAYOUT / "llvm" / "bin" / "ld.lld"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(lld)
    return ROCM_LAYOUT


def _apt_lld() -> str | None:
    """Debian's lld-19 through apt-get (as root), or None where that is not possible."""
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return None
    print("compile_rocm: installing Debian's lld-19", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", "lld-19"]
    quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if subprocess.run(cmd, **quiet).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], **quiet)
        subprocess.run(cmd, **quiet)
    return find_lld()


def _zig_lld() -> str | None:
    """LLD from the ``ziglang`` wheel of the package index (``python -m ziglang ld.lld``), behind a
    wrapper named ld.lld: the linker where no system package can be installed."""
    print(f"compile_rocm: no system ld.lld; installing {ZIG_REQUIREMENT} for its LLD", flush=True)
    if subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", ZIG_REQUIREMENT]).returncode != 0:
        return None
    wrapper = ROCM_LAYOUT.parent / "zig-ld.lld"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m ziglang ld.lld "$@"\n')
    wrapper.chmod(0o755)
    ok = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True)
    return str(wrapper) if ok.returncode == 0 and "LLD" in ok.stdout else None


def setup() -> int:
    t0 = time.perf_counter()
    try:
        import flydsl

        print(f"compile_rocm: flydsl {flydsl.__version__} already installed", flush=True)
    except ImportError:
        print(f"compile_rocm: installing {FLYDSL_REQUIREMENT} (and numpy, which it needs undeclared)", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", FLYDSL_REQUIREMENT, "numpy"], check=True)
    lld = find_lld() or _apt_lld() or _zig_lld()
    if lld is None:
        print("compile_rocm: error: no ld.lld: Debian's lld-19 could not be installed (apt-get as root) and "
              f"neither could {ZIG_REQUIREMENT}; put any ld.lld on PATH", file=sys.stderr)  # fmt: skip
        return 1
    print(
        f"compile_rocm: ld.lld = {lld}; ROCM_PATH layout {rocm_layout(lld)} ({time.perf_counter() - t0:.0f}s)",
        flush=True,
    )
    return 0


# --- ISA ------------------------------------------------------------------------------------------

_OPS = re.compile(r"^\s+((?:buffer|global|flat|scratch)_(?:load|store)_\w+|v_(?:pk_)?(?:fmac?|mad)\w*)\b", re.M)


def read_isa(text: str) -> dict:
    import amd_isa
    import aot_compile

    body, _, meta = text.partition(".amdgpu_metadata")
    if amd_isa.metadata_field(meta, "vgpr_count") is None:
        raise RuntimeError("no .vgpr_count in the ISA's metadata")

    def field(key: str) -> int:
        return amd_isa.metadata_field(meta, key) or 0

    ops: dict[str, int] = {}
    for m in _OPS.finditer(body):
        ops[m.group(1)] = ops.get(m.group(1), 0) + 1
    return {
        "vgpr": field("vgpr_count"),
        "agpr": field("agpr_count"),
        "sgpr": field("sgpr_count"),
        "scratch": field("private_segment_fixed_size"),
        "spills": field("vgpr_spill_count") + field("sgpr_spill_count"),
        "wave": field("wavefront_size"),
        "ops": ops,
        "contracted": aot_compile.fused_multiply_adds(text, "hip"),
    }


# --- one target, in a clean process --------------------------------------------------------------


def clean_env(target: str, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY}
    env.update(
        {
            "FLYDSL_GPU_ARCH": target,
            "ROCM_PATH": str(ROCM_LAYOUT),
            "FLYDSL_DEBUG_DUMP_ASM": "1",
            "FLYDSL_RUNTIME_ENABLE_CACHE": "0",
            "FLYDSL_RUNTIME_CACHE_DIR": str(work / "cache"),
            "FLYDSL_DUMP_DIR": str(work / "isa"),
        }
    )
    return env


def plan(target: str, name_filter: str | None):
    import aot_compile

    aot_compile.import_family()
    import sgl_diffusion_core as core

    out, problems = [], []
    for spec in core.REGISTRY.all_specs():
        if target not in spec.compiled_for:
            continue
        sid = f"{spec.op}/{spec.backend}"
        if spec.aot is None:
            problems.append(f"{sid}: compiled for {target} but has no aot= entry listing its variants")
            continue
        variants = core.resolve_target(spec.aot)(target)
        if not variants:
            problems.append(f"{sid}: {spec.aot} returned no variants for {target}")
        module = importlib.import_module(spec.aot.partition(":")[0])
        out += [(sid, module, v) for v in variants if not name_filter or name_filter in v.name]
    return out, problems


def child(target: str, name_filter: str | None, json_path: Path | None, export: Path | None) -> int:
    for var in _LEAKY:
        if os.environ.get(var):
            print(f"compile_rocm: error: {var} is set in the lane's environment", file=sys.stderr)
            return 1
    work = Path(os.environ["FLYDSL_DUMP_DIR"]).parent
    variants, problems = plan(target, name_filter)
    import flydsl

    print(f"compile_rocm: {target}: flydsl {flydsl.__version__}, {len(variants)} variant(s)", flush=True)
    results: list[Result] = []
    seen: set[str] = set()
    for n, (sid, module, v) in enumerate(variants, 1):
        if v.name in seen:  # a kernel several ops share (the row-norm family) is built once
            continue
        seen.add(v.name)
        dump = work / "isa" / str(n)
        os.environ["FLYDSL_DUMP_DIR"] = str(dump)
        t0 = time.perf_counter()
        r = Result(v.name, sid, target, False, 0.0)
        try:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):  # FlyDSL prints a line per ISA dump
                compiled = module.compile_variant(v)
            sys.stdout.write(
                "".join(ln for ln in printed.getvalue().splitlines(True) if not ln.startswith("[flydsl.compile] dump"))
            )
            out_dir = export or (work / "export")
            out_dir.mkdir(parents=True, exist_ok=True)
            compiled.export_to_c(str(out_dir), f"sgl_{n:04d}")
            isa_files = glob.glob(str(dump / "**" / "*final_isa.s"), recursive=True)
            if len(isa_files) != 1:
                raise RuntimeError(f"expected one final ISA dump under {dump}, found {len(isa_files)}")
            isa = read_isa(Path(isa_files[0]).read_text())
            for k in ("vgpr", "agpr", "sgpr", "scratch", "spills", "wave", "ops", "contracted"):
                setattr(r, k, isa[k])
            r.problems = module.check_isa(v, isa)
            r.ok = not r.problems
        except Exception as exc:  # the variant fails; the lane goes on and reports every failure
            r.error = f"{type(exc).__name__}: {exc}"
        r.seconds = time.perf_counter() - t0
        results.append(r)
        state = "ok" if r.ok else "FAILED"
        print(
            f"[{len(results)}] {state} {r.seconds:.2f}s {v.name} ({sid}): {r.vgpr}v/{r.sgpr}s/{r.agpr}a, "
            f"scratch {r.scratch} B, wave{r.wave}"
            + (f"\n    {r.error}" if r.error else "")
            + "".join(f"\n    {p}" for p in r.problems),
            flush=True,
        )
    if not variants and not problems:
        problems.append(f"no FlyDSL variant for {target}" + (f" matching -k {name_filter!r}" if name_filter else ""))
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(
            json.dumps(
                {
                    "target": target,
                    "flydsl": flydsl.__version__,
                    "problems": problems,
                    "results": [dataclasses.asdict(r) for r in results],
                },
                indent=2,
            )
            + "\n"
        )
    failed = [r for r in results if not r.ok]
    for p in problems:
        print(f"compile_rocm: error: {p}", file=sys.stderr)
    for r in failed:
        why = r.error or "; ".join(r.problems)
        print(f"compile_rocm: error: {r.spec} variant {r.variant} on {target}: {why}", file=sys.stderr)
    total = sum(r.seconds for r in results)
    print(f"compile_rocm: {target}: {len(results) - len(failed)} of {len(results)} builds ok ({total:.0f}s)")
    return 1 if failed or problems else 0


def run_target(target: str, args) -> int:
    if not (ROCM_LAYOUT / "llvm" / "bin" / "ld.lld").exists():
        lld = find_lld()
        if lld is None:
            print("compile_rocm: error: no ld.lld; run `python tools/compile_rocm.py --setup`", file=sys.stderr)
            return 1
        rocm_layout(lld)
    work = Path(tempfile.mkdtemp(prefix=f"sgl-rocm-{target}-"))
    try:
        cmd = [sys.executable, __file__, "--child", target]
        if args.json:
            cmd += ["--json", str(args.json if args.target != "all" else args.json.parent / f"{target}.json")]
        if args.export:
            cmd += ["--export", str(args.export / target)]
        if args.name_filter:
            cmd += ["-k", args.name_filter]
        return subprocess.run(cmd, env=clean_env(target, work), cwd=ROOT).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build every FlyDSL kernel variant for AMD targets (no GPU).")
    ap.add_argument("--setup", action="store_true", help="install flydsl and ld.lld, lay out ROCM_PATH")
    ap.add_argument("--target", choices=(*TARGETS, "all"))
    ap.add_argument("--child", choices=TARGETS, help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, help="write the results here (with --target all: one file per target)")
    ap.add_argument("--export", type=Path, help="keep the exported objects and headers under DIR/<target>")
    ap.add_argument("-k", dest="name_filter", help="only variants whose name contains this")
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.name_filter, args.json, args.export)
    if args.setup:
        rc = setup()
        if rc or not args.target:
            return rc
    if not args.target:
        ap.error("give --target (or --setup)")
    targets = TARGETS if args.target == "all" else (args.target,)
    return max(run_target(t, args) for t in targets)


if __name__ == "__main__":
    sys.exit(main())
