"""Benchmark cases of the quant ops at production shapes (docs/design.md).

``quantize_fp8``: the activations fed to a linear layer, FLUX.1 (4608 joint tokens, hidden 3072,
MLP 12288) and Wan2.1-14B 720p (75600 tokens, hidden 5120, FFN 13824), bf16 in, ``float8_e4m3fn``
out with fp32 row scales (the format the GPU stores: ``float8_e4m3fnuz`` on gfx942). Providers:
``sgl_diffusion`` (the public op, default backend), ``eager`` (the reference chain) and
``torch.compile`` of it. Bytes: x read once, the codes and the scales written once.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import REGISTRY, bench, device_arch, tensor_platform, testing

# name -> (tokens, D)
QUANT_SHAPES: dict[str, tuple[int, int]] = {
    "flux_hidden": (4608, 3072),
    "flux_mlp": (4608, 12288),
    "wan_hidden": (75600, 5120),
    "wan_ffn": (75600, 13824),
}


def native_fp8(device: torch.device) -> torch.dtype:
    """The FP8 format the device stores: e4m3fnuz on gfx942, e4m3fn elsewhere."""
    plat = tensor_platform(device)
    if plat == "hip" and device_arch(plat, device.index) == "gfx942":
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def _quantize_cases(device: torch.device, dtype: torch.dtype, names: list[str] | None,
                    granularity: str) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_quant import quantize_fp8, quantize_fp8_reference

    fp8 = native_fp8(device)
    spec = next(s for s in REGISTRY.specs("quant.quantize_fp8") if s.backend == "torch")
    for name in names or list(QUANT_SHAPES):
        if name not in QUANT_SHAPES:
            raise ValueError(f"unknown quantize_fp8 bench case {name!r}; known: {', '.join(QUANT_SHAPES)}")
        N, D = QUANT_SHAPES[name]
        torch._dynamo.reset()
        x = torch.randn(N, D, device=device, dtype=dtype, generator=torch.Generator(device=device).manual_seed(0))

        def ours(x=x):
            return quantize_fp8(x, granularity=granularity, dtype=fp8)

        def eager(x=x):
            return quantize_fp8_reference(x, granularity=granularity, dtype=fp8)

        compiled = torch.compile(eager, dynamic=False)

        def check(ours=ours, eager=eager):
            (q, s), (qr, sr) = ours(), eager()
            testing.assert_close(s, sr, atol=spec.contract.tolerance("float32")[0],
                                 rtol=spec.contract.tolerance("float32")[1])
            atol, rtol = spec.contract.tolerance(fp8)
            testing.assert_close(q.float(), qr.float(), atol=atol, rtol=rtol)

        scales = 4 * (N if granularity == "row" else 1)
        yield bench.BenchCase(
            name=f"{name}_{granularity}", shape=f"[{N}, {D}]", dtype=str(dtype).removeprefix("torch."),
            bytes=x.numel() * x.element_size() + x.numel() + scales,
            providers={"sgl_diffusion": ours, "eager": eager, "torch.compile": compiled}, check=check,
            extra={"fp8": str(fp8).removeprefix("torch."), "granularity": granularity},
        )
        del x


def quantize_fp8_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    """Row-wise then tensor-wise quantization of every shape."""
    yield from _quantize_cases(device, dtype, names, "row")
    yield from _quantize_cases(device, dtype, names, "tensor")


# fp8_linear: name -> (tokens, N, K, epilogue): FLUX.1's MLP (3072 -> 12288 with GELU-tanh,
# 12288 -> 3072 closed by the gated residual) and attention output projection, Wan2.1-14B 480p's
# FFN and attention output projection
LINEAR_SHAPES: dict[str, tuple[int, int, int, str | None]] = {
    "flux_mlp_in": (4608, 12288, 3072, "gelu_tanh"),
    "flux_mlp_out": (4608, 3072, 12288, "gated_residual"),
    "flux_attn_out": (4608, 3072, 3072, None),
    "wan_ffn_in": (32760, 13824, 5120, "gelu_tanh"),
    "wan_ffn_out": (32760, 5120, 13824, "gated_residual"),
    "wan_attn_out": (32760, 5120, 5120, None),
}


def _linear_inputs(device: torch.device, N: int, K: int, M: int, epilogue: str | None):
    from sgl_diffusion_quant import quantize_fp8

    fp8 = native_fp8(device)
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(1, M, K, device=device, dtype=torch.bfloat16, generator=g)
    w = (torch.randn(N, K, device=device, generator=g) / K**0.5).to(torch.bfloat16)
    bias = torch.randn(N, device=device, dtype=torch.bfloat16, generator=g)
    xq, xs = quantize_fp8(x, dtype=fp8)
    wq, ws = quantize_fp8(w, dtype=fp8)
    kw = {"epilogue": epilogue}
    if epilogue == "gated_residual":
        kw["residual"] = torch.randn(1, M, N, device=device, dtype=torch.bfloat16, generator=g)
        kw["gate"] = torch.randn(1, 1, N, device=device, dtype=torch.bfloat16, generator=g)
    return x, w, bias, (xq, xs, wq, ws, bias), kw


def _bf16_chain(x, w, bias, kw):
    """The bf16 layer the FP8 one replaces: ``F.linear``, then the epilogue in eager bf16."""
    return _bf16_chain_after(torch.nn.functional.linear(x, w, bias), kw)


def fp8_linear_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None):
    """The FP8 linear layers of FLUX.1 and Wan2.1-14B with their epilogues (bf16 output). Providers:
    ``sgl_diffusion`` (default backend, fp32 accumulation: ``scaled_mm`` for a plain product on CUDA
    sm_90+, the fused Triton GEMM with an epilogue), ``sgl_diffusion(fast)`` (the same with
    ``accumulate="fast"``), ``triton`` / ``triton(fast)`` (the Triton GEMM), ``quantize+sgl_diffusion``
    (the bf16 activations quantized row-wise first, as a layer fed by a bf16 op pays), ``triton_unfused``
    (the Triton GEMM, then the epilogue in eager bf16), ``bf16_linear`` (``F.linear`` in bf16 and the eager
    epilogue: the layer it replaces) and ``torch.compile`` of that. Bytes: both FP8 operands and the scales read once,
    the output (and residual) once; ``extra`` carries the FLOPs (2 M N K) for TFLOP/s."""
    from sgl_diffusion_quant import fp8_linear, quantize_fp8

    backend = "triton"
    spec = next(s for s in REGISTRY.specs("quant.fp8_linear") if s.backend == backend)
    for name in names or list(LINEAR_SHAPES):
        if name not in LINEAR_SHAPES:
            raise ValueError(f"unknown fp8_linear bench case {name!r}; known: {', '.join(LINEAR_SHAPES)}")
        M, N, K, epilogue = LINEAR_SHAPES[name]
        torch._dynamo.reset()
        x, w, bias, args, kw = _linear_inputs(device, N, K, M, epilogue)

        def ours(args=args, kw=kw):
            return fp8_linear(*args, **kw)

        def with_quantize(x=x, args=args, kw=kw):
            xq, xs = quantize_fp8(x, dtype=args[0].dtype)
            return fp8_linear(xq, xs, *args[2:], **kw)

        def unfused(args=args, kw=kw):
            y = fp8_linear(*args, backend=backend)
            return _bf16_chain_after(y, kw)

        def bf16(x=x, w=w, bias=bias, kw=kw):
            return _bf16_chain(x, w, bias, kw)

        providers = {"sgl_diffusion": ours,
                     "sgl_diffusion(fast)": lambda args=args, kw=kw: fp8_linear(*args, **kw, accumulate="fast"),
                     "triton": lambda args=args, kw=kw: fp8_linear(*args, **kw, backend=backend),
                     "triton(fast)": lambda args=args, kw=kw: fp8_linear(*args, **kw, accumulate="fast",
                                                                         backend=backend),
                     "quantize+sgl_diffusion": with_quantize, "triton_unfused": unfused,
                     "bf16_linear": bf16, "torch.compile": torch.compile(bf16, dynamic=False)}

        def check(args=args, kw=kw):
            from sgl_diffusion_quant import fp8_linear_reference

            atol, rtol = spec.contract.tolerance(torch.bfloat16)
            testing.assert_close(fp8_linear(*args, **kw, backend=backend), fp8_linear_reference(*args, **kw),
                                 atol=atol, rtol=rtol)

        out_bytes = M * N * 2 * (2 if epilogue == "gated_residual" else 1)
        yield bench.BenchCase(
            name=name, shape=f"[{M}, {K}] x [{N}, {K}]", dtype=str(dtype).removeprefix("torch."),
            bytes=M * K + N * K + 4 * (M + N) + 2 * N + out_bytes,
            providers=providers, check=check,
            extra={"flops": 2 * M * N * K, "epilogue": epilogue or "none",
                   "fp8": str(native_fp8(device)).removeprefix("torch.")},
        )
        del x, w, args, kw


def _bf16_chain_after(y, kw):
    """The epilogue applied in eager bf16 to a finished bf16 product (the unfused form)."""
    if kw["epilogue"] == "gelu_tanh":
        return torch.nn.functional.gelu(y, approximate="tanh")
    if kw["epilogue"] == "gated_residual":
        return kw["residual"] + kw["gate"] * y
    return y
