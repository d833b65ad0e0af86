"""Benchmark cases of the activation ops at production shapes (../shared/SHAPES.md).

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

import itertools
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
    from . import act_api, glu_api

    kind = "packed" if op.endswith("_and_mul") else "split" if op.endswith("_mul") else "unary"
    act = op.removesuffix("_and_mul").removesuffix("_mul")
    f = _EAGER[act]
    fn = getattr(act_api if kind == "unary" else glu_api, op)
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


def _make(op: str):
    def cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
        return _cases(op, device, dtype, names)

    cases.__name__ = cases.__qualname__ = f"{op}_cases"
    cases.__doc__ = f"Bench cases of ``{op}`` at {', '.join(SHAPES)}."
    return cases


silu_cases = _make("silu")
gelu_tanh_cases = _make("gelu_tanh")
gelu_cases = _make("gelu")
silu_and_mul_cases = _make("silu_and_mul")
gelu_tanh_and_mul_cases = _make("gelu_tanh_and_mul")
gelu_and_mul_cases = _make("gelu_and_mul")
silu_mul_cases = _make("silu_mul")
gelu_tanh_mul_cases = _make("gelu_tanh_mul")
gelu_mul_cases = _make("gelu_mul")


def tune(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None,
         ops: tuple[str, ...] = ("silu_and_mul", "gelu_tanh"), progress=print,
         blocks: tuple[int, ...] = (1024, 2048, 4096), warps: tuple[int, ...] = (1, 2, 4, 8),
         kernels: tuple[str, ...] = ("flat", "tiles"), fasts: tuple[bool, ...] = (True, False),
         evicts: tuple[bool, ...] = (False,)) -> list[dict]:
    """Sweep the Triton backend's launch at the bench shapes (GPU tuning aid): tile ``block`` x
    ``num_warps``, ``fast`` (approximate ``exp`` for 16-bit outputs, or the math library's) and,
    for the GLU forms, the kernel: ``flat`` (one flat output index over rows with one stride)
    or ``tiles`` (one program per (row, column tile), the kernel of strided rows), and ``evict``
    (``evict_first`` on the streamed inputs, or the default policy).
    The grid is always the 1-D one: a 2-D ``(rows, tiles)`` grid's best launch measured 2.3-5.8
    points of copy below the 1-D grid's best (docs/benchmarks/activation_tune_h200.json).

    One row per (op, case, kernel, block, num_warps, fast) with time and % of a same-run copy;
    the winners go into ``math_triton.tile_config``, ``glu_triton.flat_config`` and
    ``math_triton.math_flags`` as data.
    """
    from sgl_diffusion_core import TileConfig, describe, resolve_target

    rows = []
    for op in ops:
        packed = op.endswith("_and_mul")
        launch = resolve_target(f"sgl_diffusion_activation.{'glu' if packed else 'act'}_triton:{op}")
        for name in names or list(SHAPES):
            N, D = SHAPES[name]
            x = torch.randn(N, 2 * D if packed else D, device=device, dtype=dtype)
            geom = describe(f"activation.{op}", x).info["geom"]
            nbytes = x.numel() * x.element_size() + N * D * dtype.itemsize
            _, copy_gbps = bench.copy_bandwidth(nbytes, device)
            for kernel, block, nw, evict in itertools.product(kernels if packed else ("tiles",), blocks, warps,
                                                              evicts):
                if block // (32 * nw) < 4 or (kernel == "tiles" and block > 2 * D):
                    continue
                for fast in (fasts if dtype != torch.float32 else (False,)):
                    cfg = TileConfig(block=block, num_warps=nw)
                    tag = f"{op} {name} {kernel} block={block} warps={nw} fast={int(fast)} evict={int(evict)}"
                    kw = {"kernel": kernel, "evict": evict} if packed else {"evict": evict}
                    try:
                        def run(c=cfg, x=x, g=geom, f=launch, fa=fast, kw=kw):
                            return f(x, None, None, geom=g, config=c, fast=fa, **kw)

                        t = bench.time_gpu(run, device, rep=40)
                    except Exception as exc:  # a configuration the compiler rejects
                        progress(f"{tag}: failed {type(exc).__name__}")
                        continue
                    gbps = t.gbps(nbytes)
                    rows.append({"op": op, "case": name, "kernel": kernel, "block": block, "num_warps": nw,
                                 "fast": fast, "evict": evict, "median_us": t.median_ms * 1e3, "gbps": gbps,
                                 "frac_of_copy": gbps / copy_gbps})
                    progress(f"{tag}: {t.median_ms * 1e3:.1f} us {gbps:.0f} GB/s "
                             f"{100 * gbps / copy_gbps:.1f}% of copy")
            del x
    return rows
