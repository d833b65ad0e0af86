"""Sweep the launch of ``gated_residual_norm_modulate``'s Triton kernel at Wan and HunyuanVideo (GPU).

Why: compiled for sm_90 (tools/aot_compile.py, Triton 3.9), the default launch spills — at
D = 5120 (1024-wide chunks x 5, 2 warps, full unroll, 80-register cap) 284 B (LayerNorm) and
2850 B (RMSNorm) per thread, at D = 3072 (no cap) 28 B — where ``ln_modulate``'s same launch
does not: the gated pass holds residual, update and gate per element. With 8 values per thread
(4 warps, or 512-wide chunks with 2 warps) nothing spills (180 registers); with 4 (8 warps) 80.
Session 3 measured the default at 81.9% of copy at Wan, 96.1% at HunyuanVideo.

Each configuration: time (CUDA events, L2 flushed) and % of a same-run copy of the op's bytes
(residual, update read; out, new_residual written), after checking new_residual bit-exact to
the eager sum and out within the op's declared tolerance. LayerNorm and RMSNorm, since the
RMS build spills where the LayerNorm one does not (at 2048 x 3, 4 warps, unroll 3: 48 B).
Usage: ``python3 tools/gpu/gated_norm_sweep.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import json
import sys

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, RowConfig, bench, describe, resolve_target, testing

prepare_gated = resolve_target("sgl_diffusion_norm.row_norm_triton:prepare_gated")
SHAPES = {"wan": (1, 75600, 5120), "hunyuan": (1, 118800, 3072)}


def _configs(D: int) -> list[RowConfig]:
    gated_config = resolve_target("sgl_diffusion_norm.row_norm_triton:gated_config")
    out = [gated_config(D, 2, "cuda", n_rows=75600), RowConfig.from_heuristic(D, 2, "cuda", n_rows=75600)]
    for block, warps, unroll in ((1024, 4, None), (1024, 4, -1), (2048, 4, -1), (2048, 4, None), (2048, 8, -1),
                                 (2048, 8, None), (4096, 8, -1)):
        chunks = -(-D // block)
        out.append(RowConfig(block=block, chunks=chunks, num_warps=warps, unroll=chunks if unroll == -1 else unroll))
    return list(dict.fromkeys(out))


def _sweep_case(name: str, norm_kind: str, device: torch.device) -> list[dict]:
    B, S, D = SHAPES[name]
    g = torch.Generator(device=device).manual_seed(0)
    r = torch.randn(B, S, D, device=device, dtype=torch.bfloat16, generator=g)
    u = torch.randn(B, S, D, device=device, dtype=torch.bfloat16, generator=g)
    mod = torch.randn(B, 6, D, device=device, dtype=torch.bfloat16, generator=g) * 0.5
    args = (r, u, mod[:, 2:3], mod[:, 1:2], mod[:, 0:1])
    ref_out, ref_new = norm.gated_residual_norm_modulate_reference(*args, norm=norm_kind)
    spec = next(s for s in REGISTRY.specs("norm.gated_residual_norm_modulate") if s.backend == "triton")
    atol, rtol = spec.contract.tolerance(torch.bfloat16)
    geom = describe("norm.gated_residual_norm_modulate", *args, norm=norm_kind).info["geom"]

    def run_for(cfg):
        run = prepare_gated(geom, *args, None, None, config=cfg)
        return lambda: run(*args, None, None, 1e-6, 1.0)

    def check(result):  # a wrong result is not a candidate: raise, and the sweep skips it
        out, new = result
        testing.assert_exact(new, ref_new)
        testing.assert_close(out, ref_out, atol=atol, rtol=rtol)

    nbytes = 4 * r.numel() * r.element_size() + 3 * D * mod.element_size()
    return bench.sweep(f"{name} {norm_kind}", _configs(D), run_for, nbytes, device, check=check)


def main(path: str) -> None:
    device = torch.device("cuda")
    rows = []
    for norm_kind in ("layer", "rms"):
        for name in SHAPES:
            rows += _sweep_case(name, norm_kind, device)
            with open(path, "w") as f:  # after every case: a run cut by its time limit keeps what finished
                json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)
    print("\n".join(bench.sweep_summary(rows)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gated_norm_sweep.json")
