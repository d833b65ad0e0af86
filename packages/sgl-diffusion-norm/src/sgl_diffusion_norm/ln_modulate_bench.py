"""Benchmark cases of ``ln_modulate`` at production shapes (../shared/SHAPES.md).

Providers: ``sgl_diffusion`` (the public op with its default, ``exact=None``: the
exact kernel behind its gate), ``sgl_diffusion(close)`` (``exact=False``: the close kernel),
``sgl_diffusion(exact kernel)`` (the exact kernel alone, without its gate), ``eager`` (the diffusers
chain ``F.layer_norm(x) * (1 + scale) + shift`` in the storage dtype), ``torch.compile``
of that chain specialized to each shape (``dynamic=False``: what a pipeline running at one
resolution gets) and ``torch.compile(dynamic)`` (``dynamic=True``: what one compiled
function gets once it has seen a second shape and recompiles with symbolic sizes).
Bytes: x read once, y written once, plus the
modulation tensors (read once each).
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import bench, testing

# name -> (B, S, D, modulation layout)
SHAPES: dict[str, tuple[int, int, int, str]] = {
    "flux": (1, 4608, 3072, "per-sample"),
    "wan": (1, 75600, 5120, "per-sample"),
    "hunyuan": (1, 118800, 3072, "per-sample"),
    "wan-per-token": (1, 75600, 5120, "per-token"),
    "wan-per-frame": (1, 75600, 5120, "per-frame"),
    # Wan's own chain: FP32LayerNorm on bf16 x, fp32 modulation, result cast back to bf16
    "wan-fp32mod": (1, 75600, 5120, "per-sample-fp32"),
}
DEFAULT = ("flux", "wan", "hunyuan")


def _eager(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, L: int) -> torch.Tensor:
    if scale.dtype == torch.float32 and x.dtype != torch.float32:  # diffusers Wan: FP32LayerNorm + fp32 mods
        return (F.layer_norm(x.float(), (x.shape[-1],), eps=1e-6) * (1 + scale) + shift).to(x.dtype)
    y = F.layer_norm(x, (x.shape[-1],), eps=1e-6)
    if scale.dim() == 4:  # per frame: view tokens as [B, F, L, D]
        B, S, D = x.shape
        return (y.view(B, S // L, L, D) * (1 + scale) + shift).view(B, S, D)
    return y * (1 + scale) + shift


def make_inputs(B: int, S: int, D: int, layout: str, dtype: torch.dtype, device: torch.device):
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
    L = 1
    if layout.startswith("per-sample"):
        mdt = torch.float32 if layout.endswith("fp32") else dtype
        mod = torch.randn(B, 6, D, device=device, dtype=mdt, generator=g)  # adaLN-Zero chunks
        scale, shift = mod[:, 1:2], mod[:, 0:1]
    elif layout == "per-token":  # strided chunks of a [B, S, 6*D] projection (Wan2.2-TI2V style)
        proj = torch.randn(B, S, 6 * D, device=device, dtype=dtype, generator=g) * 0.1
        scale, shift = proj[..., D:2 * D], proj[..., :D]
    else:  # per-frame, 21 latent frames
        Fr = 21
        L = S // Fr
        scale = torch.randn(B, Fr, 1, D, device=device, dtype=dtype, generator=g) * 0.1
        shift = torch.randn(B, Fr, 1, D, device=device, dtype=dtype, generator=g) * 0.1
    return x, scale, shift, L


def _close_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    from sgl_diffusion_core import REGISTRY

    return next(s for s in REGISTRY.specs("norm.ln_modulate") if s.backend == "triton").contract.tolerance(dtype)


def bench_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from . import ln_modulate, ln_modulate_reference
    from .row_norm_bench import exact_kernel

    for name in names or DEFAULT:
        # fresh compiled functions per case, and dynamo's caches cleared: its recompile limit
        # counts every compiled wrapper of one code object, and past it dynamo silently runs eager
        torch._dynamo.reset()
        compiled = torch.compile(_eager, dynamic=False)
        compiled_dyn = torch.compile(_eager, dynamic=True)
        if name not in SHAPES:
            raise ValueError(f"unknown ln_modulate bench case {name!r}; known: {', '.join(SHAPES)}")
        B, S, D, layout = SHAPES[name]
        x, scale, shift, L = make_inputs(B, S, D, layout, dtype, device)
        out = ln_modulate(x, scale, shift)

        def check(x=x, scale=scale, shift=shift, out=out):
            ref = ln_modulate_reference(x, scale, shift)
            testing.assert_exact(ln_modulate(x, scale, shift), ref)  # default: gated kernel or eager, same bits
            atol, rtol = _close_tolerance(x.dtype)
            testing.assert_close(ln_modulate(x, scale, shift, exact=False), ref, atol=atol, rtol=rtol)

        kernel = exact_kernel("ln_modulate", (x, scale, shift), {})  # the exact kernel alone, no gate
        nbytes = bench.tensor_bytes(x, out) + (
            bench.tensor_bytes(scale, shift) if not layout.startswith("per-sample") else 2 * D * scale.element_size()
        )
        yield bench.BenchCase(
            name=name,
            shape=f"[{B}, {S}, {D}] {layout}",
            dtype=str(dtype).removeprefix("torch."),
            bytes=nbytes,
            providers={
                "sgl_diffusion": lambda x=x, a=scale, b=shift: ln_modulate(x, a, b),
                "sgl_diffusion(close)": lambda x=x, a=scale, b=shift: ln_modulate(x, a, b, exact=False),
                **({"sgl_diffusion(exact kernel)": kernel} if kernel is not None else {}),
                "eager": lambda x=x, a=scale, b=shift, L=L: _eager(x, a, b, L),
                "torch.compile": lambda x=x, a=scale, b=shift, L=L, f=compiled: f(x, a, b, L),
                "torch.compile(dynamic)": lambda x=x, a=scale, b=shift, L=L, f=compiled_dyn: f(x, a, b, L),
            },
            check=check,
            extra={"layout": layout},
        )
        del x, scale, shift, out


def tune(device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None,
         progress=print) -> list[dict]:
    """Sweep launch configurations of the Triton backend at the bench shapes (GPU tuning aid).

    Returns one row per (case, block, chunks, num_warps, num_stages, max_registers) with time and % of a same-run copy;
    the winners are written into ``sgl_diffusion_core.launch`` as data.
    """
    from sgl_diffusion_core import RowConfig, resolve_target

    from .row_norm_api import describe_ln_modulate

    launch = resolve_target("sgl_diffusion_norm.row_norm_triton:row_norm")
    rows = []
    for name in names or DEFAULT:
        B, S, D, layout = SHAPES[name]
        x, scale, shift, L = make_inputs(B, S, D, layout, dtype, device)
        geom = describe_ln_modulate(x, scale, shift).info["geom"]
        nbytes = bench.tensor_bytes(x, x)
        _, copy_gbps = bench.copy_bandwidth(nbytes, device)
        blocks = [b for b in (512, 1024, 2048, 4096, 8192) if b >= D // 16 and b <= 2 * D]
        for block in blocks:
            chunks = -(-D // block)
            for warps in (1, 2, 4, 8):
                if block // (32 * warps) < 2:
                    continue
                for stages, max_regs in ((1, None), (2, None), (1, 80), (1, 128)) if chunks > 1 else ((1, None),):
                    cfg = RowConfig(block=block, chunks=chunks, num_warps=warps, num_stages=stages,
                                    max_registers=max_regs)
                    try:
                        fn = lambda x=x, a=scale, b=shift, g=geom, c=cfg: launch(x, a, b, geom=g, config=c)  # noqa: E731
                        t = bench.time_gpu(fn, device, rep=40)
                    except Exception as exc:  # a config the compiler rejects (e.g. out of resources)
                        progress(f"{name} {cfg}: failed {type(exc).__name__}")
                        continue
                    gbps = t.gbps(nbytes)
                    rows.append({"case": name, "D": D, "block": block, "chunks": chunks, "num_warps": warps,
                                 "num_stages": stages, "max_registers": max_regs,
                                 "median_us": t.median_ms * 1e3, "gbps": gbps,
                                 "frac_of_copy": gbps / copy_gbps})
                    progress(f"{name} D={D} block={block} chunks={chunks} warps={warps} stages={stages} "
                             f"maxnreg={max_regs}: "
                             f"{t.median_ms * 1e3:.1f} us {gbps:.0f} GB/s {100 * gbps / copy_gbps:.1f}% of copy")
        del x, scale, shift
    return rows
