"""Benchmark cases of the rope family at production shapes (docs/design.md); run by
``sgl-diffusion bench --op rope.<op>`` from a checkout (benchmarks do not ship in the wheel).

q/k per model: Wan2.1-14B 720p ``[1, 75600, 40, 128]`` (grid 21 x 45 x 80, axes 44/42/42,
theta 1e4) and HunyuanVideo 720p ``[1, 118800, 24, 128]`` (grid 33 x 45 x 80, axes
16/56/56, theta 256); both rotate adjacent pairs (interleaved) in diffusers. Providers:
``sgl_diffusion`` (the public op), ``eager`` (the chain diffusers runs, with the cos/sin
table precomputed as diffusers does once per forward) and ``torch.compile`` of that chain
(specialized to the shape, dynamo reset per case). Bytes: q (and k) read once and
written once, plus the table where the op reads one (``rope_3d`` reads none).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

MODELS = {
    "wan": ((1, 75600, 40, 128), (21, 45, 80), (44, 42, 42), 10000.0),
    "hunyuan": ((1, 118800, 24, 128), (33, 45, 80), (16, 56, 56), 256.0),
}


def _table(grid, axes, theta, device):
    """diffusers' fp64 angle table of the grid, cast to fp32 (the values ``rope_3d`` computes in the kernel)."""
    T, H, W = grid
    s = torch.arange(T * H * W, device=device)
    pos = torch.stack((s // (H * W), (s // W) % H, s % W), -1).double()
    axis = torch.tensor([a for a, d in enumerate(axes) for _ in range(d // 2)], device=device)
    inv_freq = [1.0 / theta ** (2 * j / d) for d in axes for j in range(d // 2)]  # fp64, per pair
    ang = pos[:, axis] * torch.tensor(inv_freq, dtype=torch.float64, device=device)
    return ang.cos().float(), ang.sin().float()  # [S, 64]


def _eager_rope(x, cos_full, sin_full):
    """diffusers' real-table chain for adjacent pairs: ``(x.float() * cos + rot(x).float() * sin).to(x.dtype)``."""
    x_real, x_imag = x.unflatten(-1, (-1, 2)).unbind(-1)
    x_rot = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
    return (x.float() * cos_full + x_rot.float() * sin_full).to(x.dtype)


def _eager_rms(x, w, eps=1e-6):
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x * torch.rsqrt(var + eps)).to(w.dtype) * w


def _inputs(name, dtype, device):
    shape, grid, axes, theta = MODELS[name]
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(*shape, device=device, dtype=dtype, generator=g)
    k = torch.randn(*shape, device=device, dtype=dtype, generator=g)
    cos, sin = _table(grid, axes, theta, device)
    # diffusers keeps [1, S, 1, Dh] fp32 tables (repeat_interleave'd): what its chain reads
    cos_full = cos.repeat_interleave(2, -1)[None, :, None]
    sin_full = sin.repeat_interleave(2, -1)[None, :, None]
    return q, k, cos, sin, cos_full, sin_full, grid, axes, theta


def _names(names, known):
    for n in names or list(known):
        if n not in known:
            raise ValueError(f"unknown rope bench case {n!r}; known: {', '.join(known)}")
        yield n


def _case(name, shape, nbytes, ours, eager, check, extra_providers=None):
    torch._dynamo.reset()
    providers = {"sgl_diffusion": ours, "eager": eager, "torch.compile": torch.compile(eager, dynamic=False)}
    providers.update(extra_providers or {})
    return bench.BenchCase(name=name, shape=shape, dtype="bfloat16", bytes=nbytes, providers=providers, check=check)


def apply_rope_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names=None) -> Iterator:
    from sgl_diffusion_rope import apply_rope

    for name in _names(names, MODELS):
        q, _, cos, sin, cf, sf, *_ = _inputs(name, dtype, device)

        def check(q=q, cos=cos, sin=sin, cf=cf, sf=sf):
            testing.assert_close(apply_rope(q, cos, sin, interleaved=True), _eager_rope(q, cf, sf))
            testing.assert_exact(apply_rope(q, cf[0, :, 0], sf[0, :, 0], interleaved=True, exact=True),
                                 _eager_rope(q, cf, sf))

        yield _case(name, f"q {list(q.shape)}, table [S, 64] fp32", bench.tensor_bytes(q, q, cos, sin),
                    lambda q=q, c=cos, s=sin: apply_rope(q, c, s, interleaved=True),
                    lambda q=q, c=cf, s=sf: _eager_rope(q, c, s), check,
                    {"sgl_diffusion(exact)": lambda q=q, c=cf[0, :, 0], s=sf[0, :, 0]: apply_rope(
                        q, c, s, interleaved=True, exact=True)})


def apply_rope_qk_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names=None) -> Iterator:
    from sgl_diffusion_rope import apply_rope_qk

    for name in _names(names, MODELS):
        q, k, cos, sin, cf, sf, *_ = _inputs(name, dtype, device)

        def check(q=q, k=k, cos=cos, sin=sin, cf=cf, sf=sf):
            qo, ko = apply_rope_qk(q, k, cos, sin, interleaved=True)
            testing.assert_close(qo, _eager_rope(q, cf, sf))
            testing.assert_close(ko, _eager_rope(k, cf, sf))

        yield _case(name, f"q, k {list(q.shape)}, table [S, 64] fp32", bench.tensor_bytes(q, q, k, k, cos, sin),
                    lambda q=q, k=k, c=cos, s=sin: apply_rope_qk(q, k, c, s, interleaved=True),
                    lambda q=q, k=k, c=cf, s=sf: (_eager_rope(q, c, s), _eager_rope(k, c, s)), check)


def rope_3d_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names=None) -> Iterator:
    from sgl_diffusion_rope import apply_rope, rope_3d

    for name in _names(names, MODELS):
        q, _, cos, sin, cf, sf, grid, axes, theta = _inputs(name, dtype, device)

        def check(q=q, cf=cf, sf=sf, grid=grid, axes=axes, theta=theta):
            testing.assert_close(rope_3d(q, grid, axes, theta=theta), _eager_rope(q, cf, sf))

        yield _case(name, f"q {list(q.shape)}, grid {grid}, axes {axes}", bench.tensor_bytes(q, q),
                    lambda q=q, g=grid, a=axes, t=theta: rope_3d(q, g, a, theta=t),
                    lambda q=q, c=cf, s=sf: _eager_rope(q, c, s), check,
                    {"sgl_diffusion apply_rope (table)": lambda q=q, c=cos, s=sin: apply_rope(q, c, s,
                                                                                             interleaved=True)})


def qk_norm_rope_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16, names=None) -> Iterator:
    from sgl_diffusion_rope import qk_norm_rope

    for name in _names(names, MODELS):
        q, k, cos, sin, cf, sf, *_ = _inputs(name, dtype, device)
        Dh = q.shape[-1]
        qw = torch.rand(Dh, device=device, dtype=dtype) + 0.5
        kw = torch.rand(Dh, device=device, dtype=dtype) + 0.5

        def eager(q=q, k=k, qw=qw, kw=kw, c=cf, s=sf):
            return _eager_rope(_eager_rms(q, qw), c, s), _eager_rope(_eager_rms(k, kw), c, s)

        def ours(q=q, k=k, qw=qw, kw=kw, c=cos, s=sin):
            return qk_norm_rope(q, k, qw, kw, c, s, interleaved=True, inplace=False)

        def check(ours=ours, eager=eager):
            from sgl_diffusion_core import REGISTRY

            spec = next(s for s in REGISTRY.specs("rope.qk_norm_rope") if s.backend == "triton")
            atol, rtol = spec.contract.tolerance(dtype)
            for a, b in zip(ours(), eager()):
                testing.assert_close(a, b, atol=atol, rtol=rtol)

        yield _case(name, f"q, k {list(q.shape)}, RMS + weight, table [S, 64] fp32",
                    bench.tensor_bytes(q, q, k, k, cos, sin), ours, eager, check)
