"""``attention`` on PyTorch's own SDPA kernels: cuDNN, flash and memory-efficient (CUDA only).

Each backend runs ``torch.nn.functional.scaled_dot_product_attention`` under
``torch.nn.attention.sdpa_kernel`` restricted to one kernel, on ``[B, H, S, Dh]`` views of the
inputs (a bshd input is passed as its transposed view: no copy). With ``return_lse`` it calls the
kernel's own ATen op (``aten._scaled_dot_product_{cudnn,flash,efficient}_attention``, what SDPA
dispatches to), which also returns the log-sum-exp; its ``[B, H, S]`` rows are kept (cuDNN adds a
trailing dim, the memory-efficient kernel pads S to a multiple of 32). They serve dense calls only:
``kv_lens``, varlen and GQA are refused with that reason (the ``triton`` backend serves them), and
so is any input torch's own check (``torch.backends.cuda.can_use_*_attention``) refuses; the
selection sees both as tags.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def _cudnn_lse(q, k, v, scale):
    return torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, False, False, scale=scale)[:2]


def _flash_lse(q, k, v, scale):
    return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False, False, scale=scale)[:2]


def _efficient_lse(q, k, v, scale):
    return torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, False, scale=scale)[:2]


def _prepare(kind: SDPBackend, with_lse, geom):
    bshd = geom.layout == "bshd"
    scale = geom.scale
    lse_rows = geom.return_lse

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        if bshd:
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if lse_rows:
            o, lse = with_lse(q, k, v, scale)
            B, H, S = q.shape[0], q.shape[1], q.shape[2]
            lse = lse.reshape(B, H, -1)[:, :, :S].float().contiguous()
        else:
            with sdpa_kernel(kind):
                o = F.scaled_dot_product_attention(q, k, v, scale=scale)
        if bshd:
            o = o.transpose(1, 2)
        o = out.copy_(o) if out is not None else o.contiguous()
        return (o, lse) if lse_rows else o

    return run


def prepare_cudnn(geom, *tensors):
    """The ``sdpa_cudnn`` backend's runner."""
    return _prepare(SDPBackend.CUDNN_ATTENTION, _cudnn_lse, geom)


def prepare_flash(geom, *tensors):
    """The ``sdpa_flash`` backend's runner."""
    return _prepare(SDPBackend.FLASH_ATTENTION, _flash_lse, geom)


def prepare_efficient(geom, *tensors):
    """The ``sdpa_efficient`` backend's runner."""
    return _prepare(SDPBackend.EFFICIENT_ATTENTION, _efficient_lse, geom)
