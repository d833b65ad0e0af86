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

FP8 results (``<shape>-fp8`` cases of ``gelu_tanh``, ``silu_and_mul``, ``gelu_tanh_and_mul``):
``out_dtype=float8_e4m3fn`` (``float8_e4m3fnuz`` on gfx942) against the chain followed by core's
row-wise quantization in torch (eager and compiled); bytes: the input read, codes and row scales
written.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import REGISTRY, bench, quantize_fp8_torch, tensor_platform, testing

# name -> (tokens, D): D is the activation's output width (packed GLU inputs are [N, 2*D])
SHAPES: dict[str, tuple[int, int]] = {
    "flux_mlp": (4608, 12288),
    "wan_ffn": (75600, 13824),
}

FP8_OPS = ("gelu_tanh", "silu_and_mul", "gelu_tanh_and_mul")

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
    known = [*SHAPES, *(f"{n}-fp8" for n in SHAPES if op in FP8_OPS)]
    for name in names or known:
        if name not in known:
            raise ValueError(f"unknown activation bench case {name!r}; known: {', '.join(known)}")
        if name.endswith("-fp8"):
            yield _fp8_case(op, name, device, dtype)
            continue
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



def _fp8_case(op: str, name: str, device: torch.device, dtype: torch.dtype) -> bench.BenchCase:
    """``op(x, out_dtype=FP8)`` against the chain then a row-wise quantization in torch."""
    import sgl_diffusion_activation as pkg

    hip = tensor_platform(device) == "hip" and "gfx942" in torch.cuda.get_device_properties(device).gcnArchName
    fp8 = torch.float8_e4m3fnuz if hip else torch.float8_e4m3fn
    fn, ref = getattr(pkg, op), getattr(pkg, f"{op}_reference")
    f = _EAGER[op.removesuffix("_and_mul")]
    N, D = SHAPES[name.removesuffix('-fp8')]
    packed = op.endswith("_and_mul")

    def eager(x, D=D):
        return quantize_fp8_torch(f(x[..., :D]) * x[..., D:] if packed else f(x), fp8, "row")

    torch._dynamo.reset()
    compiled = torch.compile(eager, dynamic=False)
    x = torch.randn(N, 2 * D if packed else D, device=device, dtype=dtype,
                    generator=torch.Generator(device=device).manual_seed(0))
    spec = next(s for s in REGISTRY.specs(f"activation.{op}") if s.backend == "triton")

    def check(x=x):
        testing.assert_fp8_close(*fn(x, out_dtype=fp8), *ref(x, out_dtype=fp8),
                                 tolerance=spec.contract.tolerance(dtype), fp8_tolerance=spec.contract.tolerance(fp8))

    return bench.BenchCase(
        name=name, shape=f"[{N}, {'2 x ' if packed else ''}{D}] -> {str(fp8).removeprefix('torch.')}",
        dtype=str(dtype).removeprefix("torch."), bytes=x.numel() * x.element_size() + N * D + 4 * N,
        providers={"sgl_diffusion": lambda x=x: fn(x, out_dtype=fp8), "eager": lambda x=x: eager(x),
                   "torch.compile": lambda x=x: compiled(x)},
        check=check, extra={"out_dtype": str(fp8).removeprefix("torch.")},
    )


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
