"""``layer_norm``: ``F.layer_norm(x, (D,), weight, bias, eps)`` over the last dim.

Backends (``_row_norm.backends``): ``_row_norm_triton`` (close), ``_row_norm_exact_triton``
(exact, behind its gate) and ``layer_norm_torch`` (the eager chain). Also exports
``exact_gate``, the gates of the four norms' exact kernels.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, Op, UnsupportedInputError, is_compiling

from . import _row_norm as R
from ._row_norm import exact_gate as exact_gate

ALSO_EXPORTS = ("exact_gate",)  # the exact kernels' gates (inspect .states(), .reset())


def describe_layer_norm(x, weight=None, bias=None, **_) -> InputDesc:
    """Validate the arguments of ``layer_norm`` and describe them for backend selection."""
    return R.describe_row_norm("layer_norm", x, None, None, weight, bias)


LAYER_NORM = Op(
    "norm.layer_norm",
    distribution=R.DISTRIBUTION,
    summary="F.layer_norm(x, (D,), weight, bias, eps)",
    describe=describe_layer_norm,
    n_tensors=3,
    reference=".layer_norm_torch:layer_norm",
    backends=R.backends("layer_norm", R.PLAIN_TOL, "aot_variants_layer_norm"),
    default_exact=True,
    empty=R.empty_result,
    bench=f"{R.BENCH}:layer_norm_cases",
)


@LAYER_NORM.entry
def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``F.layer_norm(x, (D,), weight, bias, eps)`` over the last dim.

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    weight, bias: optional contiguous ``[D]``, any float dtype (the eager chain casts them to x's dtype).
    exact: ``None``/``True``: ``torch.equal`` to ``F.layer_norm`` on the same device (an exact
        kernel verified per call signature by a ``BitExactFusionGate``, else eager itself; on CUDA
        eager itself below 8192 rows where D is below 3584 and not a multiple of 512, where it measured
        as fast or faster);
        ``False``: fp32 statistics and one rounding (contract ``close``), the fastest path.
    backend: ``None`` (best for the inputs and ``exact``), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x, in x's dtype.
    """
    if is_compiling():
        return _custom_op(x, None, None, weight, bias, float(eps), 1.0, backend, exact)
    return LAYER_NORM.plan((x, weight, bias), backend, exact)(x, weight, bias, eps, 1.0)


can_use_layer_norm = LAYER_NORM.can_use
layer_norm_reference = LAYER_NORM.reference


def _fake(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
    if scale is not None or shift is not None:
        raise UnsupportedInputError("norm.layer_norm: unsupported input:\n  - layer_norm takes no scale or shift")
    LAYER_NORM.validate(x, weight, bias)
    return R.fake_result("layer_norm", x, None, None, weight, bias)


_custom_op = LAYER_NORM.custom_op("layer_norm", fake=_fake, schema=R.SCHEMA, tensors=(0, 3, 4))
