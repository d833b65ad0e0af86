"""sgl-diffusion-rope: rotary position embeddings for diffusion transformers.

``apply_rope`` / ``apply_rope_qk`` (cos/sin tables or complex freqs_cis, rotate-half or
interleaved, partial rotary), ``rope_3d`` (video RoPE with in-kernel angles) and
``qk_norm_rope`` (per-head norm + RoPE in one pass). Needs only ``sgl-diffusion-core``.

The surface is lazy (PEP 562): importing this package declares its ops to the
``sgl_diffusion_core`` registry and imports no op module, no backend and no Triton; the
ops' module (``rope.py``) is imported on first use. The tables come from ``_exports.py``,
generated from the op definitions by ``tools/gen_exports.py``.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_domain

from .__about__ import __version__ as __version__
from ._exports import EXPORTS, OPS

__all__ = sorted([*EXPORTS, "__version__"])

__getattr__, __dir__ = lazy_domain(__name__, EXPORTS, OPS, globals())
