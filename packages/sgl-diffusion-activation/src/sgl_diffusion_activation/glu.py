"""The GLU forms ``act(a) * b``, one op each: packed ``silu_and_mul``, ``gelu_tanh_and_mul``,
``gelu_and_mul`` and split ``silu_mul``, ``gelu_tanh_mul``, ``gelu_mul``.

Packed (``silu_and_mul(x)``): ``x`` is ``[..., 2*D]``, the output of one fused linear, with
``a = x[..., :D]`` and ``b = x[..., D:]``. Split (``silu_mul(a, b)``): two tensors.
Backends: ``_glu_triton`` (contract ``close``; one pair of kernels for the six, the activation
from ``geom.act``) and ``glu_torch`` (the eager chains, the definition of the ``exact`` contract).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, is_compiling

from . import _specs as S
from ._geometry import FP8_SCHEMA, describe_elementwise, empty_result, fp8_call, fp8_fake


def _backends(aot: str) -> list[Backend]:
    return [
        Backend("triton", "._glu_triton", S.TRITON_CAPS, S.GLU_CLOSE, priority=10, notes=S.TRITON_NOTE, aot=aot,
                executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".glu_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ]


def _describe_split(act: str, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None) -> InputDesc:
    if b is None:
        desc = describe_elementwise(act, {"a": a}, out=out)
        desc.problems.append("b is required (got None)")
        return desc
    desc = describe_elementwise(act, {"a": a, "b": b}, out=out)
    if not desc.problems and a.dtype != b.dtype:
        # eager rounds act(a) to a's dtype before a wider product: not a one-rounding fusion
        desc.problems.append(f"a ({a.dtype}) and b ({b.dtype}) must have one dtype")
        desc.info["geom"] = None
    return desc


def _fakes(op: Op, packed: bool):
    """The fake implementations of a GLU op's two custom ops (functional and ``out=``)."""

    def fake(first, second, backend, exact):
        op.validate(first, second, None)
        shape = list(first.shape)
        if packed:
            shape[-1] = shape[-1] // 2
        dtype = first.dtype if second is None else torch.promote_types(first.dtype, second.dtype)
        return first.new_empty(shape, dtype=dtype)

    def fake_out(first, second, out, backend, exact):
        op.validate(first, second, out)

    return fake, fake_out


def _traced(functional, with_out, first, second, out, backend, exact):
    """The call while ``torch.compile`` traces: the functional custom op, or the one that writes ``out``."""
    if out is None:
        return functional(first, second, backend, exact)
    with_out(first, second, out, backend, exact)
    return out


# ------------------------------------------------------------------------------------ silu_and_mul


def describe_silu_and_mul(x: torch.Tensor, bias: torch.Tensor | None = None,
                         out: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> InputDesc:
    """Validate the arguments of ``silu_and_mul`` and describe them for backend selection."""
    return describe_elementwise("silu", {"x": x}, bias=bias, out=out, packed=True, out_dtype=out_dtype,
                                op="silu_and_mul")


SILU_AND_MUL = Op(
    "activation.silu_and_mul",
    distribution=S.DISTRIBUTION,
    summary="silu(x[..., :D]) * x[..., D:] (packed SwiGLU, optional [2D] bias)",
    describe=describe_silu_and_mul,
    n_tensors=3,
    reference=".glu_torch:silu_and_mul",
    backends=_backends("aot_silu_and_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:silu_and_mul_cases",
)


@SILU_AND_MUL.entry
def silu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 out_dtype: torch.dtype | None = None, backend: str | None = None,
                 exact: bool | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``h = x + bias; F.silu(h[..., :D]) * h[..., D:]`` (SwiGLU).

    x: ``[..., 2*D]`` bf16 | fp16 | fp32 (the output of one fused linear), last dim contiguous,
        any leading strides; ``a = x[..., :D]``, ``b = x[..., D:]``.
    bias: optional ``[2*D]`` (the bias of that linear), contiguous, added to x first.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if out_dtype is not None:
        return fp8_call(SILU_AND_MUL, _silu_and_mul_fp8_op, x, bias, out, out_dtype, backend, exact)
    if is_compiling():
        return _traced(_silu_and_mul_op, _silu_and_mul_out_op, x, bias, out, backend, exact)
    return SILU_AND_MUL.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_silu_and_mul = SILU_AND_MUL.can_use
silu_and_mul_reference = SILU_AND_MUL.reference
_silu_and_mul_fake, _silu_and_mul_fake_out = _fakes(SILU_AND_MUL, packed=True)
_silu_and_mul_op = SILU_AND_MUL.custom_op(
    "silu_and_mul", fake=_silu_and_mul_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_silu_and_mul_out_op = SILU_AND_MUL.custom_op(
    "silu_and_mul_out", fake=_silu_and_mul_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)
_silu_and_mul_fp8_op = SILU_AND_MUL.custom_op(
    "silu_and_mul_fp8", fake=fp8_fake(SILU_AND_MUL, packed=True), tensors=(0, 1, None), keyed=("out_dtype",),
    schema=FP8_SCHEMA,
)


# ------------------------------------------------------------------------------- gelu_tanh_and_mul


def describe_gelu_tanh_and_mul(x: torch.Tensor, bias: torch.Tensor | None = None,
                              out: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> InputDesc:
    """Validate the arguments of ``gelu_tanh_and_mul`` and describe them for backend selection."""
    return describe_elementwise("gelu_tanh", {"x": x}, bias=bias, out=out, packed=True, out_dtype=out_dtype,
                                op="gelu_tanh_and_mul")


GELU_TANH_AND_MUL = Op(
    "activation.gelu_tanh_and_mul",
    distribution=S.DISTRIBUTION,
    summary="gelu_tanh(x[..., :D]) * x[..., D:] (packed GeGLU, optional [2D] bias)",
    describe=describe_gelu_tanh_and_mul,
    n_tensors=3,
    reference=".glu_torch:gelu_tanh_and_mul",
    backends=_backends("aot_gelu_tanh_and_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_tanh_and_mul_cases",
)


@GELU_TANH_AND_MUL.entry
def gelu_tanh_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                      out_dtype: torch.dtype | None = None, backend: str | None = None,
                      exact: bool | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``h = x + bias; F.gelu(h[..., :D], approximate='tanh') * h[..., D:]`` (GeGLU).

    x: ``[..., 2*D]`` bf16 | fp16 | fp32 (the output of one fused linear), last dim contiguous,
        any leading strides; ``a = x[..., :D]``, ``b = x[..., D:]``.
    bias: optional ``[2*D]`` (the bias of that linear), contiguous, added to x first.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if out_dtype is not None:
        return fp8_call(GELU_TANH_AND_MUL, _gelu_tanh_and_mul_fp8_op, x, bias, out, out_dtype, backend, exact)
    if is_compiling():
        return _traced(_gelu_tanh_and_mul_op, _gelu_tanh_and_mul_out_op, x, bias, out, backend, exact)
    return GELU_TANH_AND_MUL.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_gelu_tanh_and_mul = GELU_TANH_AND_MUL.can_use
gelu_tanh_and_mul_reference = GELU_TANH_AND_MUL.reference
_gelu_tanh_and_mul_fake, _gelu_tanh_and_mul_fake_out = _fakes(GELU_TANH_AND_MUL, packed=True)
_gelu_tanh_and_mul_op = GELU_TANH_AND_MUL.custom_op(
    "gelu_tanh_and_mul", fake=_gelu_tanh_and_mul_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_gelu_tanh_and_mul_out_op = GELU_TANH_AND_MUL.custom_op(
    "gelu_tanh_and_mul_out", fake=_gelu_tanh_and_mul_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)
_gelu_tanh_and_mul_fp8_op = GELU_TANH_AND_MUL.custom_op(
    "gelu_tanh_and_mul_fp8", fake=fp8_fake(GELU_TANH_AND_MUL, packed=True), tensors=(0, 1, None), keyed=("out_dtype",),
    schema=FP8_SCHEMA,
)


# ------------------------------------------------------------------------------------ gelu_and_mul


def describe_gelu_and_mul(x: torch.Tensor, bias: torch.Tensor | None = None,
                         out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``gelu_and_mul`` and describe them for backend selection."""
    return describe_elementwise("gelu", {"x": x}, bias=bias, out=out, packed=True)


GELU_AND_MUL = Op(
    "activation.gelu_and_mul",
    distribution=S.DISTRIBUTION,
    summary="gelu(x[..., :D]) * x[..., D:] (packed GeGLU, erf form, optional [2D] bias)",
    describe=describe_gelu_and_mul,
    n_tensors=3,
    reference=".glu_torch:gelu_and_mul",
    backends=_backends("aot_gelu_and_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_and_mul_cases",
)


@GELU_AND_MUL.entry
def gelu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``h = x + bias; F.gelu(h[..., :D]) * h[..., D:]`` (GeGLU, erf form).

    x: ``[..., 2*D]`` bf16 | fp16 | fp32 (the output of one fused linear), last dim contiguous,
        any leading strides; ``a = x[..., :D]``, ``b = x[..., D:]``.
    bias: optional ``[2*D]`` (the bias of that linear), contiguous, added to x first.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_gelu_and_mul_op, _gelu_and_mul_out_op, x, bias, out, backend, exact)
    return GELU_AND_MUL.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_gelu_and_mul = GELU_AND_MUL.can_use
gelu_and_mul_reference = GELU_AND_MUL.reference
_gelu_and_mul_fake, _gelu_and_mul_fake_out = _fakes(GELU_AND_MUL, packed=True)
_gelu_and_mul_op = GELU_AND_MUL.custom_op(
    "gelu_and_mul", fake=_gelu_and_mul_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_gelu_and_mul_out_op = GELU_AND_MUL.custom_op(
    "gelu_and_mul_out", fake=_gelu_and_mul_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)


# ---------------------------------------------------------------------------------------- silu_mul


def describe_silu_mul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``silu_mul`` and describe them for backend selection."""
    return _describe_split("silu", a, b, out)


SILU_MUL = Op(
    "activation.silu_mul",
    distribution=S.DISTRIBUTION,
    summary="silu(a) * b",
    describe=describe_silu_mul,
    n_tensors=3,
    reference=".glu_torch:silu_mul",
    backends=_backends("aot_silu_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:silu_mul_cases",
)


@SILU_MUL.entry
def silu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
             backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``F.silu(a) * b``.

    a, b: ``[..., D]``, same shape (no broadcasting) and dtype, bf16 | fp16 | fp32, last dim
        contiguous, each with its own leading strides.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_silu_mul_op, _silu_mul_out_op, a, b, out, backend, exact)
    return SILU_MUL.plan((a, b, out), backend, exact)(a, b, out)


can_use_silu_mul = SILU_MUL.can_use
silu_mul_reference = SILU_MUL.reference
_silu_mul_fake, _silu_mul_fake_out = _fakes(SILU_MUL, packed=False)
_silu_mul_op = SILU_MUL.custom_op(
    "silu_mul", fake=_silu_mul_fake, tensors=(0, 1, None),
    schema="(Tensor a, Tensor b, str? backend, bool? exact) -> Tensor",
)
_silu_mul_out_op = SILU_MUL.custom_op(
    "silu_mul_out", fake=_silu_mul_fake_out, mutates_args=("out",),
    schema="(Tensor a, Tensor b, Tensor(a!) out, str? backend, bool? exact) -> ()",
)


# ----------------------------------------------------------------------------------- gelu_tanh_mul


def describe_gelu_tanh_mul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``gelu_tanh_mul`` and describe them for backend selection."""
    return _describe_split("gelu_tanh", a, b, out)


GELU_TANH_MUL = Op(
    "activation.gelu_tanh_mul",
    distribution=S.DISTRIBUTION,
    summary="gelu_tanh(a) * b",
    describe=describe_gelu_tanh_mul,
    n_tensors=3,
    reference=".glu_torch:gelu_tanh_mul",
    backends=_backends("aot_gelu_tanh_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_tanh_mul_cases",
)


@GELU_TANH_MUL.entry
def gelu_tanh_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
                  backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``F.gelu(a, approximate='tanh') * b``.

    a, b: ``[..., D]``, same shape (no broadcasting) and dtype, bf16 | fp16 | fp32, last dim
        contiguous, each with its own leading strides.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_gelu_tanh_mul_op, _gelu_tanh_mul_out_op, a, b, out, backend, exact)
    return GELU_TANH_MUL.plan((a, b, out), backend, exact)(a, b, out)


can_use_gelu_tanh_mul = GELU_TANH_MUL.can_use
gelu_tanh_mul_reference = GELU_TANH_MUL.reference
_gelu_tanh_mul_fake, _gelu_tanh_mul_fake_out = _fakes(GELU_TANH_MUL, packed=False)
_gelu_tanh_mul_op = GELU_TANH_MUL.custom_op(
    "gelu_tanh_mul", fake=_gelu_tanh_mul_fake, tensors=(0, 1, None),
    schema="(Tensor a, Tensor b, str? backend, bool? exact) -> Tensor",
)
_gelu_tanh_mul_out_op = GELU_TANH_MUL.custom_op(
    "gelu_tanh_mul_out", fake=_gelu_tanh_mul_fake_out, mutates_args=("out",),
    schema="(Tensor a, Tensor b, Tensor(a!) out, str? backend, bool? exact) -> ()",
)


# ---------------------------------------------------------------------------------------- gelu_mul


def describe_gelu_mul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``gelu_mul`` and describe them for backend selection."""
    return _describe_split("gelu", a, b, out)


GELU_MUL = Op(
    "activation.gelu_mul",
    distribution=S.DISTRIBUTION,
    summary="gelu(a) * b (erf form)",
    describe=describe_gelu_mul,
    n_tensors=3,
    reference=".glu_torch:gelu_mul",
    backends=_backends("aot_gelu_mul"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_mul_cases",
)


@GELU_MUL.entry
def gelu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
             backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``F.gelu(a) * b``.

    a, b: ``[..., D]``, same shape (no broadcasting) and dtype, bf16 | fp16 | fp32, last dim
        contiguous, each with its own leading strides.
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_gelu_mul_op, _gelu_mul_out_op, a, b, out, backend, exact)
    return GELU_MUL.plan((a, b, out), backend, exact)(a, b, out)


can_use_gelu_mul = GELU_MUL.can_use
gelu_mul_reference = GELU_MUL.reference
_gelu_mul_fake, _gelu_mul_fake_out = _fakes(GELU_MUL, packed=False)
_gelu_mul_op = GELU_MUL.custom_op(
    "gelu_mul", fake=_gelu_mul_fake, tensors=(0, 1, None),
    schema="(Tensor a, Tensor b, str? backend, bool? exact) -> Tensor",
)
_gelu_mul_out_op = GELU_MUL.custom_op(
    "gelu_mul_out", fake=_gelu_mul_fake_out, mutates_args=("out",),
    schema="(Tensor a, Tensor b, Tensor(a!) out, str? backend, bool? exact) -> ()",
)
