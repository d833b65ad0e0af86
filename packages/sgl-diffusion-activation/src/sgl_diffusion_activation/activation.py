"""The pointwise activations ``y = act(x + bias)``, one op each: ``silu``, ``gelu_tanh``, ``gelu``.

Backends: ``_activation_triton`` (contract ``close``: fp32 math, one rounding; one kernel for
the three, the activation from ``geom.act``) and ``activation_torch`` (the eager chains, the
definition of the ``exact`` contract).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, is_compiling

from . import _specs as S
from ._geometry import FP8_SCHEMA, describe_elementwise, empty_result, fp8_call, fp8_fake


def _backends(aot: str) -> list[Backend]:
    return [
        Backend("triton", "._activation_triton", S.TRITON_CAPS, S.UNARY_CLOSE, priority=10, notes=S.TRITON_NOTE,
                aot=aot, executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".activation_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ]


def _fakes(op: Op):
    """The fake implementations of an activation's two custom ops (functional and ``out=``)."""

    def fake(x, bias, backend, exact):
        op.validate(x, bias, None)
        return x.new_empty(x.shape, dtype=x.dtype if bias is None else torch.promote_types(x.dtype, bias.dtype))

    def fake_out(x, bias, out, backend, exact):
        op.validate(x, bias, out)

    return fake, fake_out


def _traced(functional, with_out, x, bias, out, backend, exact):
    """The call while ``torch.compile`` traces: the functional custom op, or the one that writes ``out``."""
    if out is None:
        return functional(x, bias, backend, exact)
    with_out(x, bias, out, backend, exact)
    return out


# ---------------------------------------------------------------------------------------------- silu


def describe_silu(x: torch.Tensor, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``silu`` and describe them for backend selection."""
    return describe_elementwise("silu", {"x": x}, bias=bias, out=out)


SILU = Op(
    "activation.silu",
    distribution=S.DISTRIBUTION,
    summary="silu(x + bias) = s * sigmoid(s)",
    describe=describe_silu,
    n_tensors=3,
    reference=".activation_torch:silu",
    backends=_backends("aot_silu"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:silu_cases",
)


@SILU.entry
def silu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
         backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``F.silu(x + bias)``: ``s * sigmoid(s)`` with ``s = x + bias``.

    x: ``[..., D]`` bf16 | fp16 | fp32, last dim contiguous, any leading strides (views).
    bias: optional ``[D]``, contiguous, any float dtype (the result has eager's promoted dtype).
    out: optional preallocated result (``x``'s shape and the result dtype; last dim contiguous,
        any row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: fp32 math, one
        rounding, tolerances in the registry) or ``"torch"`` (the eager chain, ``exact``).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_silu_op, _silu_out_op, x, bias, out, backend, exact)
    return SILU.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_silu = SILU.can_use
silu_reference = SILU.reference
_silu_fake, _silu_fake_out = _fakes(SILU)
_silu_op = SILU.custom_op(
    "silu", fake=_silu_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_silu_out_op = SILU.custom_op(
    "silu_out", fake=_silu_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)


# ----------------------------------------------------------------------------------------- gelu_tanh


def describe_gelu_tanh(x: torch.Tensor, bias: torch.Tensor | None = None,
                       out: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> InputDesc:
    """Validate the arguments of ``gelu_tanh`` and describe them for backend selection."""
    return describe_elementwise("gelu_tanh", {"x": x}, bias=bias, out=out, out_dtype=out_dtype, op="gelu_tanh")


GELU_TANH = Op(
    "activation.gelu_tanh",
    distribution=S.DISTRIBUTION,
    summary="gelu(x + bias, approximate='tanh')",
    describe=describe_gelu_tanh,
    n_tensors=3,
    reference=".activation_torch:gelu_tanh",
    backends=_backends("aot_gelu_tanh"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_tanh_cases",
)


@GELU_TANH.entry
def gelu_tanh(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
              out_dtype: torch.dtype | None = None, backend: str | None = None,
              exact: bool | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``F.gelu(x + bias, approximate='tanh')``: ``0.5 * s * (1 + tanh(sqrt(2/pi) * (s + 0.044715 * s**3)))``.

    x: ``[..., D]`` bf16 | fp16 | fp32, last dim contiguous, any leading strides (views).
    bias: optional ``[D]``, contiguous, any float dtype (the result has eager's promoted dtype).
    out: optional preallocated result (``x``'s shape and the result dtype; last dim contiguous,
        any row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: fp32 math, one
        rounding, tolerances in the registry) or ``"torch"`` (the eager chain, ``exact``).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if out_dtype is not None:
        return fp8_call(GELU_TANH, _gelu_tanh_fp8_op, x, bias, out, out_dtype, backend, exact)
    if is_compiling():
        return _traced(_gelu_tanh_op, _gelu_tanh_out_op, x, bias, out, backend, exact)
    return GELU_TANH.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_gelu_tanh = GELU_TANH.can_use
gelu_tanh_reference = GELU_TANH.reference
_gelu_tanh_fake, _gelu_tanh_fake_out = _fakes(GELU_TANH)
_gelu_tanh_op = GELU_TANH.custom_op(
    "gelu_tanh", fake=_gelu_tanh_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_gelu_tanh_out_op = GELU_TANH.custom_op(
    "gelu_tanh_out", fake=_gelu_tanh_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)
_gelu_tanh_fp8_op = GELU_TANH.custom_op(
    "gelu_tanh_fp8", fake=fp8_fake(GELU_TANH, packed=False), tensors=(0, 1, None), keyed=("out_dtype",),
    schema=FP8_SCHEMA,
)


# ---------------------------------------------------------------------------------------------- gelu


def describe_gelu(x: torch.Tensor, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``gelu`` and describe them for backend selection."""
    return describe_elementwise("gelu", {"x": x}, bias=bias, out=out)


GELU = Op(
    "activation.gelu",
    distribution=S.DISTRIBUTION,
    summary="gelu(x + bias) (erf form)",
    describe=describe_gelu,
    n_tensors=3,
    reference=".activation_torch:gelu",
    backends=_backends("aot_gelu"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:gelu_cases",
)


@GELU.entry
def gelu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
         backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    """``F.gelu(x + bias)``: ``0.5 * s * (1 + erf(s / sqrt(2)))``.

    x: ``[..., D]`` bf16 | fp16 | fp32, last dim contiguous, any leading strides (views).
    bias: optional ``[D]``, contiguous, any float dtype (the result has eager's promoted dtype).
    out: optional preallocated result (``x``'s shape and the result dtype; last dim contiguous,
        any row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: fp32 math, one
        rounding, tolerances in the registry) or ``"torch"`` (the eager chain, ``exact``).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _traced(_gelu_op, _gelu_out_op, x, bias, out, backend, exact)
    return GELU.plan((x, bias, out), backend, exact)(x, bias, out)


can_use_gelu = GELU.can_use
gelu_reference = GELU.reference
_gelu_fake, _gelu_fake_out = _fakes(GELU)
_gelu_op = GELU.custom_op(
    "gelu", fake=_gelu_fake, tensors=(0, 1, None),
    schema="(Tensor x, Tensor? bias, str? backend, bool? exact) -> Tensor",
)
_gelu_out_op = GELU.custom_op(
    "gelu_out", fake=_gelu_fake_out, mutates_args=("out",),
    schema="(Tensor x, Tensor? bias, Tensor(a!) out, str? backend, bool? exact) -> ()",
)
