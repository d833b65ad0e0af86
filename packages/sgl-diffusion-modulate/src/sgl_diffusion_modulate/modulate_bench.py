"""Benchmark cases of ``scale_shift`` and ``gated_residual`` at production shapes (../shared/SHAPES.md).

Providers: ``sgl_diffusion`` (the public op), ``eager`` (the chain itself) and
``torch.compile`` of it (specialized to the shape; dynamo reset per case). Bytes: every
full-size operand read once and the output written once, plus the modulation tensors.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

SHAPES: dict[str, tuple[int, int, int]] = {
    "flux": (1, 4608, 3072),
    "wan": (1, 75600, 5120),
    "hunyuan": (1, 118800, 3072),
}


def _cases(op: str, device: torch.device, dtype: torch.dtype, names: list[str] | None) -> Iterator[bench.BenchCase]:
    from . import gated_residual, scale_shift

    for name in names or list(SHAPES):
        if name not in SHAPES:
            raise ValueError(f"unknown {op} bench case {name!r}; known: {', '.join(SHAPES)}")
        B, S, D = SHAPES[name]
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
        m = torch.randn(B, 6, D, device=device, dtype=dtype, generator=g)
        torch._dynamo.reset()
        if op == "scale_shift":
            a, b = m[:, 1:2], m[:, 0:1]

            def eager(x=x, a=a, b=b):
                return x * (1 + a) + b

            def ours(x=x, a=a, b=b):
                return scale_shift(x, a, b)

            nbytes = bench.tensor_bytes(x, x) + 2 * D * x.element_size()
        else:
            u = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
            a = m[:, 2:3]

            def eager(x=x, u=u, a=a):
                return x + a * u

            def ours(x=x, u=u, a=a):
                return gated_residual(x, u, a)

            nbytes = bench.tensor_bytes(x, u, x) + D * x.element_size()
        compiled = torch.compile(eager, dynamic=False)

        def check(ours=ours, eager=eager):
            testing.assert_exact(ours(), eager())

        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {D}] per-sample", dtype=str(dtype).removeprefix("torch."), bytes=nbytes,
            providers={"sgl_diffusion": ours, "eager": eager, "torch.compile": compiled}, check=check,
        )


def scale_shift_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("scale_shift", device, dtype, names)


def gated_residual_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gated_residual", device, dtype, names)
