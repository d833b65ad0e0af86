"""What the row-norm ops share: capabilities and contracts of their backends, the eager chain's
dtypes, validation and geometry (``describe_row_norm``), and the exact kernel's gates.

The ops: ``layer_norm``, ``rms_norm``, ``ln_modulate``, ``rms_modulate`` (each in its ``<op>.py``)
and ``gated_residual_norm_modulate``. Backends per op, in selection order: ``triton`` (contract
``close``: fp32 statistics, one rounding; ``_row_norm_triton``), ``triton_exact`` (contract
``exact``, trusted per call signature only after a ``BitExactFusionGate`` saw it match the eager
chain, otherwise the eager chain runs; ``_row_norm_exact_triton``; not for the gated op) and
``torch`` (the eager chain itself, exact; ``<op>_torch``).

Exact by default for the four norms (docs/design.md, "Numeric contracts", makes exact the default
wherever an exact kernel exists): the gate verified all 40 call signatures of
test_row_norm_exact_gpu.py on an H200 (D 1536/2432/3072/5120; per-sample, per-token, per-frame
modulation; plain, affine, fp32 weights), and the exact kernels run at 96-103% of copy
(layer_norm) and 83-92% (ln_modulate; the close kernel 94-100%)
(docs/benchmarks/layer_norm_bench_h200.json, ln_modulate_bench_h200.json). ``exact=False``
selects the close kernel.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    FP8_OUT,
    FP8_OUT_FOREIGN,
    FP8_TOL,
    MODULATION_LAYOUTS,
    Backend,
    BitExactFusionGate,
    Capabilities,
    Contract,
    InputDesc,
    ModLayout,
    RowGeometry,
    describe_rows,
    fp8_result_format,
    is_compiling,
    mod_layout,
)

DISTRIBUTION = "sgl-diffusion-norm"
BENCH = "benchmarks/row_norm_bench.py"

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    max_last_dim=65536,
    layouts=MODULATION_LAYOUTS,
    interpretable=True,
    requires=("triton",),
)
# FlyDSL (ROCm): D divisible by 8 (128-bit vectors, no masked tail), the Triton limit; the
# wave size of each target is the compile target's (see _row_norm_flydsl).
FLYDSL_CAPS = Capabilities(
    platforms=("hip",),
    min_arch=(("hip", "gfx942"), ("hip", "gfx950"), ("hip", "gfx1201")),
    max_last_dim=65536,
    last_dim_multiple=8,
    layouts=MODULATION_LAYOUTS,
    requires=("flydsl",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=MODULATION_LAYOUTS)
# FP8 results (``out_dtype=torch.float8_e4m3fn`` / ``float8_e4m3fnuz`` of ln_modulate and rms_modulate):
# describe tags the call with core's FP8_OUT / FP8_OUT_FOREIGN, so only the backends that write FP8 serve
# it: the close Triton kernel in the formats the device stores, the torch reference (chain, quantize) in both
TRITON_FP8_CAPS = dataclasses.replace(TRITON_CAPS, layouts=(*MODULATION_LAYOUTS, FP8_OUT))
TORCH_FP8_CAPS = dataclasses.replace(TORCH_CAPS, layouts=(*MODULATION_LAYOUTS, FP8_OUT, FP8_OUT_FOREIGN))
# The FP8 result against its reference (the eager chain in x's dtype, then quantize_fp8's rowwise
# quantization): the kernel rounds its fp32 result to x's dtype first, so the two see the same values
# wherever the close contract's rounding agrees; a value one ulp apart moves its code by at most one
# FP8 ulp (core's FP8_TOL: rtol 2**-3, three mantissa bits) and the row's scale by the same relative step.
FP8_SCALE_RTOL = 2.0**-7  # the row scales (fp32): one bf16 ulp of the row's amax

# The close kernels round once; the eager chain they are compared with rounds after every op
# (norm, `scale_offset + scale`, product, `+ shift`, final cast: up to 4 roundings of
# intermediates whose magnitude can exceed the result's when the shift cancels the product).
# Declared against the eager chain (the torch backend), for modulation of the magnitude of
# real adaLN outputs (|scale|, |shift| <~ 2); the tests also bound the close kernels against
# an fp64 evaluation of the same formula at one rounding.
PLAIN_TOL = {"bfloat16": (1e-2, 2**-7), "float16": (1e-3, 2**-10), "float32": (1e-5, 1e-5)}
MOD_TOL = {"bfloat16": (6e-2, 2**-6), "float16": (8e-3, 2**-9), "float32": (2e-5, 2e-5)}
# rms_norm: eager rounds the normalized value, then its product with the weight (two roundings)
RMS_TOL = {"bfloat16": (1e-2, 2**-6), "float16": (1e-3, 2**-9), "float32": (1e-5, 1e-5)}

TRITON_NOTE = ("fp32 statistics, one rounding; one program per row, whole row in registers up to 8192 columns, "
               "chunked two-pass above")
FLYDSL_NOTE = ("fp32 statistics, one rounding; one workgroup per row held in registers, 128-bit buffer accesses "
               "bounded by the row; compiled for gfx942/gfx950 (wave64) and gfx1201 (wave32), not yet run on AMD "
               "hardware, so below Triton until measured; its arithmetic is checked on the CPU by a numerical model")
FP8_NOTE = ("; out_dtype=FP8: the result rounded to x's dtype, then per-row amax, scale and the FP8 codes "
            "in the same pass (contract close to the chain then quantize_fp8, tolerances FP8_TOL)")
EXACT_NOTE = ("eager's rounding points and (where read from ATen) its reduction order; trusted per call signature "
              "only after a BitExactFusionGate saw it match eager, else eager runs")
TORCH_NOTE = "the eager chain itself (the definition of the exact contract; see _row_norm_torch.py)"
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("cpu",)
FLYDSL_TARGETS = ("gfx942", "gfx950", "gfx1201")

# public name -> (op id, norm, modulated)
OPS = {
    "layer_norm": ("norm.layer_norm", "layer", False),
    "rms_norm": ("norm.rms_norm", "rms", False),
    "ln_modulate": ("norm.ln_modulate", "layer", True),
    "rms_modulate": ("norm.rms_modulate", "rms", True),
}
# One gate per op: the exact Triton kernels are trusted per call signature only after matching eager.
GATES: dict[str, BitExactFusionGate] = {op: BitExactFusionGate(op) for op, _, _ in OPS.values()}


def exact_gate(op_id: str) -> BitExactFusionGate:
    """The ``BitExactFusionGate`` of an op's exact Triton kernel (inspect ``.states()``, ``.reset()``)."""
    return GATES[op_id]


def backends(name: str, tol: dict, close_aot: str) -> list[Backend]:
    """The three backends of one of the four norms. Plain norms (no scale or shift) take the
    tensors ``(x, weight, bias)`` and use the ``prepare_norm`` of the shared kernel modules."""
    modulated = OPS[name][2]
    prepare = "prepare" if modulated else "prepare_norm"
    return [
        Backend("triton", f"._row_norm_triton:{prepare}", TRITON_FP8_CAPS if modulated else TRITON_CAPS,
                Contract.close({**tol, **FP8_TOL} if modulated else tol), priority=10,
                notes=TRITON_NOTE + (FP8_NOTE if modulated else ""),
                aot=close_aot, executed_on=EXECUTED_TRITON),
        Backend("triton_exact", f"._row_norm_exact_triton:{prepare}", TRITON_CAPS, Contract.exact(), priority=5,
                notes=EXACT_NOTE, aot=f"aot_variants_{name}", executed_on=EXECUTED_TRITON),
        Backend("flydsl", f"._row_norm_flydsl:{prepare}", FLYDSL_CAPS, Contract.close(tol), priority=4,
                notes=FLYDSL_NOTE, aot=f"flydsl_variants_{name}", compiled_for=FLYDSL_TARGETS),
        Backend("torch", f".{name}_torch", TORCH_FP8_CAPS if modulated else TORCH_CAPS, Contract.exact(),
                notes=TORCH_NOTE, executed_on=EXECUTED_TORCH),
    ]


_HALF = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class Chain:
    """The dtype eager gives every intermediate of an op's chain (exact kernels round to them)."""

    p: torch.dtype  # LayerNorm affine parameters as eager uses them (x's dtype)
    c: torch.dtype  # rms: the normalized value is cast to this before `* weight`
    a: torch.dtype  # after `* weight`
    n: torch.dtype  # after `+ bias`: the norm's result
    t1: torch.dtype | None  # scale_offset + scale
    t2: torch.dtype | None  # n * t1
    t3: torch.dtype | None  # t2 + shift
    out: torch.dtype


def chain_dtypes(norm: str, x: torch.dtype, scale, shift, weight, bias) -> Chain:
    """The eager chain's dtypes for x's dtype and the other arguments (tensors or None)."""
    dt = lambda t: None if t is None else t.dtype  # noqa: E731
    w, b = dt(weight), dt(bias)
    if norm == "layer":
        p = c = a = n = x  # the affine parameters are cast to x's dtype (_row_norm_torch)
    else:
        p = torch.float32
        if w is not None:
            c = w if w in _HALF else torch.float32
            a = torch.promote_types(c, w)
        else:
            c = a = x
        n = a if b is None else torch.promote_types(a, b)
    if scale is None:
        return Chain(p, c, a, n, None, None, None, n)
    t1 = scale.dtype
    t2 = torch.promote_types(n, t1)
    t3 = t2 if shift is None else torch.promote_types(t2, shift.dtype)
    return Chain(p, c, a, n, t1, t2, t3, x)


@dataclass(frozen=True)
class Geometry:
    """Everything a backend needs beyond the tensors, computed once per call signature."""

    op: str
    norm: str  # "layer" | "rms"
    x: RowGeometry
    scale: ModLayout | None
    shift: ModLayout | None
    chain: Chain
    platform: str | None
    gate: BitExactFusionGate  # the op's gate (the exact backend runs behind it)
    fp8: str | None = None  # out_dtype's FP8 format ("float8_e4m3fn" | "float8_e4m3fnuz"), else None

    @property
    def fp8_dtype(self) -> torch.dtype | None:
        return None if self.fp8 is None else getattr(torch, self.fp8)


def param_problems(D: int, weight, bias, problems: list[str]) -> None:
    """Weight and bias must be contiguous ``[D]`` tensors (or None)."""
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (D,) or (D > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [D] = [{D}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")


def describe_row_norm(
    op: str,
    x: torch.Tensor,
    scale: torch.Tensor | None = None,
    shift: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> InputDesc:
    """Validate the arguments of one of the four norms (``op``: its public name) and describe them
    (``out_dtype``: an FP8 dtype for ln_modulate / rms_modulate's FP8 result, else None)."""
    op_id, norm, modulated = OPS[op]
    others = {"scale": scale, "shift": shift, "weight": weight, "bias": bias}
    desc, g = describe_rows("x", x, others, required=("scale",) if modulated else ())
    if g is None:
        return desc
    problems = desc.problems
    if not modulated and (scale is not None or shift is not None):
        problems.append(f"{op} takes no scale or shift")
    param_problems(g.D, weight, bias, problems)
    sc = mod_layout("scale", scale, g, problems) if scale is not None else None
    sh = mod_layout("shift", shift, g, problems) if shift is not None else None
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    fp8 = fp8_format(op, modulated, out_dtype, desc, problems)
    geom = None
    if not problems:
        geom = Geometry(op_id, norm, g, sc, sh, chain_dtypes(norm, x.dtype, scale, shift, weight, bias),
                        desc.platform, GATES[op_id], fp8)
    desc.info = {"geom": geom, "empty": x.numel() == 0}
    if fp8 is not None:  # exact=None means close for a quantized result (``exact=True`` runs the reference)
        desc.info["default_exact"] = False
    return desc


def fp8_format(op: str, modulated: bool, out_dtype, desc: InputDesc, problems: list[str]) -> str | None:
    """The FP8 format ``out_dtype`` asks for (tagging ``desc``), None for the default result."""
    if out_dtype is None:
        return None
    if not modulated:
        problems.append(f"out_dtype={out_dtype} is not supported: {op} writes its default dtype only (out_dtype=None)")
        return None
    fmt, tag = fp8_result_format(op, out_dtype, desc.platform, desc.arch, problems)
    if tag is not None:
        desc.layouts = (*desc.layouts, tag)
    return fmt


def empty_result(geom: Geometry):
    """The runner of an empty input: a new empty tensor of the result's shape and dtype (FP8: with its
    empty scales)."""
    shape, dtype = geom.x.shape, geom.chain.out
    if geom.fp8 is not None:
        fp8 = geom.fp8_dtype

        def run_fp8(x, *_):
            return (torch.empty(shape, dtype=fp8, device=x.device),
                    torch.empty((*shape[:-1], 1), dtype=torch.float32, device=x.device))

        return run_fp8

    def run(x, *_):
        return torch.empty(shape, dtype=dtype, device=x.device)

    return run


def fake_result(name: str, x, scale, shift, weight, bias):
    """The fake implementation's result (shape and dtype of the eager chain's)."""
    out = chain_dtypes(OPS[name][1], x.dtype, scale, shift, weight, bias).out
    return torch.empty(x.shape, dtype=out, device=x.device)


def fake_result_fp8(x, out_dtype):
    """The fake FP8 result: the codes ``[..., D]`` and the row scales ``[..., 1]`` fp32."""
    return x.new_empty(x.shape, dtype=out_dtype), x.new_empty((*x.shape[:-1], 1), dtype=torch.float32)


# the schema every custom op of the four norms shares (the plain norms pass scale = shift = None)
SCHEMA = ("(Tensor x, Tensor? scale, Tensor? shift, Tensor? weight, Tensor? bias, float eps, "
          "float scale_offset, str? backend=None, bool? exact=None) -> Tensor")
# ... and of the FP8 result of ln_modulate / rms_modulate (``out_dtype`` shapes the plan)
SCHEMA_FP8 = ("(Tensor x, Tensor? scale, Tensor? shift, Tensor? weight, Tensor? bias, ScalarType out_dtype, "
              "float eps, float scale_offset, str? backend=None, bool? exact=None) -> (Tensor, Tensor)")


def fp8_call(op, custom_op, tensors: tuple, out_dtype, eps, scale_offset, exact, backend):
    """``ln_modulate`` / ``rms_modulate`` with an FP8 ``out_dtype``: ``(codes, row scales)``. ``exact=None``
    means close here (the result is a quantization: the description says so, :func:`describe_row_norm`);
    ``exact=True`` runs the reference."""
    if is_compiling():
        return custom_op(*tensors, out_dtype, float(eps), float(scale_offset), backend, exact)
    return op.plan(tensors, backend, exact, (("out_dtype", out_dtype),))(*tensors, out_dtype, eps, scale_offset)
