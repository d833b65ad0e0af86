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

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import bench, testing

# name -> (shape, channels_last, groups)
SHAPES: dict[str, tuple[tuple[int, ...], bool, int]] = {
    "c192-cl": ((1, 192, 21, 240, 416), True, 32),
    "c192": ((1, 192, 21, 240, 416), False, 32),
    "c96-cl": ((1, 96, 21, 240, 416), True, 32),
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
