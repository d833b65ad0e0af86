"""The ``sgl-diffusion`` command.

    sgl-diffusion doctor [--json] [--model CLASS|CONFIG [--quality exact|close]]
    sgl-diffusion bench --op OP [--dtype bf16] [--cases a,b] [--rep N] [--rounds R] [--device DEV] [--out PATH.json]

Exit codes: 0 ok, 1 the environment cannot run the command (e.g. core not installed,
a benchmark target that fails to import), 2 usage error (unknown op or case, an op
without a benchmark, a device this machine does not have, a model sites cannot build).
torch and the family are imported inside the commands only, so ``sgl-diffusion --help``
stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform as _platform
import sys
from pathlib import Path
from typing import Any

from . import _exports
from .__about__ import __version__

EXIT_OK, EXIT_ENV, EXIT_USAGE = 0, 1, 2

# --dtype spellings -> torch dtype name
DTYPES: dict[str, str] = {
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "f16": "float16",
    "half": "float16",
    "float16": "float16",
    "fp32": "float32",
    "f32": "float32",
    "float": "float32",
    "float32": "float32",
}

# the dtype of the representative input doctor asks every op about
DOCTOR_DTYPE = "bfloat16"


class UsageError(Exception):
    """A command-line mistake: reported on stderr, exit code 2."""


# --------------------------------------------------------------------------- family


def distribution_info(distribution: str, module: str, *, do_import: bool = True) -> dict[str, Any]:
    """Whether one family distribution is installed, its version and where it is imported from.

    The version comes from the installed metadata; running from source (no dist-info) it
    falls back to ``<module>.__about__.__version__``. With ``do_import`` the package is
    imported, so a domain's ops register with the core registry.
    """
    info: dict[str, Any] = {
        "distribution": distribution,
        "module": module,
        "installed": False,
        "version": None,
        "version_from": None,
        "location": None,
        "error": None,
    }
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        spec = None
        info["error"] = f"{type(exc).__name__}: {exc}"
    if spec is None:
        info["install"] = f"pip install {distribution}"
        return info
    info["installed"] = True
    if spec.submodule_search_locations:
        info["location"] = list(spec.submodule_search_locations)[0]
    elif spec.origin:
        info["location"] = spec.origin
    meta_version = None
    try:
        meta_version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    src_version = None
    if do_import:
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken domain is reported, not fatal to doctor
            info["error"] = f"import {module} failed: {type(exc).__name__}: {exc}"
    if info["error"] is None and (do_import or meta_version is None):
        try:
            src_version = importlib.import_module(f"{module}.__about__").__version__
        except Exception:
            src_version = None
    if meta_version is not None:
        info["version"], info["version_from"] = meta_version, "metadata"
        if src_version is not None and src_version != meta_version:
            info["warning"] = (
                f"installed metadata says {meta_version}, but the code imported from {info['location']} "
                f"says {src_version}"
            )
    elif src_version is not None:
        info["version"], info["version_from"] = src_version, "source (__about__)"
    return info


def import_family() -> list[dict[str, Any]]:
    """Import every installed distribution of the family (so its ops register); one info dict each."""
    return [distribution_info(dist, module) for dist, module in _exports.DISTRIBUTIONS.items()]


# --------------------------------------------------------------------------- doctor


def _umbrella_info() -> dict[str, Any]:
    try:
        version, source = importlib.metadata.version("sgl-diffusion"), "metadata"
    except importlib.metadata.PackageNotFoundError:
        version, source = __version__, "source (__about__)"
    return {"distribution": "sgl-diffusion", "version": version, "version_from": source,
            "location": os.path.dirname(os.path.abspath(__file__))}


def _triton_info(core: Any) -> dict[str, Any]:
    available = core.module_available("triton")
    version = None
    if available:
        try:
            version = importlib.metadata.version("triton")
        except importlib.metadata.PackageNotFoundError:
            try:  # ROCm ships it as pytorch-triton-rocm; ask the module itself
                version = importlib.import_module("triton").__version__
            except Exception as exc:
                version = f"unknown ({type(exc).__name__}: {exc})"
    return {"available": available, "version": version, "interpret": core.triton_interpret(),
            "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET")}


def _flydsl_info(core: Any) -> dict[str, Any]:
    """FlyDSL (the ROCm kernels' DSL): installed or not, without importing it, and FlyDSL 0.5's
    unprefixed variables that would break its backends when set."""
    available = core.module_available("flydsl")
    version = None
    if available:
        try:
            version = importlib.metadata.version("flydsl")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
    leaky = {v: os.environ[v] for v in ("ARCH", "COMPILE_ONLY") if os.environ.get(v)}
    return {"available": available, "version": version, "leaky_env": leaky,
            "backends": sorted({f"{s.op}/{s.backend}" for s in core.REGISTRY.all_specs()
                                if "flydsl" in s.capabilities.requires}),
            "status": "compiled for gfx942, gfx950 and gfx1201, not yet executed on AMD hardware; "
                      "ranked below Triton (backend='flydsl' forces it)"}


def _ops_info(core: Any, platform: str, arch: Any) -> list[dict[str, Any]]:
    desc_kw = {"platform": platform, "arch": arch, "dtypes": (DOCTOR_DTYPE,)}
    out = []
    for op_id in core.REGISTRY.ops():
        opdef = core.REGISTRY.op(op_id)
        try:
            chosen: str | None = core.select_impl(op_id, core.InputDesc(**desc_kw)).backend
            why_none = None
        except core.UnsupportedInputError as exc:
            chosen, why_none = None, str(exc)
        backends = []
        for spec in core.REGISTRY.specs(op_id):
            desc = core.InputDesc(**desc_kw)
            explicit = spec.reasons(desc, explicit=True, distribution=opdef.distribution)
            auto = spec.reasons(desc, distribution=opdef.distribution)
            caps = spec.capabilities
            backends.append({
                "backend": spec.backend,
                "priority": spec.priority,
                "contract": spec.contract.kind,
                "contract_detail": str(spec.contract),
                "target": spec.target,
                "platforms": list(caps.platforms),
                "min_arch": [list(p) for p in caps.min_arch],
                "dtypes": list(caps.dtypes),
                "requires": list(caps.requires),
                "interpretable": caps.interpretable,
                "available": not explicit,  # usable with backend=<name>
                "auto": not auto,  # considered by backend=None
                "reasons": explicit or auto,
                "would_choose": spec.backend == chosen,
                "notes": spec.notes,
            })
        out.append({
            "op": op_id,
            "distribution": opdef.distribution,
            "summary": opdef.summary,
            "public": opdef.public,
            "default_exact": opdef.default_exact,
            "bench": opdef.bench,
            "would_choose": chosen,
            "no_backend": why_none,
            "backends": backends,
        })
    return out


def collect_doctor() -> dict[str, Any]:
    """Everything ``sgl-diffusion doctor`` reports, as JSON-ready data."""
    report: dict[str, Any] = {
        "sgl_diffusion": _umbrella_info(),
        "python": {"version": _platform.python_version(), "executable": sys.executable},
        "distributions": import_family(),
    }
    try:
        core = importlib.import_module("sgl_diffusion_core")
    except Exception as exc:
        report["error"] = (f"sgl_diffusion_core cannot be imported ({type(exc).__name__}: {exc}); "
                           "install it with: pip install sgl-diffusion-core")
        return report
    mi = core.machine()
    dev = core.default_device()
    plat = core.tensor_platform(dev)
    arch = core.device_arch(plat, dev.index) if plat in ("cuda", "hip") else None
    report["platform"] = {
        "describe": mi.describe(),
        "platform": mi.platform,
        "devices": list(mi.devices),
        "archs": list(mi.archs),
        "torch": mi.torch_version,
        "accelerator_runtime": mi.accelerator_runtime,
        "default_device": str(dev),
        "default_platform": plat,
        "default_arch": arch,
    }
    report["triton"] = _triton_info(core)
    report["flydsl"] = _flydsl_info(core)
    report["representative_input"] = {"dtype": DOCTOR_DTYPE, "device": str(dev), "platform": plat, "arch": arch}
    report["ops"] = _ops_info(core, plat, arch)
    return report


def format_doctor(report: dict[str, Any]) -> str:
    """The text form of :func:`collect_doctor`'s report."""
    um = report["sgl_diffusion"]
    py = report["python"]
    lines = [f"sgl-diffusion {um['version']} [{um['version_from']}] at {um['location']}",
             f"python {py['version']} ({py['executable']})", ""]
    if "platform" in report:
        p = report["platform"]
        lines += ["platform", f"  {p['describe']}", f"  default device: {p['default_device']}"]
        t = report["triton"]
        tri = f"triton {t['version']}" if t["available"] else "triton not installed"
        lines += [f"  {tri}; TRITON_INTERPRET {'on' if t['interpret'] else 'off'}"]
        f = report.get("flydsl")
        if f and f["backends"]:
            how = (f"flydsl {f['version']}" if f["available"]
                   else "flydsl not installed (pip install 'sgl-diffusion-norm[flydsl]')")
            lines.append(f"  {how}: the flydsl backends ({len(f['backends'])}) are {f['status']}")
            for var, val in f["leaky_env"].items():
                lines.append(f"  warning: {var}={val!r} is set; FlyDSL 0.5 reads it: the flydsl backends refuse to run")
        lines.append("")
    lines.append("distributions")
    width = max(len(d["distribution"]) for d in report["distributions"])
    for d in report["distributions"]:
        name = d["distribution"].ljust(width)
        if not d["installed"]:
            lines.append(f"  {name}  not installed ({d.get('install')})")
            continue
        lines.append(f"  {name}  {d['version'] or '?'} [{d['version_from'] or 'unknown'}]  {d['location']}")
        if d.get("error"):
            lines.append(f"  {' ' * width}  error: {d['error']}")
        if d.get("warning"):
            lines.append(f"  {' ' * width}  warning: {d['warning']}")
    if "error" in report:
        lines += ["", f"error: {report['error']}"]
        return "\n".join(lines)
    rep = report["representative_input"]
    where = rep["device"] if rep["device"] == rep["platform"] else f"{rep['device']}, platform {rep['platform']}"
    if rep["arch"] is not None:
        where += f", arch {rep['arch']}"
    lines += ["", f"ops (backend choice for a representative {rep['dtype']} input on {where})"]
    if not report["ops"]:
        lines.append("  none registered")
    for op in report["ops"]:
        lines.append(f"  {op['op']}  [{op['distribution']}]  {op['summary']}")
        lines.append(f"    would choose: {op['would_choose'] or 'none'}"
                     + ("" if op["bench"] else "   (no benchmark)"))
        bw = max(len(b["backend"]) for b in op["backends"]) if op["backends"] else 0
        for b in op["backends"]:
            mark = "->" if b["would_choose"] else "  "
            state = "available" if b["available"] else "unavailable"
            if b["available"] and not b["auto"]:
                state = "explicit only"
            plats = "/".join(b["platforms"])
            head = (f"    {mark} {b['backend'].ljust(bw)}  priority {b['priority']:>3}  {b['contract']:<5}  "
                    f"{plats}  {state}")
            lines.append(head + (": " + "; ".join(b["reasons"]) if b["reasons"] else ""))
    return "\n".join(lines)


def collect_model_sites(model: str, quality: str) -> dict[str, Any]:
    """``sgl-diffusion-sites``' mount plan for a model (class name or config.json), as data and text."""
    try:
        sites = importlib.import_module("sgl_diffusion_sites")
    except Exception as exc:
        msg = f"sgl_diffusion_sites cannot be imported ({type(exc).__name__}: {exc}); pip install sgl-diffusion-sites"
        return {"error": msg, "text": f"error: {msg}"}
    plan = sites.mount_plan(model, quality=quality)
    return {**plan.to_dict(), "text": str(plan)}


def check_model(model: str, supported: tuple[str, ...]) -> None:
    """``UsageError`` unless ``model`` is a supported class name, or a diffusers config.json (or the
    folder holding one) naming one: what ``mount_plan`` can build."""
    path = Path(model)
    config = path / "config.json" if path.is_dir() else path
    if config.is_file():
        try:
            name = json.loads(config.read_text()).get("_class_name", "")
        except (OSError, ValueError, AttributeError) as exc:
            raise UsageError(f"--model {model}: {config} is not a diffusers config.json ({exc})") from None
        what = f"{config} names {name!r}, not a supported model"
    else:
        name, what = model, "not a supported model, nor an existing diffusers config.json or a folder holding one"
    if name not in supported:
        raise UsageError(f"--model {model!r}: {what}; supported: {', '.join(supported)}")


def _cmd_doctor(args: argparse.Namespace) -> int:
    if args.model:
        try:
            sites = importlib.import_module("sgl_diffusion_sites")
        except ImportError:
            pass  # the report says that sites is not installed
        else:
            check_model(args.model, tuple(sites.SUPPORTED_MODELS))
    report = collect_doctor()
    if args.model:
        report["model_sites"] = collect_model_sites(args.model, args.quality)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(format_doctor(report))
        if args.model:
            print("\nsites (sgl-diffusion-sites mount plan)\n" + report["model_sites"]["text"])
    return EXIT_ENV if "error" in report else EXIT_OK


# --------------------------------------------------------------------------- bench


def resolve_op(name: str, ops: list[str]) -> str:
    """Full op id for ``name``: exact (``norm.ln_modulate``) or short (``ln_modulate``) if unique;
    ``UsageError`` naming the close matches otherwise (core's ``REGISTRY.resolve``)."""
    core = importlib.import_module("sgl_diffusion_core")
    try:
        return core.REGISTRY.resolve(name, ops)
    except core.UnknownOpError as exc:
        raise UsageError(str(exc)) from None


def bench_device(torch: Any, core: Any, spec: str | None) -> Any:
    """The torch device of ``--device`` (default: the machine's best), or ``UsageError`` when it
    is not a device name or this machine has no such device."""
    if spec is None:
        return core.default_device()
    hint = f"this machine: {core.machine().describe()}; leave --device out to use its best device"
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(f"--device {spec!r} is not a torch device ({exc}); e.g. cpu, cuda, cuda:1") from None
    count = torch.cuda.device_count() if device.type == "cuda" else None
    if count and device.index is not None and device.index >= count:
        raise UsageError(f"--device {spec}: there are {count} cuda device(s), cuda:0 to cuda:{count - 1}; {hint}")
    try:
        torch.empty(0, device=device)
    except Exception as exc:  # AssertionError "Torch not compiled with CUDA enabled", RuntimeError: no such device
        raise UsageError(f"--device {spec}: no such device here ({type(exc).__name__}: {exc}); {hint}") from None
    return device


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def format_bench_summary(rows: list[dict[str, Any]]) -> str:
    """One line per (case, provider): time, GB/s, % of the same-run copy, host us/call, speedup of ours."""
    header = ("case", "provider", "us", "GB/s", "% of copy", "host us/call", "speedup of ours")
    table = [header]
    for r in rows:
        if "error" in r:
            table.append((r.get("case", "?"), r.get("provider", "?"), "failed", r["error"], "", "", ""))
            continue
        frac = r.get("frac_of_copy")
        speedup = r.get("speedup_of_ours")
        table.append((
            str(r.get("case")),
            str(r.get("provider")),
            _fmt(r.get("median_us"), ".1f"),
            _fmt(r.get("gbps"), ".0f"),
            "-" if frac is None else f"{100 * frac:.1f}",
            _fmt(r.get("host_us_per_call"), ".1f"),
            "-" if speedup is None else f"{speedup:.2f}x",
        ))
    widths = [max(len(row[i]) if row[2] != "failed" or i < 2 else 0 for row in table) for i in range(len(header))]
    out = []
    for k, row in enumerate(table):
        cells = [c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(row)]
        if row[2] == "failed":
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), "failed: " + row[3]]
        out.append("  ".join(cells).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def _progress(line: str) -> None:
    print(line, flush=True)


def _resumed_record(args: argparse.Namespace, bench: Any, op_id: str, device: Any) -> Any:
    """The record at ``--out`` to resume (None where there is none yet); a record of another op, GPU, git
    SHA, torch or Triton is refused (one record holds one run's measurements)."""
    if not args.out:
        raise UsageError("--resume needs --out (the record to add the missing cases to)")
    if not os.path.exists(args.out):
        return None
    old = bench.BenchRecord.read(args.out)
    now = bench.environment(device)
    if old.op != op_id:
        raise UsageError(f"--resume: {args.out} is a record of {old.op}, not {op_id}")
    differ = [k for k in ("gpu", "git_sha", "torch", "triton") if old.env.get(k) != now.get(k)]
    if differ:
        raise UsageError(f"--resume: {args.out} was measured with another " + ", ".join(
            f"{k} ({old.env.get(k)} there, {now.get(k)} here)" for k in differ))
    return old


def _cmd_bench(args: argparse.Namespace) -> int:
    try:
        core = importlib.import_module("sgl_diffusion_core")
        bench = importlib.import_module("sgl_diffusion_core.bench")
    except ImportError as exc:
        print(f"sgl-diffusion bench: sgl_diffusion_core cannot be imported ({exc}); "
              "install it with: pip install sgl-diffusion-core", file=sys.stderr)
        return EXIT_ENV
    import torch

    for info in import_family():
        if info.get("error"):
            print(f"warning: {info['distribution']}: {info['error']}", file=sys.stderr)
    op_id = resolve_op(args.op, core.REGISTRY.ops())
    device = bench_device(torch, core, args.device)
    opdef = core.REGISTRY.op(op_id)
    if not opdef.bench:
        raise UsageError(f"op {op_id} has no benchmark: its OpDef declares no bench target "
                         f"(distribution {opdef.distribution})")
    try:
        target = bench.load_cases(opdef)
    except (ImportError, AttributeError, FileNotFoundError) as exc:
        print(f"sgl-diffusion bench: the bench target {opdef.bench!r} of {op_id} cannot be loaded: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ENV
    dtype = getattr(torch, DTYPES[args.dtype])
    names = [c.strip() for c in args.cases.split(",") if c.strip()] if args.cases else None
    seen: list[str] = []
    resumed = _resumed_record(args, bench, op_id, device) if args.resume else None
    done = {r.get("case") for r in resumed.rows} if resumed is not None else set()

    def cases() -> Any:
        # a ValueError / KeyError while the target makes its next case is how a target
        # rejects its arguments (an unknown case name): a usage error, not a failure
        it = iter(target(device, dtype, names))
        while True:
            try:
                case = next(it)
            except StopIteration:
                return
            except core.UnsupportedInputError:
                raise
            except (ValueError, KeyError) as exc:
                raise UsageError(f"{op_id}: the bench target rejected the request: {exc}") from exc
            seen.append(case.name)
            if case.name in done:
                _progress(f"[{op_id}] {case.name}: in the record already, skipped")
                continue
            yield case

    _progress(f"[{op_id}] benchmarking on {device}, dtype {DTYPES[args.dtype]}, "
              f"cases {','.join(names) if names else 'all'}, rep {args.rep} in {args.rounds} round(s)")
    # with --out the record is written after every case: a run cut short keeps its finished cases
    rec = bench.run_cases(op_id, cases(), device, progress=_progress, rep=args.rep, rounds=args.rounds,
                          on_case=(lambda r: r.write(args.out)) if args.out else None, record=resumed)
    env = rec.env
    print(f"\n{op_id} on {env.get('gpu')} ({env.get('device')}), torch {env.get('torch')}, "
          f"triton {env.get('triton')}, git {env.get('git_sha')}")
    print(format_bench_summary(rec.rows) if rec.rows else "no results")
    if args.out:
        print(f"wrote {rec.write(args.out)}")
    # a group of cases the bench file names (its ``GROUPS``, e.g. ``widths``) asks for each of its cases
    groups = getattr(sys.modules.get(getattr(target, "__module__", ""), None), "GROUPS", None) or {}
    asked = [case for n in names or [] for case in groups.get(n, (n,))]
    missing = [n for n in asked if n not in seen]
    if not seen or missing:
        what = f"unknown case(s) {', '.join(missing)}" if missing else "no cases"
        raise UsageError(f"{op_id}: the bench target returned {what}" + (f" (ran: {', '.join(seen)})" if seen else ""))
    return EXIT_OK


# --------------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sgl-diffusion", description="sgl-diffusion: fused kernels for diffusion transformers."
    )
    parser.add_argument("--version", action="version", version=f"sgl-diffusion {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser(
        "doctor", help="platform, Triton, installed distributions, registered ops and backend choice"
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.add_argument("--model", default=None, metavar="CLASS|CONFIG",
                        help="also show the sites sgl-diffusion-sites would mount on a diffusers transformer: a "
                             "class name (default config) or a config.json / transformer folder (built on the "
                             "meta device: no weights, nothing runs)")
    doctor.add_argument("--quality", default="exact", choices=("exact", "close"),
                        help="the quality the --model plan is made for (default: exact)")
    doctor.set_defaults(func=_cmd_doctor)
    bench = sub.add_parser("bench", help="benchmark one op against its baselines on this machine")
    bench.add_argument("--op", required=True, help="op id, full (norm.ln_modulate) or short (ln_modulate)")
    bench.add_argument("--dtype", default="bf16", choices=sorted(DTYPES), metavar="DTYPE",
                       help="storage dtype: bf16, fp16 or fp32 (default: bf16)")
    bench.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    bench.add_argument("--rep", type=int, default=100, help="timed repetitions per provider (default: 100)")
    bench.add_argument("--rounds", type=int, default=3,
                       help="the providers take turns in this many rounds of rep / rounds calls each, so drift "
                            "and their order fall on all of them alike (default: 3)")
    bench.add_argument("--device", default=None, help="torch device (default: the machine's best device)")
    bench.add_argument("--out", default=None, metavar="PATH.json", help="write the benchmark record as JSON")
    bench.add_argument("--resume", action="store_true",
                       help="with --out: skip the cases the record there holds and add the others to it (the same "
                            "op, GPU, git SHA, torch and Triton only): a long sweep over several runs")
    bench.set_defaults(func=_cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if getattr(args, "rep", 1) < 1:
        parser.error("--rep must be at least 1")
    if getattr(args, "rounds", 1) < 1:
        parser.error("--rounds must be at least 1")
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"sgl-diffusion {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
