"""Benchmark cases of ``scale_shift``, ``gated_residual`` and their indexed forms at production shapes
(FLUX, Wan and HunyuanVideo; Qwen-Image-Edit for the indexed forms).

Providers: ``sgl_diffusion`` (the public op), ``eager`` (the chain itself) and
``torch.compile`` of it (specialized to the shape; dynamo reset per case); the indexed ops
add ``sgl_diffusion(check_index=False)`` (no host-side index check, the form a compiled or
graph-captured model runs) and ``sgl_diffusion(check_index='always')`` (one reduction and host
sync per call: what every call cost before checks were remembered per index tensor, and what
the first call with a new index costs); plain ``sgl_diffusion`` reuses one index, as a DiT's
blocks do, so its check is remembered after the first call. Bytes: every full-size operand
read once and the output written once, plus the modulation tensors (the whole tables) and
the index.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

SHAPES: dict[str, tuple[int, int, int]] = {
    "flux": (1, 4608, 3072),
    "wan": (1, 75600, 5120),
    "hunyuan": (1, 118800, 3072),
}


def _cases(op: str, device: torch.device, dtype: torch.dtype, names: list[str] | None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_modulate import gated_residual, scale_shift

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


# indexed ops: (B, S, D, K); the first half of the tokens picks row 0, the rest row 1
# (Qwen-Image-Edit: target and reference image tokens; 13824 = two 1328x1328 latents)
INDEXED_SHAPES: dict[str, tuple[int, int, int, int]] = {
    "qwen-edit": (1, 13824, 3072, 2),
    "wan": (1, 75600, 5120, 2),
}


def _indexed_cases(op: str, device: torch.device, dtype: torch.dtype,
                   names: list[str] | None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_modulate import indexed_gated_residual, indexed_scale_shift

    for name in names or list(INDEXED_SHAPES):
        if name not in INDEXED_SHAPES:
            raise ValueError(f"unknown {op} bench case {name!r}; known: {', '.join(INDEXED_SHAPES)}")
        B, S, D, K = INDEXED_SHAPES[name]
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
        m = torch.randn(B, K, 3 * D, device=device, dtype=dtype, generator=g)  # chunks: strided [B, K, D] tables
        shift, scale, gate = m[..., :D], m[..., D:2 * D], m[..., 2 * D:]
        idx = (torch.arange(S, device=device) >= S // 2).to(torch.int64).expand(B, S).contiguous()
        ar = torch.arange(B, device=device)[:, None]
        torch._dynamo.reset()
        if op == "indexed_scale_shift":

            def eager(x=x, a=scale, b=shift, i=idx, ar=ar):
                return x * (1 + a[ar, i]) + b[ar, i]

            def ours(ci=True, x=x, a=scale, b=shift, i=idx):
                return indexed_scale_shift(x, a, b, i, check_index=ci)

            nbytes = bench.tensor_bytes(x, x, scale, shift, idx)
        else:
            u = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)

            def eager(x=x, u=u, a=gate, i=idx, ar=ar):
                return x + a[ar, i] * u

            def ours(ci=True, x=x, u=u, a=gate, i=idx):
                return indexed_gated_residual(x, u, a, i, check_index=ci)

            nbytes = bench.tensor_bytes(x, u, x, gate, idx)
        compiled = torch.compile(eager, dynamic=False)

        variants = {"sgl_diffusion": ours, "sgl_diffusion(check_index=False)": functools.partial(ours, False),
                    "sgl_diffusion(check_index='always')": functools.partial(ours, "always")}

        def check(variants=variants, eager=eager):
            ref = eager()
            for f in variants.values():
                testing.assert_exact(f(), ref)

        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {D}] K={K} per-sample index", dtype=str(dtype).removeprefix("torch."),
            bytes=nbytes, providers={**variants, "eager": eager, "torch.compile": compiled}, check=check,
        )


def scale_shift_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("scale_shift", device, dtype, names)


def gated_residual_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gated_residual", device, dtype, names)


def indexed_scale_shift_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                              names: list[str] | None = None):
    return _indexed_cases("indexed_scale_shift", device, dtype, names)


def indexed_gated_residual_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                                 names: list[str] | None = None):
    return _indexed_cases("indexed_gated_residual", device, dtype, names)
