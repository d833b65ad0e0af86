"""Where the public exact op's GPU time goes beyond its kernel's (GPU).

Session 12's bench had exact ``rms_modulate`` / ``rms_norm`` at FLUX about 1-1.4 us slower through
the public op (``exact=None``: dispatch, gate, kernel) than the exact kernel alone, at Wan 0.5-1 us:
a fixed cost, not a proportional one. This lists the GPU activity of both paths under the torch
profiler (kernels, copies, fills per call) and times them interleaved (op, kernel, op, kernel, ..
with an L2 flush before each, CUDA events), so the order the bench times its providers in plays no
part; then again with a sleep kernel queued first (the host far ahead of the GPU), against a copy of
x's bytes timed the same way (% of copy: the copy moves x in and out, the op also its small
vectors). Usage: ``python3 tools/gpu/op_overhead_probe.py OUT.json [CASE,CASE,..]``.
"""

from __future__ import annotations

import json
import statistics
import sys

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import bench, resolve_target

_inputs = resolve_target("sgl_diffusion_norm.row_norm_bench:_inputs")
exact_kernel = resolve_target("sgl_diffusion_norm.row_norm_bench:exact_kernel")


def _paths(op: str, name: str, device):
    (B, S, D), x, mod, w = _inputs(name, torch.bfloat16, device)
    if op == "rms_modulate":
        args, kw = (x, mod[:, 1:2], mod[:, 0:1]), {"weight": w}
    else:
        args, kw = (x, w), {}
    fn = getattr(norm, op)
    ref = getattr(norm, f"{op}_reference")(*args, **kw)
    assert torch.equal(fn(*args, **kw), ref)  # the gate verifies this signature here
    return (lambda: fn(*args, **kw)), exact_kernel(op, args, kw), x


def _activity(fn, calls=20):
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out = []
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" or getattr(e, "device_time_total", 0):
            total = getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)
            if total:
                out.append({"name": e.key[:120], "per_call": e.count / calls, "us_per_call": total / calls})
    return out


def _interleaved(fns, device, rep=200, backlog=False):
    """``backlog``: a sleep kernel queued first (as ``bench.host_us_per_call`` does), so the host
    has enqueued every call before the GPU reaches it and no start event waits for a launch. The L2
    flush is ``time_gpu``'s (``bench.FLUSH``; session 12's runs 4-5 used the writing one)."""
    flush = bench.l2_flusher(device)
    times = {k: [] for k in fns}
    for _ in range(10):
        for f in fns.values():
            f()
    torch.cuda.synchronize()
    ev = []
    if backlog:
        torch.cuda._sleep(int(2e9) // 1000 * 100)  # ~50-100 ms of GPU time
    for _ in range(rep):
        for k, f in fns.items():
            flush()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            f()
            e.record()
            ev.append((k, s, e))
    torch.cuda.synchronize()
    for k, s, e in ev:
        times[k].append(s.elapsed_time(e) * 1e3)
    return {k: {"median_us": statistics.median(v), "p20_us": sorted(v)[len(v) // 5],
                "p80_us": sorted(v)[4 * len(v) // 5]} for k, v in times.items()}


def main(path: str, cases: list[str]) -> None:
    device = torch.device("cuda")
    rows = []
    for op in ("rms_modulate", "rms_norm"):
        for name in cases:
            op_fn, kern, x = _paths(op, name, device)
            src = torch.empty(x.numel(), dtype=x.dtype, device=device)
            dst = torch.empty_like(src)
            fns = {"op": op_fn, "kernel": kern, "copy": lambda dst=dst, src=src: dst.copy_(src)}
            t = _interleaved(fns, device)
            tb = _interleaved(fns, device, backlog=True)
            row = {"op": op, "case": name, "timing": t, "timing_backlog": tb, "op_activity": _activity(op_fn),
                   "kernel_activity": _activity(kern)}
            rows.append(row)
            for label, tt in (("interleaved", t), ("interleaved, sleep backlog", tb)):
                c, o, k = (tt[n]["median_us"] for n in ("copy", "op", "kernel"))
                print(f"{op} {name} ({label}): op {o:.2f} us ({100 * c / o:.1f}% of copy), "
                      f"kernel {k:.2f} us ({100 * c / k:.1f}%), copy of x {c:.2f} us")
            for k in ("op_activity", "kernel_activity"):
                for a in row[k]:
                    print(f"   {k[:-9]:6s} {a['per_call']:5.2f}x {a['us_per_call']:8.2f} us  {a['name']}")
            del x
            torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else ["flux", "wan"])
