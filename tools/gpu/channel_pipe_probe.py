"""Does Triton's software pipeline (``tl.range(num_stages=...)``: the next tile's loads as asynchronous
copies into shared memory while the current tile is normalized and stored) lift ``channel_rms_norm`` on
contiguous x at C = 384 above the hold rule's 82% of copy (GPU probe, session 13)?

Nsight Compute (session 13 run 1, ``ncu_s13``): the hold kernel (``[128, 64] x 3`` channel chunks held in
registers, 8 warps, 121 registers, two programs per SM) keeps DRAM 70% busy; a program's loads are all in
flight before its statistics, none while it normalizes and stores, so an SM has at most its other program's
48 KB in flight then. This probe's kernel is the hold kernel's arithmetic in a persistent loop over tiles
whose loads the compiler pipelines through shared memory (its chunk load / store helpers; session 13's run 2
ran an earlier copy of them written out here, git cc1c511); it is a measurement, not the library's kernel.
Each configuration is checked against the op's reference chain with the triton spec's tolerance and timed
(CUDA events, L2 flushed) against the public op and a same-run copy of the same bytes.
Usage: ``python3 tools/gpu/channel_pipe_probe.py OUT.json [CASE]`` (CASE: a channel_rms_norm bench case,
default c384).
"""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, bench, resolve_target, testing

make_inputs = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:make_inputs")
SHAPES = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES")


# the hold kernel's own chunk load, square and normalize-and-store (channel_rms_norm_triton)
_chunk_load = resolve_target("sgl_diffusion_norm.channel_rms_norm_triton:_chunk_load")
_chunk_store = resolve_target("sgl_diffusion_norm.channel_rms_norm_triton:_chunk_store")
_sq = resolve_target("sgl_diffusion_norm.channel_rms_norm_triton:_sq")


@triton.jit
def _pipe_kernel(X, G, BIAS, Y, C, P, n_pblk, n_tiles, sb, sc, osb, osc, scale, eps,
                 BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, STAGES: tl.constexpr, FAST: tl.constexpr = 2):
    for t in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=STAGES):
        b = t // n_pblk
        p = (t - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
        pmask = p < P
        xb = X + b * sb
        yb = Y + b * osb
        x0 = _chunk_load(xb, p[None, :], pmask, C, sc, 0, BLOCK_C, "evict_first", True)
        x1 = _chunk_load(xb, p[None, :], pmask, C, sc, 1, BLOCK_C, "evict_first", True)
        x2 = _chunk_load(xb, p[None, :], pmask, C, sc, 2, BLOCK_C, "evict_first", True)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(_sq(x0) + _sq(x1) + _sq(x2), axis=0)), eps)
        _chunk_store(x0, yb, p[None, :], pmask, inv, G, BIAS, Y, C, osc, 0, BLOCK_C, True, True, FAST)
        _chunk_store(x1, yb, p[None, :], pmask, inv, G, BIAS, Y, C, osc, 1, BLOCK_C, True, True, FAST)
        _chunk_store(x2, yb, p[None, :], pmask, inv, G, BIAS, Y, C, osc, 2, BLOCK_C, True, True, FAST)


CONFIGS = [  # (STAGES, num_warps, BLOCK_P, programs per SM)
    (1, 8, 64, 2), (2, 8, 64, 1), (3, 8, 64, 1), (2, 16, 64, 1), (3, 16, 64, 1), (4, 16, 64, 1),
    (2, 16, 32, 2), (3, 16, 32, 2), (3, 8, 32, 2), (2, 8, 64, 2), (2, 4, 64, 2),
]


def measure(path: str, case: str, variants) -> None:
    """Time ``variants(x, gamma, bias)`` (``(label, fn, config)`` triples; a failing build is recorded, not
    fatal) at bench case ``case``, bf16, each output checked against the reference chain, the public op
    timed first, in the middle and last; JSON rows written to ``path`` after every row."""
    device = torch.device("cuda")
    shape, cl = SHAPES[case]
    if cl or shape[1] > 384 or -(-shape[1] // 128) != 3:
        raise SystemExit("the probe's kernels take contiguous x with 257..384 channels (three chunks of 128)")
    x, gamma, bias = make_inputs(shape, cl, torch.bfloat16, device)
    spec = next(s for s in REGISTRY.specs("norm.channel_rms_norm") if s.backend == "triton")
    atol, rtol = spec.contract.tolerance(x.dtype)
    ref = norm.channel_rms_norm_reference(x, gamma, bias, silu=True)
    nbytes = 2 * bench.tensor_bytes(x)
    _, copy_gbps = bench.copy_bandwidth(nbytes, device)
    rows = []

    def record(label: str, fn, cfg=None) -> None:
        try:
            out = fn()
            note = None
            try:
                testing.assert_close(out, ref, atol=atol, rtol=rtol)
            except AssertionError as e:
                note = f"MISMATCH: {str(e)[:200]}"
            t = bench.time_gpu(fn, device)
        except Exception as e:  # a build that does not fit (shared memory, registers): recorded, not fatal
            rows.append({"label": label, "config": cfg, "note": f"FAILED: {type(e).__name__}: {str(e)[:300]}"})
            print(f"{label:36s} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            return
        frac = t.gbps(nbytes) / copy_gbps
        rows.append({"label": label, "config": cfg, "median_us": t.median_ms * 1e3, "frac_of_copy": frac, "note": note})
        print(f"{case} {label:36s} {t.median_ms * 1e3:8.1f} us {100 * frac:5.1f}% of copy {note or ''}", flush=True)
        with open(path, "w") as f:
            json.dump({"env": bench.environment(device), "case": case, "copy_gbps": copy_gbps, "rows": rows}, f,
                      indent=1)

    def public():
        return norm.channel_rms_norm(x, gamma, bias, silu=True)

    found = variants(x, gamma, bias)
    record("public op (the rule)", public)
    for i, (label, fn, cfg) in enumerate(found):
        record(label, fn, cfg)
        if i == len(found) // 2:
            record("public op (middle)", public)
    record("public op again", public)


def _pipe_variants(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor):
    B, C = x.shape[0], x.shape[1]
    P = x[0, 0].numel()
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    out = []
    for stages, nw, bp, per_sm in CONFIGS:
        n_pblk = triton.cdiv(P, bp)
        n_tiles = B * n_pblk
        grid = (min(n_tiles, per_sm * sms),)
        y = torch.empty_like(x)

        def fn(bp=bp, nw=nw, stages=stages, grid=grid, n_pblk=n_pblk, n_tiles=n_tiles, y=y):
            _pipe_kernel[grid](x, gamma, bias, y, C, P, n_pblk, n_tiles, x.stride(0), x.stride(1), y.stride(0),
                               y.stride(1), C ** 0.5, 1e-12, BLOCK_C=128, BLOCK_P=bp, STAGES=stages,
                               num_warps=nw, num_stages=stages)
            return y

        out.append((f"pipe stages={stages} w={nw} p={bp} x{per_sm}/SM", fn,
                    {"stages": stages, "num_warps": nw, "block_p": bp, "per_sm": per_sm}))
    return out


def main(path: str, case: str = "c384") -> None:
    measure(path, case, _pipe_variants)


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:3])
