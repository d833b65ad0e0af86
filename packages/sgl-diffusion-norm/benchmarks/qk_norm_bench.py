"""Benchmark cases of ``qk_norm`` at production shapes (Wan, HunyuanVideo, FLUX, SD3).

Providers: ``sgl_diffusion`` (the public op, default backend: one launch for q and k),
``eager`` (the diffusers per-head ``RMSNorm`` chain on q, then on k) and ``torch.compile`` of
that chain (``dynamic=False``). Bytes: q and k read once, q_out and k_out written once
(``2 * (q + k)`` bytes; the ``[Dh]`` weights are ignored). The ``-qkv`` cases take q and k as
strided views of a fused ``[B, S, 3 * H * Dh]`` projection (the same bytes move).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

# name -> (B, S, H, Dh, layout)
SHAPES: dict[str, tuple[int, int, int, int, str]] = {
    "wan": (1, 75600, 40, 128, "separate"),
    "hunyuan": (1, 118800, 24, 128, "separate"),
    "hunyuan-qkv": (1, 118800, 24, 128, "qkv"),
    "flux": (1, 4608, 24, 128, "separate"),
    "sd3": (1, 4429, 38, 64, "separate"),
}
DEFAULT = ("wan", "hunyuan", "hunyuan-qkv")


def _rms(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    # the diffusers RMSNorm chain (weight in x's half dtype)
    n = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    return n.to(w.dtype) * w


def _eager(q: torch.Tensor, k: torch.Tensor, qw: torch.Tensor, kw: torch.Tensor):
    return _rms(q, qw), _rms(k, kw)


def make_inputs(B: int, S: int, H: int, D: int, layout: str, dtype: torch.dtype, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    if layout == "qkv":
        qkv = torch.randn(B, S, 3 * H * D, device=device, dtype=dtype, generator=g)
        v = qkv.view(B, S, 3, H, D)
        q, k = v[:, :, 0], v[:, :, 1]
    else:
        q = torch.randn(B, S, H, D, device=device, dtype=dtype, generator=g)
        k = torch.randn(B, S, H, D, device=device, dtype=dtype, generator=g)
    qw = torch.rand(D, device=device, dtype=dtype, generator=g) + 0.5
    kw = torch.rand(D, device=device, dtype=dtype, generator=g) + 0.5
    return q, k, qw, kw


def qk_norm_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                  names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_core import REGISTRY
    from sgl_diffusion_norm import qk_norm, qk_norm_reference

    for name in names or DEFAULT:
        if name not in SHAPES:
            raise ValueError(f"unknown qk_norm bench case {name!r}; known: {', '.join(SHAPES)}")
        torch._dynamo.reset()
        compiled = torch.compile(_eager, dynamic=False)
        B, S, H, D, layout = SHAPES[name]
        q, k, qw, kw = make_inputs(B, S, H, D, layout, dtype, device)

        def check(q=q, k=k, qw=qw, kw=kw):
            spec = next(s for s in REGISTRY.specs("norm.qk_norm") if s.backend == "triton")
            atol, rtol = spec.contract.tolerance(q.dtype)
            ours = qk_norm(q, k, qw, kw)
            ref = qk_norm_reference(q, k, qw, kw)
            for a, b in zip(ours, ref):
                testing.assert_close(a, b, atol=atol, rtol=rtol)

        nbytes = 2 * bench.tensor_bytes(q, k)
        yield bench.BenchCase(
            name=name,
            shape=f"q,k [{B}, {S}, {H}, {D}] {layout}",
            dtype=str(dtype).removeprefix("torch."),
            bytes=nbytes,
            providers={
                "sgl_diffusion": lambda q=q, k=k, a=qw, b=kw: qk_norm(q, k, a, b),
                "eager": lambda q=q, k=k, a=qw, b=kw: _eager(q, k, a, b),
                "torch.compile": lambda q=q, k=k, a=qw, b=kw, f=compiled: f(q, k, a, b),
            },
            check=check,
            extra={"layout": layout, "bytes_model": "2 * (q + k): read q, k once; write q_out, k_out once"},
        )
        del q, k, qw, kw

