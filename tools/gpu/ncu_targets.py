"""Kernels to profile under Nsight Compute, one launch each, between ``cudaProfilerStart`` / ``Stop``.

Run under ``ncu --profile-from-start off ...``: every target is built and warmed up first (the
exact norms' gate never runs: their kernel is prepared directly, as in ``rms_modulate_probe.py``),
then each is launched once inside the profiled range, in the order given. Targets:

    rms_modulate_exact:CASE   rms_modulate_close:CASE   rms_norm_exact:CASE   (row_norm_bench cases)
    channel_rms_norm:CASE     (channel_rms_norm_bench cases, silu=True)
    copy:CASE                 a device copy of x (the row-norm or channel case's x)

Usage: ``python3 tools/gpu/ncu_targets.py TARGET [TARGET ...]`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import sys

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import describe, resolve_target

prepare = resolve_target("sgl_diffusion_norm.row_norm_exact_triton:prepare")
row_inputs = resolve_target("sgl_diffusion_norm.row_norm_bench:_inputs")
row_shapes = resolve_target("sgl_diffusion_norm.row_norm_bench:SHAPES")
ch_inputs = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:make_inputs")
ch_shapes = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES")


def _row_target(op: str, case: str, device: torch.device):
    _, x, mod, w = row_inputs(case, torch.bfloat16, device)
    sc, sh = mod[:, 1:2], mod[:, 0:1]
    if op == "rms_modulate_close":
        return lambda: norm.rms_modulate(x, sc, sh, weight=w, exact=False)
    if op == "rms_modulate_exact":
        args, kw, tensors = (x, sc, sh), {"weight": w}, (x, sc, sh, w, None)
        run = prepare(describe("norm.rms_modulate", *args, **kw).info["geom"], *tensors)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
        run = prepare(describe("norm.rms_norm", *args, **kw).info["geom"], *tensors)
    return lambda: run.fused(*tensors, 1e-6, 1.0)


def _target(spec: str, device: torch.device):
    op, _, case = spec.partition(":")
    if op in ("rms_modulate_exact", "rms_modulate_close", "rms_norm_exact"):
        return _row_target(op, case, device)
    if op == "channel_rms_norm":
        shape, cl = ch_shapes[case]
        x, gamma, bias = ch_inputs(shape, cl, torch.bfloat16, device)
        return lambda: norm.channel_rms_norm(x, gamma, bias, silu=True)
    if op == "copy":
        if case in row_shapes:
            _, x, _, _ = row_inputs(case, torch.bfloat16, device)
        else:
            shape, _ = ch_shapes[case]
            x = torch.empty(shape, device=device, dtype=torch.bfloat16).normal_()
        y = torch.empty_like(x)
        return lambda: y.copy_(x)
    raise ValueError(f"unknown target {spec!r}")


def main(specs: list[str]) -> None:
    device = torch.device("cuda")
    fns = [(s, _target(s, device)) for s in specs]
    for _, fn in fns:
        fn()
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for s, fn in fns:
        torch.cuda.nvtx.range_push(s)
        fn()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("profiled:", ", ".join(s for s, _ in fns), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
