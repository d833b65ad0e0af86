"""sgl-diffusion-attention: bidirectional attention for diffusion transformers (PyTorch's SDPA kernels,
a portable Triton flash-attention forward with kv_lens, varlen and lse), merge_attention_states,
block-sparse attention over block maps (video_block_map) and sequence-parallel usp_attention.

The surface is lazy (PEP 562): importing this package declares its ops to the
``sgl_diffusion_core`` registry and imports no op module, no backend and no Triton; each
op's module (``<op>.py``) is imported on first use. The tables come from ``_exports.py``,
generated from the op definitions by ``tools/gen_exports.py``.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_domain

from .__about__ import __version__ as __version__
from ._exports import EXPORTS, OPS

__all__ = sorted([*EXPORTS, "__version__"])

__getattr__, __dir__ = lazy_domain(__name__, EXPORTS, OPS, globals())
