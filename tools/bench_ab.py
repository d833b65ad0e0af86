"""Compare the benchmark suite of two git revisions on one GPU: processes alternate (before, after,
before, after, ...), so drift of clocks and temperature falls on both sides.

    python tools/bench_ab.py --before 252c800 --after HEAD                # every op both trees benchmark
    python tools/bench_ab.py --before v0.1.0 --after HEAD --ops norm.ln_modulate,modulate.scale_shift
    python tools/bench_ab.py ... --suite op_definition_ab --out docs/benchmarks/op_definition_ab_h100.json
    python tools/bench_ab.py ... --rounds=1 --out X.json --append             # one more round into X.json
    python tools/bench_ab.py --before /tmp/old --after /tmp/new ...            # trees exported beforehand
    python tools/bench_ab.py ... --budget 480 --out X.json     # within 8 minutes (ops past it are skipped)

Each revision's ``packages/`` is exported with ``git archive`` into a temporary folder and put
on ``PYTHONPATH`` (the family is pure Python; Triton compiles on the GPU machine), so the two
trees never mix in one process. In each process, for every op that declares benchmark cases
(``OpDef.bench``), every case and every provider of ours (named ``sgl_diffusion...``): the GPU
time of one call and a same-process ``copy_`` of the case's bytes, both trees timed by this
checkout's ``bench.time_gpu``; then the host time of one
eager call of a tiny op (``[1, 16, 64]`` bf16, the GPU kept busy: ``bench.host_us_per_call``)
beside an aten add. The record holds every round (written after each process); the summary printed at the end gives, per
op, case and provider, after / before of the fastest round of each (a ratio above 1 is slower).
Needs a CUDA or ROCm GPU.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = ("modulate", "norm", "rope", "activation", "layout", "attention")
# tiny eager calls whose host time is measured: name -> (domain, function, its arguments)
HOST_CALLS = {
    "scale_shift": ("modulate", "scale_shift", ("x", "m", "m")),
    "gated_residual": ("modulate", "gated_residual", ("x", "x", "m")),
    "ln_modulate": ("norm", "ln_modulate", ("x", "m", "m")),
    "rms_norm": ("norm", "rms_norm", ("x",)),
}


def export_tree(rev: str, dest: Path) -> Path:
    """``packages/`` of ``rev`` under ``dest``; the ``PYTHONPATH`` of its sources. A folder holding
    ``packages/`` (a tree exported beforehand, for a machine without the git history) is used as is."""
    if (Path(rev) / "packages").is_dir():
        return Path(os.pathsep.join(str(p.resolve()) for p in sorted((Path(rev) / "packages").glob("*/src"))))
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev, "packages"], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return Path(os.pathsep.join(str(p) for p in sorted((dest / "packages").glob("*/src"))))


@functools.cache
def timer():
    """This checkout's ``sgl_diffusion_core.bench``, loaded from its file (it imports only the standard
    library and torch): both trees are timed by the same ``time_gpu`` and ``host_us_per_call``, whatever
    their own versions of them."""
    path = ROOT / "packages" / "sgl-diffusion-core" / "src" / "sgl_diffusion_core" / "bench.py"
    spec = importlib.util.spec_from_file_location("_bench_ab_timer", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _copy_us(nbytes: int, dev, rep: int) -> float:
    """GPU time of ``dst.copy_(src)`` over ``nbytes`` (read + write), in microseconds."""
    import torch

    src = torch.empty(max(1, nbytes // 4), device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    return timer().time_gpu(lambda: dst.copy_(src), dev, rep=rep).median_ms * 1e3


def _import_domains():
    """Every domain of this process's tree (their ops register on import); core's ``REGISTRY``. A domain the
    tree lacks is not imported from elsewhere (an editable install of another checkout)."""
    from sgl_diffusion_core import REGISTRY

    tree = [str(Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    for d in DOMAINS:
        spec = importlib.util.find_spec(f"sgl_diffusion_{d}")
        if spec is None or (tree and not any(str(Path(spec.origin or "").resolve()).startswith(t) for t in tree)):
            continue
        importlib.import_module(f"sgl_diffusion_{d}")
    return REGISTRY


def list_worker(out: str) -> None:
    """One process of one tree: writes the ids of its ops with benchmark cases to ``out`` (JSON list)."""
    registry = _import_domains()
    Path(out).write_text(json.dumps([o for o in registry.ops() if getattr(registry.op(o), "bench", None)]))


def _tree_env(path: Path) -> dict[str, str]:
    """The environment of a process that imports only the tree at ``path`` (compiling for the GPU)."""
    env = {**os.environ, "PYTHONPATH": str(path), "PYTHONUNBUFFERED": "1"}
    env.pop("TRITON_INTERPRET", None)
    return env


def common_ops(paths: dict[str, Path], tmp: Path) -> list[str]:
    """The ops both trees benchmark, in the tree before's order: an op only one tree has cannot be compared,
    and with a deadline both processes must spend it on the same ops."""
    listed = {}
    for tag, path in paths.items():
        out = tmp / f"ops_{tag}.json"
        subprocess.run([sys.executable, __file__, "--list-ops", str(out)], env=_tree_env(path), check=True)
        listed[tag] = json.loads(out.read_text())
    after = set(listed["after"])
    only = sorted(set(listed["before"]) ^ after)
    if only:
        print(f"measured in one tree only, so not compared: {', '.join(only)}", flush=True)
    return [o for o in listed["before"] if o in after]


def worker(tag: str, out: str, ops: list[str] | None, rep: int, deadline: float | None = None) -> None:
    """One process of one tree: writes ``{"speed": [...], "host": [...], "skipped": [...]}`` to ``out``. Past
    ``deadline`` (``time.time()``) it starts no further op (they are listed as skipped); the host times
    are measured whatever the deadline."""
    import torch

    import sgl_diffusion_core as core
    from sgl_diffusion_core import bench

    REGISTRY = _import_domains()
    dev = torch.device("cuda")
    speed, host, skipped = [], [], []
    for op_id in ops or REGISTRY.ops():
        opdef = REGISTRY.op(op_id)
        if not getattr(opdef, "bench", None):
            continue
        if deadline is not None and time.time() > deadline:
            skipped.append(op_id)
            continue
        load = getattr(bench, "load_cases", None)
        target = load(opdef) if load else core.resolve_target(opdef.bench)
        for case in target(dev, torch.bfloat16, None):
            copy_us = _copy_us(case.bytes, dev, rep)
            for prov, fn in case.providers.items():
                if not prov.startswith("sgl_diffusion"):
                    continue
                us = timer().time_gpu(fn, dev, rep=rep).median_ms * 1e3
                speed.append(
                    {
                        "tree": tag,
                        "op": op_id.partition(".")[2],
                        "case": case.name,
                        "provider": prov,
                        "median_us": us,
                        "copy_us": copy_us,
                        "frac_of_copy": copy_us / us,
                    }
                )
                print(
                    f"[{tag}] {op_id} {case.name} {prov}: {us:.1f} us ({100 * copy_us / us:.1f}% of copy)", flush=True
                )
            del case
            torch.cuda.empty_cache()
    x = torch.randn(1, 16, 64, device=dev, dtype=torch.bfloat16)
    m = torch.randn(1, 1, 64, device=dev, dtype=torch.bfloat16)
    calls = {"aten_add": lambda: x + m}
    tensors = {"x": x, "m": m}
    for name, (domain, fn_name, arg_names) in HOST_CALLS.items():
        fn = getattr(importlib.import_module(f"sgl_diffusion_{domain}"), fn_name)
        calls[name] = functools.partial(fn, *(tensors[a] for a in arg_names))
    for name, fn in calls.items():
        fn()
        runs = sorted(timer().host_us_per_call(fn, dev, calls=200) for _ in range(9))
        host.append(
            {"tree": tag, "op": name, "shape": "[1, 16, 64] bf16", "host_us_median": runs[4], "host_us_min": runs[0]}
        )
        print(f"[{tag}] host {name}: {runs[4]:.1f} us", flush=True)
    if skipped:
        print(f"[{tag}] past the deadline, not measured: {', '.join(skipped)}", flush=True)
    Path(out).write_text(json.dumps({"speed": speed, "host": host, "skipped": skipped, "env": bench.environment(dev)}))


def summary(speed: list[dict], host: list[dict]) -> list[str]:
    """after / before of the fastest round of each side, per op, case and provider; host medians."""
    best: dict[tuple, dict[str, float]] = {}
    for r in speed:
        key = (r["op"], r["case"], r["provider"])
        side = best.setdefault(key, {})
        side[r["tree"]] = min(side.get(r["tree"], float("inf")), r["median_us"])
    lines = [f"{'op':<34}{'case':<14}{'provider':<34}{'before us':>11}{'after us':>11}{'after/before':>14}"]
    for (op, case, prov), side in sorted(best.items()):
        if {"before", "after"} <= set(side):
            lines.append(
                f"{op:<34}{case:<14}{prov:<34}{side['before']:>11.1f}{side['after']:>11.1f}"
                f"{side['after'] / side['before']:>14.3f}"
            )
    for r in host:
        lines.append(f"host {r['tree']:<7}{r['op']:<20}{r['host_us_median']:>8.1f} us")
    return lines


def _short_sha(rev: str) -> str:
    """The short SHA of ``rev``; of an exported folder, its ``REVISION`` file (else its name)."""
    if (Path(rev) / "packages").is_dir():
        stamp = Path(rev) / "REVISION"
        return stamp.read_text().strip() if stamp.exists() else Path(rev).name
    return subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def run_rounds(
    args: argparse.Namespace,
    rounds: range,
    speed: list[dict],
    host: list[dict],
    skipped: list[dict],
    written: Callable[[dict], None],
) -> dict:
    """Run ``rounds`` (each: one process of the tree before, then one of the tree after), adding their
    rows to ``speed``, ``host`` and ``skipped`` (ops past a process's deadline) and calling ``written(env)``
    after each process; returns the environment the last process reported. With ``args.budget`` each
    process gets an equal share of what is left of it."""
    env_of_run: dict = {}
    end = time.time() + args.budget if args.budget else None
    todo = 2 * len(rounds)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {tag: export_tree(getattr(args, tag), Path(tmp) / tag) for tag in ("before", "after")}
        ops = args.ops or ",".join(common_ops(paths, Path(tmp)))
        for rnd in rounds:
            for tag in ("before", "after"):
                share = None if end is None else time.time() + (end - time.time()) / todo
                todo -= 1
                print(f"round {rnd} (up to {rounds[-1]}): {tag} ({getattr(args, tag)})", flush=True)
                out = Path(tmp) / f"{tag}_{rnd}.json"
                cmd = [sys.executable, __file__, "--worker", tag, str(out), "--rep", str(args.rep)]
                cmd += [] if share is None else ["--deadline", str(share)]
                subprocess.run(cmd + ["--ops", ops], env=_tree_env(paths[tag]), check=True)
                got = json.loads(out.read_text())
                speed += [{**r, "round": rnd} for r in got["speed"]]
                host += [{**r, "round": rnd} for r in got["host"]]
                skipped += [{"tree": tag, "op": op, "round": rnd} for op in got.get("skipped", [])]
                env_of_run = got["env"]
                written(env_of_run)
    return env_of_run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="git revision of the tree before")
    ap.add_argument("--after", default="HEAD", help="git revision of the tree after (default HEAD)")
    ap.add_argument("--ops", help="comma-separated op ids (default: every op with bench cases)")
    ap.add_argument("--rounds", type=int, default=2, help="processes per tree, alternating (default 2)")
    ap.add_argument("--rep", type=int, default=50, help="timed calls per measurement (default 50)")
    ap.add_argument("--suite", default="ab", help="the record's suite name")
    ap.add_argument("--out", help="write the record here (JSON)")
    ap.add_argument(
        "--append",
        action="store_true",
        help="add these rounds to the record --out already holds for the same two revisions "
        "(a long comparison split over several commands)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        help="seconds for the whole comparison: each process gets an equal "
        "share of what is left and starts no op past it (the record lists the ops it skipped)",
    )
    ap.add_argument("--worker", nargs=2, metavar=("TAG", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--list-ops", metavar="OUT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.list_ops:
        list_worker(args.list_ops)
        return 0
    ops = args.ops.split(",") if args.ops else None
    if args.worker:
        worker(*args.worker, ops, args.rep, args.deadline)
        return 0
    if not args.before:
        ap.error("--before is required")
    sha = {tag: _short_sha(getattr(args, tag)) for tag in ("before", "after")}
    speed: list[dict] = []
    host: list[dict] = []
    skipped: list[dict] = []
    if args.append and args.out and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        if (old["env"].get("before_sha"), old["env"].get("after_sha")) != (sha["before"], sha["after"]):
            ap.error(
                f"--append: {args.out} compares other revisions ({old['env'].get('before_sha')} -> "
                f"{old['env'].get('after_sha')})"
            )
        speed, host, skipped = old["speed"], old["host"], old.get("skipped", [])
    first = max((r["round"] for r in speed + host), default=0) + 1

    def write(env_of_run: dict) -> None:  # the record so far, after each process
        if not args.out:
            return
        record = {
            "suite": args.suite,
            "what": "the benchmark suite of two trees in alternating processes on one GPU (tools/bench_ab.py); "
            "host time of one eager call of a tiny op with the GPU kept busy, median of 9 x 200 calls",
            "env": {**env_of_run, "before_sha": sha["before"], "after_sha": sha["after"], "rep": args.rep},
            "speed": speed,
            "host": host,
            "skipped": skipped,
        }
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")

    run_rounds(args, range(first, first + args.rounds), speed, host, skipped, write)
    print("\n".join(summary(speed, host)))
    if args.out:
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
