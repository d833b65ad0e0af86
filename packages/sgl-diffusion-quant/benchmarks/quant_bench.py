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
