"""``attention`` on PyTorch's own SDPA kernels: cuDNN, flash and memory-efficient (CUDA only).

Each backend calls its kernel's own ATen op (``aten._scaled_dot_product_{cudnn,flash,efficient}_attention``),
what ``torch.nn.functional.scaled_dot_product_attention`` dispatches to when that kernel is chosen, with
the arguments it passes for an inference call (no mask, no dropout, not causal, the log-sum-exp only where
it is asked for), on ``[B, H, S, Dh]`` views of the inputs (a bshd input is passed as its transposed view:
no copy). Calling the op directly costs less host time than forcing the kernel with
``torch.nn.attention.sdpa_kernel`` around the functional (that context manager alone took 8.7 us per call
on a CPU where the op's dispatch takes 1.4 us). With ``return_lse`` the ``[B, H, S]`` rows of the op's
log-sum-exp are kept (cuDNN adds a trailing dim, the memory-efficient kernel pads S to a multiple of 32).
They serve dense calls only: ``kv_lens``, varlen and GQA are refused with that reason (the ``triton``
backend serves them), and so is any input torch's own check (``torch.backends.cuda.can_use_*_attention``)
refuses; the selection sees both as tags.
"""

from __future__ import annotations

import torch

_CUDNN = torch.ops.aten._scaled_dot_product_cudnn_attention.default
_FLASH = torch.ops.aten._scaled_dot_product_flash_attention.default
_EFFICIENT = torch.ops.aten._scaled_dot_product_efficient_attention.default


def _cudnn(q, k, v, scale, lse: bool):
    return _CUDNN(q, k, v, None, lse, 0.0, False, False, scale=scale)[:2]


def _flash(q, k, v, scale, lse: bool):  # the flash kernel writes its log-sum-exp either way
    return _FLASH(q, k, v, 0.0, False, False, scale=scale)[:2]


def _efficient(q, k, v, scale, lse: bool):
    return _EFFICIENT(q, k, v, None, lse, 0.0, False, scale=scale)[:2]


def _prepare(kernel, geom):
    bshd = geom.layout == "bshd"
    scale = geom.scale
    lse_rows = geom.return_lse

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        if bshd:
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        o, lse = kernel(q, k, v, scale, lse_rows)
        if lse_rows:
            B, H, S = q.shape[0], q.shape[1], q.shape[2]
            lse = lse.reshape(B, H, -1)[:, :, :S].float().contiguous()
        if bshd:
            o = o.transpose(1, 2)
        o = out.copy_(o) if out is not None else o.contiguous()
        return (o, lse) if lse_rows else o

    return run


def prepare_cudnn(geom, *tensors):
    """The ``sdpa_cudnn`` backend's runner."""
    return _prepare(_cudnn, geom)


def prepare_flash(geom, *tensors):
    """The ``sdpa_flash`` backend's runner."""
    return _prepare(_flash, geom)


def prepare_efficient(geom, *tensors):
    """The ``sdpa_efficient`` backend's runner."""
    return _prepare(_efficient, geom)
