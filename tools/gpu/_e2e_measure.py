"""The measurements of ``tools/gpu/sites_e2e.py``: one synchronized forward, the timed calls (CUDA
events on a GPU, the host clock on a CPU) and the comparison of an output against the reference."""

from __future__ import annotations

import math
import time
from typing import Any

import torch


def sync(device: torch.device) -> None:
    """Wait until a CUDA device has finished its pending work; a no-op on a CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward(model: torch.nn.Module, kw: dict[str, Any]) -> torch.Tensor:
    with torch.no_grad():
        return model(**kw)[0]


def wall_call(model: torch.nn.Module, kw: dict[str, Any], device: torch.device) -> tuple[torch.Tensor, float]:
    """One forward, synchronized: (output, seconds)."""
    sync(device)
    t0 = time.perf_counter()
    out = forward(model, kw)
    sync(device)
    return out, time.perf_counter() - t0


def _quantile(sorted_ms: list[float], q: float) -> float:
    pos = q * (len(sorted_ms) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def measure(
    model: torch.nn.Module, kw: dict[str, Any], device: torch.device, reps: int, warmup: int
) -> tuple[dict[str, Any], torch.Tensor]:
    """``warmup`` untimed calls, then ``reps`` timed calls: (timing record, last output)."""
    out = None
    for _ in range(warmup):
        out = forward(model, kw)
    times: list[float] = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in events:
            start.record()
            out = forward(model, kw)
            end.record()
        torch.cuda.synchronize(device)
        times = [start.elapsed_time(end) for start, end in events]
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            out = forward(model, kw)
            times.append((time.perf_counter() - t0) * 1e3)
    assert out is not None
    s = sorted(times)
    rec = {
        "median_ms": round(_quantile(s, 0.5), 3),
        "p20_ms": round(_quantile(s, 0.2), 3),
        "p80_ms": round(_quantile(s, 0.8), 3),
        "reps": reps,
        "warmup": warmup,
        "times_ms": [round(t, 3) for t in times],
    }
    return rec, out


def compare(out: torch.Tensor, ref: torch.Tensor) -> dict[str, Any]:
    """``torch.equal``, max abs difference and PSNR (peak: the reference's range, as the sites tests)."""
    rec: dict[str, Any] = {"equal": bool(torch.equal(out, ref))}
    if out.shape != ref.shape:
        rec["shape_mismatch"] = [list(out.shape), list(ref.shape)]
        return rec
    x, r = out.double(), ref.double()
    rec["finite"] = bool(torch.isfinite(x).all())
    if not (rec["finite"] and bool(torch.isfinite(r).all())):
        rec["max_abs_diff"] = rec["psnr_db"] = None
        return rec
    diff = (x - r).abs()
    rec["max_abs_diff"] = float(diff.max())
    mse = float(diff.pow(2).mean())
    peak = float(r.max() - r.min())
    rec["psnr_db"] = None if mse == 0 else round(10 * math.log10(peak * peak / mse), 2)  # None: identical
    rec["cosine"] = round(float(torch.nn.functional.cosine_similarity(x.flatten(), r.flatten(), dim=0)), 6)
    return rec
