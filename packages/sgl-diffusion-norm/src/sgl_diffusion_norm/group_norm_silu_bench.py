"""Benchmark cases of ``group_norm_silu`` at video-VAE shapes (../shared/SHAPES.md).

Providers: ``sgl_diffusion`` (the public op, default backend), ``eager`` (the VAE's chain
``F.silu(F.group_norm(x, 32, weight, bias, 1e-6))`` in the storage dtype) and ``torch.compile``
of that chain (``dynamic=False``). Bytes: the two-pass bound, ``3 * x``: x read by the
statistics pass, read again by the normalize pass, y written once (a group spans millions of
elements, more than any cache holds, so no kernel can read x only once). The fraction of copy
bandwidth reported by the runner is therefore the fraction of the two-pass bound; ``extra``
also gives the one-pass bytes (``2 * x``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import bench, testing

# name -> (shape, channels_last, groups)
SHAPES: dict[str, tuple[tuple[int, ...], bool, int]] = {
    "c192-cl": ((1, 192, 21, 240, 416), True, 32),
    "c192": ((1, 192, 21, 240, 416), False, 32),
    "c96-cl": ((1, 96, 21, 240, 416), True, 32),
    "c96": ((1, 96, 21, 240, 416), False, 32),
    "c384-cl": ((1, 384, 21, 120, 208), True, 32),
    "c384": ((1, 384, 21, 120, 208), False, 32),
    "c512-2d": ((1, 512, 128, 128), False, 32),
}
DEFAULT = ("c192-cl", "c192", "c96-cl", "c384-cl")
EPS = 1e-6


def _eager(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, groups: int) -> torch.Tensor:
    return F.silu(F.group_norm(x, groups, w, b, EPS))


def make_inputs(shape: tuple[int, ...], channels_last: bool, dtype: torch.dtype, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(shape, device=device, dtype=dtype, generator=g)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
    C = shape[1]
    w = torch.rand(C, device=device, dtype=dtype, generator=g) + 0.5
    b = torch.randn(C, device=device, dtype=dtype, generator=g) * 0.1
    return x, w, b


def bench_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_core import REGISTRY

    from . import group_norm_silu, group_norm_silu_reference

    for name in names or DEFAULT:
        if name not in SHAPES:
            raise ValueError(f"unknown group_norm_silu bench case {name!r}; known: {', '.join(SHAPES)}")
        torch._dynamo.reset()
        compiled = torch.compile(_eager, dynamic=False)
        shape, cl, G = SHAPES[name]
        x, w, b = make_inputs(shape, cl, dtype, device)

        def check(x=x, w=w, b=b, G=G):
            spec = next(s for s in REGISTRY.specs("norm.group_norm_silu") if s.backend == "triton")
            atol, rtol = spec.contract.tolerance(x.dtype)
            ours = group_norm_silu(x, G, w, b, eps=EPS)
            ref = group_norm_silu_reference(x, G, w, b, eps=EPS)
            assert ours.stride() == ref.stride()
            testing.assert_close(ours, ref, atol=atol, rtol=rtol)

        yield bench.BenchCase(
            name=name,
            shape=f"{list(shape)} G={G} {'channels_last' if cl else 'contiguous'}",
            dtype=str(dtype).removeprefix("torch."),
            bytes=3 * bench.tensor_bytes(x),
            providers={
                "sgl_diffusion": lambda x=x, w=w, b=b, G=G: group_norm_silu(x, G, w, b, eps=EPS),
                "eager": lambda x=x, w=w, b=b, G=G: _eager(x, w, b, G),
                "torch.compile": lambda x=x, w=w, b=b, G=G, f=compiled: f(x, w, b, G),
            },
            check=check,
            extra={"channels_last": cl, "groups": G, "one_pass_bytes": 2 * bench.tensor_bytes(x),
                   "bytes_model": "3 * x: two reads of x (statistics, normalize) + one write of y"},
        )
        del x, w, b


def tune(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None,
         progress=print) -> list[dict]:
    """Sweep the Triton configuration (positions per tile, warps, programs of the statistics pass)
    at the bench shapes (GPU tuning aid; it has not run on a GPU). Rows carry time and %
    of a same-run copy of the two-pass bytes; the winner belongs in ``_group_config``."""
    from sgl_diffusion_core import resolve_target

    from .group_norm_silu_api import describe_group_norm_silu

    launch = resolve_target("sgl_diffusion_norm.group_norm_silu_triton:group_norm_silu")
    heuristic = resolve_target("sgl_diffusion_norm.group_norm_silu_triton:config_for")
    rows = []
    for name in names or DEFAULT:
        shape, cl, G = SHAPES[name]
        x, w, b = make_inputs(shape, cl, dtype, device)
        geom = describe_group_norm_silu(x, G, w, b).info["geom"]
        base = heuristic(geom, dtype, device)
        nbytes = 3 * bench.tensor_bytes(x)
        _, copy_gbps = bench.copy_bandwidth(nbytes, device)
        for scale in (0.25, 0.5, 1, 2, 4):
            block_p = max(1, int(base.block_p * scale))
            for warps in (4, 8, 16):
                for programs in (1024, 2048, 4096, 8192):
                    cfg = dataclasses.replace(base, block_p=block_p, num_warps=warps, stats_programs=programs)
                    fn = lambda c=cfg, a=(x, G, w, b), g=geom: launch(*a, eps=EPS, geom=g, config=c)  # noqa: E731
                    try:
                        t = bench.time_gpu(fn, device, rep=20)
                    except Exception as exc:
                        progress(f"{name} {cfg}: failed {type(exc).__name__}")
                        continue
                    gbps = t.gbps(nbytes)
                    rows.append({"case": name, "block_c": cfg.block_c, "block_p": block_p, "num_warps": warps,
                                 "stats_programs": programs, "median_us": t.median_ms * 1e3, "gbps": gbps,
                                 "frac_of_copy": gbps / copy_gbps})
                    progress(f"{name} tile={cfg.block_c}x{block_p} warps={warps} programs={programs}: "
                             f"{t.median_ms * 1e3:.1f} us {100 * gbps / copy_gbps:.1f}% of the two-pass bound")
        del x, w, b
    return rows
