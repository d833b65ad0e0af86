"""``attention`` on PyTorch's own SDPA kernels: cuDNN, flash and memory-efficient (CUDA only).

Each backend runs ``torch.nn.functional.scaled_dot_product_attention`` under
``torch.nn.attention.sdpa_kernel`` restricted to one kernel, on ``[B, H, S, Dh]`` views of the
inputs (a bshd input is passed as its transposed view: no copy). They serve dense calls only:
``kv_lens``, varlen, ``return_lse`` and GQA are refused with that reason (the ``triton``
backend serves them), and so is any input torch's own check
(``torch.backends.cuda.can_use_*_attention``) refuses; the selection sees both as tags.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def _prepare(kind: SDPBackend, geom):
    bshd = geom.layout == "bshd"
    scale = geom.scale

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        if bshd:
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        with sdpa_kernel(kind):
            o = F.scaled_dot_product_attention(q, k, v, scale=scale)
        if bshd:
            o = o.transpose(1, 2)
        if out is not None:
            return out.copy_(o)
        return o.contiguous()

    return run


def prepare_cudnn(geom, *tensors):
    """The ``sdpa_cudnn`` backend's runner."""
    return _prepare(SDPBackend.CUDNN_ATTENTION, geom)


def prepare_flash(geom, *tensors):
    """The ``sdpa_flash`` backend's runner."""
    return _prepare(SDPBackend.FLASH_ATTENTION, geom)


def prepare_efficient(geom, *tensors):
    """The ``sdpa_efficient`` backend's runner."""
    return _prepare(SDPBackend.EFFICIENT_ATTENTION, geom)
