"""Benchmark cases of the row-norm family (``layer_norm``, ``rms_norm``, ``ln_modulate``,
``rms_modulate``, ``gated_residual_norm_modulate``) at production shapes (docs/design.md).

Providers: ``sgl_diffusion`` (the public op with its default, ``exact=None``: the exact
kernel behind its gate for the norms, so eager itself for a signature the gate sent back;
the close kernel for the gated op), ``sgl_diffusion(close)`` (``exact=False``: the close
kernel), ``sgl_diffusion(exact kernel)`` (the norms' exact kernel alone, without its gate:
its speed whatever the gate decided), ``sgl_diffusion(flydsl)`` (``backend="flydsl"``, on ROCm
with ``flydsl`` installed), ``eager`` (the eager chain) and ``torch.compile`` of
that chain specialized to the shape; ``ln_modulate`` adds ``torch.compile(dynamic)``
(``dynamic=True``: what one compiled function gets once it has seen a second shape).

Bytes (the minimum a fused kernel moves): x read once and the result written once, plus
the modulation tensors (per sample: ``2 * D`` elements) and the weight. The gated op reads
residual and update and writes out and the new residual: four full tensors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import torch
import torch.nn.functional as F

from sgl_diffusion_core import bench, quantize_fp8_torch, testing

# name -> (B, S, D)
SHAPES: dict[str, tuple[int, int, int]] = {
    "flux": (1, 4608, 3072),
    "sd3": (2, 4429, 2432),
    "wan": (1, 75600, 5120),
    "hunyuan": (1, 118800, 3072),
}
DEFAULT = ("flux", "wan", "hunyuan")
# the widths of DiTs and their text encoders (PixArt / Sana-0.6B 1152, SD3-medium 1536, CogVideoX-2B 1920,
# LTX-Video 2048, Sana-1.6B 2240, Lumina-2 2304, SD3.5-Large 2432, HiDream 2560, FLUX / Qwen-Image /
# HunyuanVideo 3072, 3840, 4096, Wan-14B 5120, 6144) at batch 1 and 2 (classifier-free guidance), an image's
# 4096 tokens and a video's 32760: ``d<D>-b<B>-s<S>``, per-sample modulation; the group ``widths`` names all
WIDTHS = (1152, 1536, 1920, 2048, 2240, 2304, 2432, 2560, 3072, 3840, 4096, 5120, 6144)
WIDTH_SHAPES = {f"d{D}-b{B}-s{S}": (B, S, D) for D in WIDTHS for B in (1, 2) for S in (4096, 32760)}
SHAPES.update(WIDTH_SHAPES)
GROUPS = {"widths": tuple(WIDTH_SHAPES)}


def _names(names, default) -> list[str]:
    """The case names asked for, a group (``widths``) expanded; ``default`` without any."""
    out: list[str] = []
    for n in names or default:
        out += GROUPS.get(n, (n,))
    return out
# ln_modulate: name -> (B, S, D, modulation layout)
LN_SHAPES: dict[str, tuple[int, int, int, str]] = {
    "flux": (1, 4608, 3072, "per-sample"),
    "wan": (1, 75600, 5120, "per-sample"),
    "hunyuan": (1, 118800, 3072, "per-sample"),
    "wan-per-token": (1, 75600, 5120, "per-token"),
    "wan-per-frame": (1, 75600, 5120, "per-frame"),
    # Wan's own chain: FP32LayerNorm on bf16 x, fp32 modulation, result cast back to bf16
    "wan-fp32mod": (1, 75600, 5120, "per-sample-fp32"),
    **{name: (*shape, "per-sample") for name, shape in WIDTH_SHAPES.items()},
}
# ln_modulate with an FP8 result (out_dtype: the device's FP8 format) at these shapes
LN_FP8 = {"flux-fp8": "flux", "wan-fp8": "wan"}


def _tolerance(op_id: str, dtype: torch.dtype):
    from sgl_diffusion_core import REGISTRY

    return next(s for s in REGISTRY.specs(op_id) if s.backend == "triton").contract.tolerance(dtype)


def exact_kernel(op_id: str, args: tuple, kw: dict, tensors: tuple):
    """A zero-argument callable launching the exact kernel alone (no gate), or None where it cannot run.
    ``tensors``: ``(x, scale, shift, weight, bias)``."""
    from sgl_diffusion_core import UnsupportedInputError, describe, select_impl

    try:
        select_impl(op_id, describe(op_id, *args, **kw), backend="triton_exact")
    except UnsupportedInputError:
        return None
    K = testing.backend_module(op_id, "triton_exact")

    fused = K.prepare_kernel(testing.geometry(op_id, *args, **kw), *tensors)
    return lambda: fused(*tensors, 1e-6, 1.0)


def _inputs(name: str, dtype: torch.dtype, device: torch.device):
    """Random bf16 rows of the case ``name``: a named shape, or ``d<D>-b<B>-s<S>`` at any size."""
    sized = re.fullmatch(r"d(\d+)-b(\d+)-s(\d+)", name)
    if name not in SHAPES and sized is None:
        raise ValueError(f"unknown row-norm bench case {name!r}; known: {', '.join(SHAPES)}, the group 'widths' "
                         "and d<D>-b<B>-s<S>")
    B, S, D = SHAPES[name] if name in SHAPES else (int(sized[2]), int(sized[3]), int(sized[1]))
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(B, S, D, device=device, dtype=dtype, generator=g)
    mod = torch.randn(B, 6, D, device=device, dtype=dtype, generator=g) * 0.5  # adaLN-Zero chunks
    w = 1 + 0.1 * torch.randn(D, device=device, dtype=dtype, generator=g)
    return (B, S, D), x, mod, w


def flydsl_provider(fn, args: tuple, kw: dict):
    """The public op forced to its FlyDSL backend (``exact=False``), or None where it cannot serve
    (not ROCm, flydsl not installed, an input it refuses)."""
    from sgl_diffusion_core import explain

    if explain(fn, *args, backend="flydsl", exact=False, **kw).chosen != "flydsl":
        return None
    return lambda: fn(*args, exact=False, backend="flydsl", **kw)


def _case(op_name, name, dtype, ours, eager, check, nbytes, shape, kernel=None, fly=None):
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
    if fly is not None:
        providers["sgl_diffusion(flydsl)"] = fly
    return bench.BenchCase(
        name=name,
        shape=shape,
        dtype=str(dtype).removeprefix("torch."),
        bytes=nbytes,
        providers=providers,
        check=check,
        extra={"op": op_name},
    )


def _norm_args(op_name: str, x, mod, w) -> tuple[tuple, dict, tuple]:
    """The op's arguments, keywords and the kernel's ``(x, scale, shift, weight, bias)``: ``layer_norm`` /
    ``rms_norm`` with a weight, ``rms_modulate`` per sample with a weight."""
    if op_name == "rms_modulate":
        sc, sh = mod[:, 1:2], mod[:, 0:1]
        return (x, sc, sh), {"weight": w}, (x, sc, sh, w, None)
    return (x, w), {}, (x, None, None, w, None)


def _norm_bytes(op_name: str, x, out, mod, w) -> int:
    """x read and the result written once, the weight, and ``rms_modulate``'s per-sample scale and shift."""
    return bench.tensor_bytes(x, out, w) + (2 * x.shape[-1] * mod.element_size() if op_name == "rms_modulate" else 0)


def _norm_cases(op_name: str, device, dtype, names) -> Iterator[bench.BenchCase]:
    import sgl_diffusion_norm as norm

    fn, ref = getattr(norm, op_name), getattr(norm, f"{op_name}_reference")
    op_id = f"norm.{op_name}"
    spec_tol = _tolerance(op_id, dtype)
    for name in _names(names, DEFAULT):
        (B, S, D), x, mod, w = _inputs(name, dtype, device)
        args, kw, tensors = _norm_args(op_name, x, mod, w)
        out = fn(*args, **kw)

        def ours(exact, fn=fn, args=args, kw=kw):
            return fn(*args, exact=exact, **kw)

        def eager(ref=ref, args=args, kw=kw):
            return ref(*args, **kw)

        def check(ours=ours, eager=eager):
            testing.assert_exact(ours(True), eager())  # gate: verified kernel or eager, bits equal
            testing.assert_close(ours(False), eager(), atol=spec_tol[0], rtol=spec_tol[1])

        nbytes = _norm_bytes(op_name, x, out, mod, w)
        yield _case(
            op_name,
            name,
            dtype,
            ours,
            eager,
            check,
            nbytes,
            f"[{B}, {S}, {D}] per-sample",
            kernel=exact_kernel(op_id, args, kw, tensors),
            fly=flydsl_provider(fn, args, kw),
        )
        del x, mod, out


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
    from sgl_diffusion_norm import gated_residual_norm_modulate, gated_residual_norm_modulate_reference

    tol = _tolerance("norm.gated_residual_norm_modulate", dtype)
    for name in _names(names, DEFAULT):
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
        yield _case(
            "gated_residual_norm_modulate",
            name,
            dtype,
            ours,
            eager,
            check,
            nbytes,
            f"[{B}, {S}, {D}] per-sample",
            fly=flydsl_provider(gated_residual_norm_modulate, args, {}),
        )
        del r, u, mod, out, new


# --- ln_modulate -----------------------------------------------------------------------------------


def _ln_eager(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, L: int) -> torch.Tensor:
    """The diffusers chain ``F.layer_norm(x) * (1 + scale) + shift`` in the storage dtype."""
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
        scale, shift = proj[..., D : 2 * D], proj[..., :D]
    else:  # per-frame, 21 latent frames
        Fr = 21
        L = S // Fr
        scale = torch.randn(B, Fr, 1, D, device=device, dtype=dtype, generator=g) * 0.1
        shift = torch.randn(B, Fr, 1, D, device=device, dtype=dtype, generator=g) * 0.1
    return x, scale, shift, L


def ln_modulate_cases(
    device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None
) -> Iterator[bench.BenchCase]:
    """``ln_modulate(x, scale, shift)`` in the layouts of LN_SHAPES."""
    from sgl_diffusion_norm import ln_modulate, ln_modulate_reference

    for name in _names(names, (*DEFAULT, *LN_FP8)):
        if name in LN_FP8:
            yield _ln_fp8_case(name, device, dtype)
            continue
        # fresh compiled functions per case, and dynamo's caches cleared: its recompile limit
        # counts every compiled wrapper of one code object, and past it dynamo silently runs eager
        torch._dynamo.reset()
        compiled = torch.compile(_ln_eager, dynamic=False)
        # the width sweep compares with the static build alone (one dynamic build per case doubles its time)
        compiled_dyn = None if name in WIDTH_SHAPES else torch.compile(_ln_eager, dynamic=True)
        if name not in LN_SHAPES:
            raise ValueError(f"unknown ln_modulate bench case {name!r}; known: {', '.join(LN_SHAPES)}")
        B, S, D, layout = LN_SHAPES[name]
        x, scale, shift, L = make_inputs(B, S, D, layout, dtype, device)
        out = ln_modulate(x, scale, shift)

        def check(x=x, scale=scale, shift=shift):
            ref = ln_modulate_reference(x, scale, shift)
            testing.assert_exact(ln_modulate(x, scale, shift), ref)  # default: gated kernel or eager, same bits
            atol, rtol = _tolerance("norm.ln_modulate", x.dtype)
            testing.assert_close(ln_modulate(x, scale, shift, exact=False), ref, atol=atol, rtol=rtol)

        kernel = exact_kernel("norm.ln_modulate", (x, scale, shift), {}, (x, scale, shift, None, None))
        fly = flydsl_provider(ln_modulate, (x, scale, shift), {})
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
                **({"sgl_diffusion(flydsl)": fly} if fly is not None else {}),
                "eager": lambda x=x, a=scale, b=shift, L=L: _ln_eager(x, a, b, L),
                "torch.compile": lambda x=x, a=scale, b=shift, L=L, f=compiled: f(x, a, b, L),
                **({"torch.compile(dynamic)": lambda x=x, a=scale, b=shift, L=L, f=compiled_dyn: f(x, a, b, L)}
                   if compiled_dyn is not None else {}),
            },
            check=check,
            extra={"layout": layout},
        )
        del x, scale, shift, out


def _ln_fp8_eager(x, scale, shift, L, fp8):
    """The bf16 chain, then a row-wise quantization in torch: what a pipeline runs without the fused op."""
    return quantize_fp8_torch(_ln_eager(x, scale, shift, L), fp8, "row")


def _ln_fp8_case(name: str, device: torch.device, dtype: torch.dtype) -> bench.BenchCase:
    """``ln_modulate(x, scale, shift, out_dtype=FP8)`` against the bf16 chain followed by a row-wise
    quantization (eager and compiled); bytes: x and the modulation read, FP8 codes and scales written."""
    from sgl_diffusion_core import tensor_platform
    from sgl_diffusion_norm import ln_modulate, ln_modulate_reference

    hip = tensor_platform(device) == "hip" and "gfx942" in torch.cuda.get_device_properties(device).gcnArchName
    fp8 = torch.float8_e4m3fnuz if hip else torch.float8_e4m3fn
    torch._dynamo.reset()
    compiled = torch.compile(_ln_fp8_eager, dynamic=False)
    B, S, D, layout = LN_SHAPES[LN_FP8[name]]
    x, scale, shift, L = make_inputs(B, S, D, layout, dtype, device)
    q, qs = ln_modulate(x, scale, shift, out_dtype=fp8)

    def check(x=x, scale=scale, shift=shift):
        rq, rs = ln_modulate_reference(x, scale, shift, out_dtype=fp8)
        got_q, got_s = ln_modulate(x, scale, shift, out_dtype=fp8)
        testing.assert_fp8_close(got_q, got_s, rq, rs, tolerance=_tolerance("norm.ln_modulate", x.dtype),
                                 fp8_tolerance=_tolerance("norm.ln_modulate", fp8))

    nbytes = bench.tensor_bytes(x, q, qs) + 2 * D * scale.element_size()
    return bench.BenchCase(
        name=name, shape=f"[{B}, {S}, {D}] {layout} -> {str(fp8).removeprefix('torch.')}",
        dtype=str(dtype).removeprefix("torch."), bytes=nbytes,
        providers={
            "sgl_diffusion": lambda x=x, a=scale, b=shift: ln_modulate(x, a, b, out_dtype=fp8),
            "eager": lambda x=x, a=scale, b=shift: _ln_fp8_eager(x, a, b, L, fp8),
            "torch.compile": lambda x=x, a=scale, b=shift, f=compiled: f(x, a, b, L, fp8),
        },
        check=check, extra={"layout": layout, "out_dtype": str(fp8).removeprefix("torch.")},
    )


def ln_modulate_tune(
    device: torch.device, dtype: torch.dtype = torch.bfloat16, names: list[str] | None = None, progress=print
) -> list[dict]:
    """Sweep launch configurations of the close kernel at the ln_modulate shapes (GPU tuning aid of
    the core row rule, ``sgl_diffusion_core.launch.RowConfig``). One row per (case, block, chunks,
    num_warps, num_stages, max_registers) with time and % of a same-run copy."""
    from sgl_diffusion_core import RowConfig

    K = testing.backend_module("norm.rms_norm", "triton")

    rows = []
    for name in names or DEFAULT:
        B, S, D, layout = LN_SHAPES[name]
        x, scale, shift, L = make_inputs(B, S, D, layout, dtype, device)
        geom = testing.geometry("norm.ln_modulate", x, scale, shift)
        nbytes = bench.tensor_bytes(x, x)
        _, copy_gbps = bench.copy_bandwidth(nbytes, device)
        for block in [b for b in (512, 1024, 2048, 4096, 8192) if D // 16 <= b <= 2 * D]:
            chunks = -(-D // block)
            for warps in (1, 2, 4, 8):
                if block // (32 * warps) < 2:
                    continue
                for stages, max_regs in ((1, None), (2, None), (1, 80), (1, 128)) if chunks > 1 else ((1, None),):
                    cfg = RowConfig(
                        block=block, chunks=chunks, num_warps=warps, num_stages=stages, max_registers=max_regs
                    )
                    try:
                        run = K.prepare(geom, x, scale, shift, None, None, config=cfg)
                        t = bench.time_gpu(
                            lambda run=run, x=x, a=scale, b=shift: run(x, a, b, None, None, 1e-6, 1.0), device, rep=40
                        )
                    except Exception as exc:  # a config the compiler rejects (e.g. out of resources)
                        progress(f"{name} {cfg}: failed {type(exc).__name__}")
                        continue
                    gbps = t.gbps(nbytes)
                    rows.append(
                        {
                            "case": name,
                            "D": D,
                            "block": block,
                            "chunks": chunks,
                            "num_warps": warps,
                            "num_stages": stages,
                            "max_registers": max_regs,
                            "median_us": t.median_ms * 1e3,
                            "gbps": gbps,
                            "frac_of_copy": gbps / copy_gbps,
                        }
                    )
                    progress(
                        f"{name} D={D} block={block} chunks={chunks} warps={warps} stages={stages} "
                        f"maxnreg={max_regs}: {t.median_ms * 1e3:.1f} us {100 * gbps / copy_gbps:.1f}% of copy"
                    )
        del x, scale, shift
    return rows


def exact_tune(op_name: str, device: torch.device, tunings: list[dict], names: list[str] | None = None,
               dtype: torch.dtype = torch.bfloat16, rounds: int = 3, rep: int = 60, progress=print,
               compiled: bool = False) -> list[dict]:
    """Sweep build choices of the exact kernel (``TUNABLE`` of ``_row_norm_exact_triton_rule``) at the
    row-norm shapes of ``layer_norm``, ``rms_norm`` or ``rms_modulate`` (GPU tuning aid): the rule's
    own build first, then each of ``tunings``, taking turns over ``rounds`` (``bench.sweep``). Each
    build's first output is compared with eager: a row's ``note`` says where the bits differ.
    ``compiled``: ``torch.compile`` of the eager chain takes its turn too (config ``'torch.compile'``;
    its note says whether its bits match)."""
    import sgl_diffusion_norm as norm

    if op_name not in ("layer_norm", "rms_norm", "rms_modulate"):
        raise ValueError(f"exact_tune sweeps layer_norm, rms_norm or rms_modulate, not {op_name!r}")
    op_id, ref = f"norm.{op_name}", getattr(norm, f"{op_name}_reference")
    K = testing.backend_module(op_id, "triton_exact")
    rows: list[dict] = []
    for name in _names(names, DEFAULT):
        _, x, mod, w = _inputs(name, dtype, device)
        args, kw, tensors = _norm_args(op_name, x, mod, w)
        geom, expected = testing.geometry(op_id, *args, **kw), ref(*args, **kw)

        def run_for(tuning, geom=geom, tensors=tensors, args=args, kw=kw):
            if tuning == "torch.compile":
                chain = torch.compile(ref)
                return lambda: chain(*args, **kw)
            fused = K.prepare_kernel(geom, *tensors, tuning=tuning)
            return lambda: fused(*tensors, 1e-6, 1.0)

        nbytes = _norm_bytes(op_name, x, expected, mod, w)
        configs = [{}, *tunings] + (["torch.compile"] if compiled else [])
        rows += bench.sweep(name, configs, run_for, nbytes, device, rep=rep, rounds=rounds, progress=progress,
                            check=lambda out, e=expected: None if torch.equal(out, e) else "differs from eager")
        del x, mod, w, expected
    return rows


def _main(argv: list[str] | None = None) -> int:
    """``python row_norm_bench.py exact-tune --op rms_norm --cases d5120-b1-s4096 --tuning '{"WARPS": 2}'
    [--tuning ...] [--rounds R] [--out sweep.json]``: :func:`exact_tune` on this machine's GPU."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="row_norm_bench.py")
    sub = ap.add_subparsers(dest="command", required=True)
    tune = sub.add_parser("exact-tune", help="sweep build choices of the exact row-norm kernel")
    tune.add_argument("--op", required=True, choices=("layer_norm", "rms_norm", "rms_modulate"))
    tune.add_argument("--cases", default=None,
                      help="comma-separated case names (d<D>-b<B>-s<S> for any size) or groups (default: flux, "
                           "wan, hunyuan)")
    tune.add_argument("--tuning", action="append", default=[], type=json.loads, help="a JSON dict of build choices")
    tune.add_argument("--rounds", type=int, default=3)
    tune.add_argument("--rep", type=int, default=60)
    tune.add_argument("--compile", action="store_true", help="time torch.compile of the eager chain beside them")
    tune.add_argument("--out", default=None, help="write {env, what, rows} as JSON after each case")
    args = ap.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    record = {"env": bench.environment(device), "rows": [],
              "what": f"exact {args.op} kernel: the rule's build ('default') and build choices, {args.rounds} "
                      f"rounds of {args.rep} calls in turn, % of the fastest same-run copy"}
    for name in _names([c for c in (args.cases or "").split(",") if c] or None, DEFAULT):
        record["rows"] += exact_tune(args.op, device, args.tuning, [name], rounds=args.rounds, rep=args.rep,
                                     compiled=args.compile)
        if args.out:  # after each case: a run cut short keeps what it finished
            with open(args.out, "w") as f:
                json.dump(record, f, indent=1)
    for line in bench.sweep_summary(record["rows"]):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
