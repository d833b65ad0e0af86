"""The eager reference of ``fp8_linear`` (the definition of its contract; its ``torch`` backend) and the
``scaled_mm`` backend (``torch._scaled_mm``, cuBLASLt).

Reference: ``acc = x_fp8.float() @ w_fp8.float().T`` (every product exact in fp32), ``y = acc *
x_scale * w_scale.T + bias`` in fp32, the epilogue in fp32 (``gelu(y, approximate="tanh")`` or
``residual + gate * y``), one rounding to ``out_dtype``. It sums in fp32 for either ``accumulate``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _scales(x_scale: torch.Tensor, w_scale: torch.Tensor, rows: int, N: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``([rows, 1], [1, N])`` fp32 views of the two scales (a single value broadcast)."""
    xs = x_scale.reshape(-1, 1) if x_scale.numel() != 1 else x_scale.reshape(1, 1)
    ws = w_scale.reshape(1, -1) if w_scale.numel() != 1 else w_scale.reshape(1, 1)
    return xs.expand(rows, 1), ws.expand(1, N)


def _epilogue(y: torch.Tensor, lead: tuple[int, ...], bias, epilogue, residual, gate, out_dtype) -> torch.Tensor:
    """fp32 ``y`` ``[rows, N]`` -> bias, epilogue, one rounding to ``out_dtype``, shaped ``[*lead, N]``."""
    N = y.shape[-1]
    if bias is not None:
        y = y + bias.float()
    y = y.reshape(*lead, N)
    if epilogue == "gelu_tanh":
        y = F.gelu(y, approximate="tanh")
    elif epilogue == "gated_residual":
        y = residual.float() + gate.float() * y
    return y.to(out_dtype)


def fp8_linear(x_fp8: torch.Tensor, x_scale: torch.Tensor, w_fp8: torch.Tensor, w_scale: torch.Tensor,
               bias: torch.Tensor | None = None, *, out_dtype: torch.dtype = torch.bfloat16,
               epilogue: str | None = None, residual: torch.Tensor | None = None,
               gate: torch.Tensor | None = None, accumulate: str = "fp32") -> torch.Tensor:
    N, K = w_fp8.shape
    lead = tuple(x_fp8.shape[:-1])
    x2 = x_fp8.reshape(-1, K).float()
    xs, ws = _scales(x_scale, w_scale, x2.shape[0], N)
    y = (x2 @ w_fp8.float().t()) * xs * ws
    return _epilogue(y, lead, bias, epilogue, residual, gate, out_dtype)


def prepare(geom, *tensors):
    """The ``torch`` backend's runner ``(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate) -> y``."""
    epilogue, out_dtype = geom.epilogue, geom.out_dtype

    def run(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate, *_):
        return fp8_linear(x_fp8, x_scale, w_fp8, w_scale, bias, out_dtype=out_dtype, epilogue=epilogue,
                          residual=residual, gate=gate)

    return run


def prepare_scaled_mm(geom, *tensors):
    """The ``scaled_mm`` backend's runner: ``torch._scaled_mm`` with row-wise scales (a single value is
    broadcast to the rows, ``[M, 1]`` and ``[1, N]`` fp32) to a bf16 product, a bf16 bias added in its
    epilogue before the one rounding (a bias of another dtype added after, in fp32, a second rounding);
    ``use_fast_accum`` for ``accumulate="fast"``. Plain products only (no epilogue: the layouts say so)."""
    M, N, K, lead, fast = geom.M, geom.N, geom.K, geom.lead, geom.fast_accum
    bias_in_gemm = tensors[4] is not None and tensors[4].dtype == torch.bfloat16

    def run(x_fp8, x_scale, w_fp8, w_scale, bias, residual, gate, *_):
        xs, ws = _scales(x_scale, w_scale, M, N)
        y = torch._scaled_mm(x_fp8.reshape(M, K), w_fp8.t(), bias=bias if bias_in_gemm else None,
                             scale_a=xs.contiguous(), scale_b=ws.contiguous(), out_dtype=torch.bfloat16,
                             use_fast_accum=fast)
        if bias is None or bias_in_gemm:
            return y.reshape(*lead, N)
        return _epilogue(y.float(), lead, bias, None, None, None, torch.bfloat16)

    return run
