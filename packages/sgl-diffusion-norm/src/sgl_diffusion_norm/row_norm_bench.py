"""Benchmark cases of the row-norm family (``layer_norm``, ``rms_norm``, ``rms_modulate``,
``gated_residual_norm_modulate``) at production shapes (../shared/SHAPES.md).
``ln_modulate`` keeps its own cases in ``ln_modulate_bench.py``.

Providers: ``sgl_diffusion`` (the public op with its default, ``exact=None``: the exact
kernel behind its gate for the norms, so eager itself for a signature the gate sent back;
the close kernel for the gated op), ``sgl_diffusion(close)`` (``exact=False``: the close
kernel), ``sgl_diffusion(exact kernel)`` (the norms' exact kernel alone, without its gate:
its speed whatever the gate decided), ``eager`` (the eager chain, ``row_norm_torch``) and
``torch.compile`` of that chain specialized to the shape.

Bytes (the minimum a fused kernel moves): x read once and the result written once, plus
the modulation vectors (per sample: ``2 * D`` elements) and the weight. The gated op reads
residual and update and writes out and the new residual: four full tensors.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

# name -> (B, S, D)
SHAPES: dict[str, tuple[int, int, int]] = {
    "flux": (1, 4608, 3072),
    "sd3": (2, 4429, 2432),
    "wan": (1, 75600, 5120),
    "hunyuan": (1, 118800, 3072),
}
DEFAULT = ("flux", "wan", "hunyuan")


def _inputs(name: str, dtype: torch.dtype, device: torch.device):
    if name not in SHAPES:
        raise ValueError(f"unknown row-norm bench case {name!r}; known: {', '.join(SHAPES)}")
    B, S, D = SHAPES[name]
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
    mod = torch.randn(B, 6, D, device=device, dtype=dtype, generator=g) * 0.5  # adaLN-Zero chunks
    w = 1 + 0.1 * torch.randn(D, device=device, dtype=dtype, generator=g)
    return (B, S, D), x, mod, w


def _case(op_name, name, dtype, device, ours, eager, check, nbytes, shape, kernel=None):
    torch._dynamo.reset()  # dynamo's recompile limit counts every compiled wrapper of one code object
    compiled = torch.compile(eager, dynamic=False)
    providers = {
        "sgl_diffusion": lambda: ours(None),
        "sgl_diffusion(close)": lambda: ours(False),
        "eager": eager,
        "torch.compile": compiled,
    }
    if kernel is not None:  # the exact kernel alone, whatever its gate decided (its speed)
        providers["sgl_diffusion(exact kernel)"] = kernel
    return bench.BenchCase(
        name=name,
        shape=shape,
        dtype=str(dtype).removeprefix("torch."),
        bytes=nbytes,
        providers=providers,
        check=check,
        extra={"op": op_name},
    )


def _norm_cases(op_name: str, device, dtype, names) -> Iterator[bench.BenchCase]:
    from . import layer_norm, layer_norm_reference, rms_modulate, rms_modulate_reference, rms_norm, rms_norm_reference
    from .row_norm_api import OPS

    fns = {
        "layer_norm": (layer_norm, layer_norm_reference),
        "rms_norm": (rms_norm, rms_norm_reference),
        "rms_modulate": (rms_modulate, rms_modulate_reference),
    }
    fn, ref = fns[op_name]
    spec_tol = _tolerance(OPS[op_name][0], dtype)
    for name in names or DEFAULT:
        (B, S, D), x, mod, w = _inputs(name, dtype, device)
        if op_name == "rms_modulate":
            sc, sh = mod[:, 1:2], mod[:, 0:1]
            args, kw = (x, sc, sh), {"weight": w}
        else:
            args, kw = (x, w), {}
        out = fn(*args, **kw)

        def ours(exact, fn=fn, args=args, kw=kw):
            return fn(*args, exact=exact, **kw)

        def eager(ref=ref, args=args, kw=kw):
            return ref(*args, **kw)

        def check(ours=ours, eager=eager):
            testing.assert_exact(ours(True), eager())  # gate: verified kernel or eager, bits equal
            testing.assert_close(ours(False), eager(), atol=spec_tol[0], rtol=spec_tol[1])

        nbytes = bench.tensor_bytes(x, out, w) + (2 * D * mod.element_size() if op_name == "rms_modulate" else 0)
        yield _case(op_name, name, dtype, device, ours, eager, check, nbytes, f"[{B}, {S}, {D}] per-sample",
                    kernel=exact_kernel(op_name, args, kw))
        del x, mod, out


def exact_kernel(op_name: str, args: tuple, kw: dict):
    """A zero-argument callable launching the exact kernel alone (no gate), or None off-GPU."""
    from sgl_diffusion_core import REGISTRY, describe, select_impl

    from .row_norm_api import _DISPATCH, OPS

    op_id, _, modulated = OPS[op_name]
    x = args[0]
    sc, sh = (args[1], args[2]) if modulated else (None, None)
    w = kw.get("weight", None if modulated else (args[1] if len(args) > 1 else None))
    b = kw.get("bias", None if modulated else (args[2] if len(args) > 2 else None))
    tensors = (x, sc, sh, w, b)
    try:
        select_impl(op_id, describe(op_id, *args, **kw), backend="triton_exact")
    except Exception:
        return None
    assert any(s.backend == "triton_exact" for s in REGISTRY.specs(op_id))
    run = _DISPATCH[op_name].plan(tensors, "triton_exact", True)
    return lambda: run.fused(*tensors, 1e-6, 1.0)


def _tolerance(op_id: str, dtype: torch.dtype):
    from sgl_diffusion_core import REGISTRY

    return next(s for s in REGISTRY.specs(op_id) if s.backend == "triton").contract.tolerance(dtype)


def layer_norm_cases(device, dtype=torch.bfloat16, names=None) -> Iterator[bench.BenchCase]:
    """``layer_norm(x, weight)`` (SD3-style affine LayerNorm)."""
    return _norm_cases("layer_norm", device, dtype, names)


def rms_norm_cases(device, dtype=torch.bfloat16, names=None) -> Iterator[bench.BenchCase]:
    """``rms_norm(x, weight)`` with a weight in x's dtype."""
    return _norm_cases("rms_norm", device, dtype, names)


def rms_modulate_cases(device, dtype=torch.bfloat16, names=None) -> Iterator[bench.BenchCase]:
    """``rms_modulate(x, scale, shift, weight=w)``, per-sample modulation."""
    return _norm_cases("rms_modulate", device, dtype, names)


def gated_residual_norm_modulate_cases(device, dtype=torch.bfloat16, names=None) -> Iterator[bench.BenchCase]:
    """``gated_residual_norm_modulate(residual, update, gate, scale, shift)``, LayerNorm, per-sample mods."""
    from . import gated_residual_norm_modulate, gated_residual_norm_modulate_reference

    tol = _tolerance("norm.gated_residual_norm_modulate", dtype)
    for name in names or DEFAULT:
        (B, S, D), r, mod, _ = _inputs(name, dtype, device)
        u = torch.randn_like(r)
        args = (r, u, mod[:, 2:3], mod[:, 1:2], mod[:, 0:1])
        out, new = gated_residual_norm_modulate(*args)

        def ours(exact, args=args):
            return gated_residual_norm_modulate(*args, exact=exact)

        def eager(args=args):
            return gated_residual_norm_modulate_reference(*args)

        def check(ours=ours, eager=eager):
            (o, n), (ro, rn) = ours(None), eager()
            testing.assert_exact(n, rn)
            testing.assert_close(o, ro, atol=tol[0], rtol=tol[1])

        nbytes = bench.tensor_bytes(r, u, out, new) + 3 * D * mod.element_size()
        yield _case("gated_residual_norm_modulate", name, dtype, device, ours, eager, check, nbytes,
                    f"[{B}, {S}, {D}] per-sample")
        del r, u, mod, out, new
