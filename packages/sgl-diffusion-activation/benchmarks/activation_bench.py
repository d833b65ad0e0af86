"""Benchmark cases of the activation ops at production shapes (docs/design.md).

FFN activations of FLUX.1 (4608 joint tokens, hidden 3072 -> 12288) and Wan2.1-14B 720p
(75600 tokens, 5120 -> 13824):

* GLU packed (``silu_and_mul``, ``gelu_tanh_and_mul``, ``gelu_and_mul``): ``[N, 2*D]`` -> ``[N, D]``,
* GLU split (``*_mul``): two ``[N, D]`` views of that packed tensor -> ``[N, D]``,
* unary (``silu``, ``gelu_tanh``, ``gelu``): ``[N, D]`` -> ``[N, D]``.

Providers: ``sgl_diffusion`` (the public op, default backend: the close Triton kernel on a
GPU), ``eager`` (the chain itself, e.g. ``F.silu(x[..., :D]) * x[..., D:]``) and
``torch.compile`` of that chain (specialized to the shape; dynamo reset per case). Bytes:
the input read once and the output written once.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import REGISTRY, bench, testing

# name -> (tokens, D): D is the activation's output width (packed GLU inputs are [N, 2*D])
SHAPES: dict[str, tuple[int, int]] = {
    "flux_mlp": (4608, 12288),
    "wan_ffn": (75600, 13824),
}

_EAGER = {
    "silu": F.silu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "gelu": F.gelu,
}


def _cases(op: str, device: torch.device, dtype: torch.dtype, names: list[str] | None) -> Iterator[bench.BenchCase]:
    import sgl_diffusion_activation as pkg

    kind = "packed" if op.endswith("_and_mul") else "split" if op.endswith("_mul") else "unary"
    act = op.removesuffix("_and_mul").removesuffix("_mul")
    f = _EAGER[act]
    fn = getattr(pkg, op)
    spec = next(s for s in REGISTRY.specs(f"activation.{op}") if s.backend == "triton")
    for name in names or list(SHAPES):
        if name not in SHAPES:
            raise ValueError(f"unknown activation bench case {name!r}; known: {', '.join(SHAPES)}")
        N, D = SHAPES[name]
        torch._dynamo.reset()
        g = torch.Generator(device=device).manual_seed(0)
        if kind == "unary":
            x = torch.randn(N, D, device=device, dtype=dtype, generator=g)
            args: tuple = (x,)

            def eager(x=x):
                return f(x)

            shape = f"[{N}, {D}]"
        else:
            x = torch.randn(N, 2 * D, device=device, dtype=dtype, generator=g)
            if kind == "packed":
                args = (x,)

                def eager(x=x, D=D):
                    return f(x[..., :D]) * x[..., D:]

                shape = f"[{N}, 2 x {D}] packed"
            else:
                args = (x[..., :D], x[..., D:])

                def eager(a=args[0], b=args[1]):
                    return f(a) * b

                shape = f"[{N}, {D}] x 2 (views of [{N}, {2 * D}])"
        compiled = torch.compile(eager, dynamic=False)

        def ours(args=args):
            return fn(*args)

        def check(ours=ours, eager=eager):
            atol, rtol = spec.contract.tolerance(dtype)
            testing.assert_close(ours(), eager(), atol=atol, rtol=rtol)

        in_bytes = x.numel() * x.element_size()
        yield bench.BenchCase(
            name=name, shape=shape, dtype=str(dtype).removeprefix("torch."), bytes=in_bytes + N * D * dtype.itemsize,
            providers={"sgl_diffusion": ours, "eager": eager, "torch.compile": compiled}, check=check,
        )
        del x, args



def silu_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("silu", device, dtype, names)


def gelu_tanh_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu_tanh", device, dtype, names)


def gelu_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu", device, dtype, names)


def silu_and_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("silu_and_mul", device, dtype, names)


def gelu_tanh_and_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu_tanh_and_mul", device, dtype, names)


def gelu_and_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu_and_mul", device, dtype, names)


def silu_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("silu_mul", device, dtype, names)


def gelu_tanh_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu_tanh_mul", device, dtype, names)


def gelu_mul_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    return _cases("gelu_mul", device, dtype, names)
