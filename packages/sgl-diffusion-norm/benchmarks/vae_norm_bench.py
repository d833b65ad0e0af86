"""Benchmark cases of the video-VAE norms, ``channel_rms_norm`` and ``group_norm_silu``, at Wan-VAE
and video-VAE shapes.

``channel_rms_norm`` providers: ``sgl_diffusion`` (the public op with ``silu=True``, default
backend), ``eager`` (the Wan VAE's own chain in the storage dtype: ``F.silu(F.normalize(x, dim=1) *
C**0.5 * gamma + bias)``) and ``torch.compile`` of that chain (``dynamic=False``). Bytes: x read
once, y written once (``2 * x``; gamma and bias ignored).

``group_norm_silu`` providers: ``sgl_diffusion`` (the public op, default backend), ``eager`` (the
VAE's chain ``F.silu(F.group_norm(x, 32, weight, bias, 1e-6))`` in the storage dtype) and
``torch.compile`` of that chain (``dynamic=False``). Bytes: the two-pass bound, ``3 * x``: x read
by the statistics pass, read again by the normalize pass, y written once (a group spans millions
of elements, more than any cache holds, so no kernel can read x only once). The fraction of copy
bandwidth reported by the runner is therefore the fraction of the two-pass bound; ``extra`` also
gives the one-pass bytes (``2 * x``).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import bench, testing

# name -> (shape, channels_last)
CHANNEL_SHAPES: dict[str, tuple[tuple[int, ...], bool]] = {
    "c96": ((1, 96, 21, 240, 416), False),
    "c96-cl": ((1, 96, 21, 240, 416), True),
    "c384": ((1, 384, 21, 120, 208), False),
    "c384-cl": ((1, 384, 21, 120, 208), True),
    "c192-cl": ((1, 192, 21, 240, 416), True),
    "c192": ((1, 192, 21, 240, 416), False),
    "c384-2d": ((1, 384, 240, 416), False),
    # C = 384 at the spatial size of the Wan-VAE range's low end (1.6 GB of bf16 x)
    "c384-240": ((1, 384, 21, 240, 416), False),
    "c384-240-cl": ((1, 384, 21, 240, 416), True),
    # the range's high end, 480 x 832 (C = 384: 3.2e9 elements, 6.4 GB of bf16 x, past 2**31: int64 offsets)
    "c96-480": ((1, 96, 21, 480, 832), False),
    "c96-480-cl": ((1, 96, 21, 480, 832), True),
    "c384-480": ((1, 384, 21, 480, 832), False),
    "c384-480-cl": ((1, 384, 21, 480, 832), True),
}
CHANNEL_DEFAULT = ("c96", "c96-cl", "c384", "c384-cl")


def _channel_eager(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.silu(F.normalize(x, dim=1) * x.shape[1] ** 0.5 * gamma + bias)


def channel_inputs(shape: tuple[int, ...], channels_last: bool, dtype: torch.dtype, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(shape, device=device, dtype=dtype, generator=g)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
    C = shape[1]
    view = (C, *([1] * (len(shape) - 2)))
    gamma = (torch.rand(C, device=device, dtype=dtype, generator=g) + 0.5).reshape(view)
    bias = (torch.randn(C, device=device, dtype=dtype, generator=g) * 0.1).reshape(view)
    return x, gamma, bias


def channel_rms_norm_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                           names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_core import REGISTRY
    from sgl_diffusion_norm import channel_rms_norm, channel_rms_norm_reference

    for name in names or CHANNEL_DEFAULT:
        if name not in CHANNEL_SHAPES:
            raise ValueError(f"unknown channel_rms_norm bench case {name!r}; known: {', '.join(CHANNEL_SHAPES)}")
        torch._dynamo.reset()
        compiled = torch.compile(_channel_eager, dynamic=False)
        shape, cl = CHANNEL_SHAPES[name]
        x, gamma, bias = channel_inputs(shape, cl, dtype, device)

        def check(x=x, gamma=gamma, bias=bias):
            spec = next(s for s in REGISTRY.specs("norm.channel_rms_norm") if s.backend == "triton")
            atol, rtol = spec.contract.tolerance(x.dtype)
            ours = channel_rms_norm(x, gamma, bias, silu=True)
            ref = channel_rms_norm_reference(x, gamma, bias, silu=True)
            assert ours.stride() == ref.stride()
            testing.assert_close(ours, ref, atol=atol, rtol=rtol)

        yield bench.BenchCase(
            name=name,
            shape=f"{list(shape)} {'channels_last' if cl else 'contiguous'}",
            dtype=str(dtype).removeprefix("torch."),
            bytes=2 * bench.tensor_bytes(x),
            providers={
                "sgl_diffusion": lambda x=x, g=gamma, b=bias: channel_rms_norm(x, g, b, silu=True),
                "eager": lambda x=x, g=gamma, b=bias: _channel_eager(x, g, b),
                "torch.compile": lambda x=x, g=gamma, b=bias, f=compiled: f(x, g, b),
            },
            check=check,
            extra={"channels_last": cl, "bytes_model": "2 * x: read x once, write y once"},
        )
        del x, gamma, bias

# name -> (shape, channels_last, groups)
GROUP_SHAPES: dict[str, tuple[tuple[int, ...], bool, int]] = {
    "c192-cl": ((1, 192, 21, 240, 416), True, 32),
    "c192": ((1, 192, 21, 240, 416), False, 32),
    "c96-cl": ((1, 96, 21, 240, 416), True, 32),
    "c96": ((1, 96, 21, 240, 416), False, 32),
    "c384-cl": ((1, 384, 21, 120, 208), True, 32),
    "c384": ((1, 384, 21, 120, 208), False, 32),
    "c512-2d": ((1, 512, 128, 128), False, 32),
}
GROUP_DEFAULT = ("c192-cl", "c192", "c96-cl", "c384-cl")
EPS = 1e-6


def _group_eager(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, groups: int) -> torch.Tensor:
    return F.silu(F.group_norm(x, groups, w, b, EPS))


def group_inputs(shape: tuple[int, ...], channels_last: bool, dtype: torch.dtype, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(shape, device=device, dtype=dtype, generator=g)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)
    C = shape[1]
    w = torch.rand(C, device=device, dtype=dtype, generator=g) + 0.5
    b = torch.randn(C, device=device, dtype=dtype, generator=g) * 0.1
    return x, w, b


def group_norm_silu_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                          names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_core import REGISTRY
    from sgl_diffusion_norm import group_norm_silu, group_norm_silu_reference

    for name in names or GROUP_DEFAULT:
        if name not in GROUP_SHAPES:
            raise ValueError(f"unknown group_norm_silu bench case {name!r}; known: {', '.join(GROUP_SHAPES)}")
        torch._dynamo.reset()
        compiled = torch.compile(_group_eager, dynamic=False)
        shape, cl, G = GROUP_SHAPES[name]
        x, w, b = group_inputs(shape, cl, dtype, device)

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
                "eager": lambda x=x, w=w, b=b, G=G: _group_eager(x, w, b, G),
                "torch.compile": lambda x=x, w=w, b=b, G=G, f=compiled: f(x, w, b, G),
            },
            check=check,
            extra={"channels_last": cl, "groups": G, "one_pass_bytes": 2 * bench.tensor_bytes(x),
                   "bytes_model": "3 * x: two reads of x (statistics, normalize) + one write of y"},
        )
        del x, w, b
