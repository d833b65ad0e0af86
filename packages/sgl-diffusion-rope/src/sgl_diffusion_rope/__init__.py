"""sgl-diffusion-rope: rotary position embeddings for diffusion transformers.

``apply_rope`` / ``apply_rope_qk`` (cos/sin tables or complex freqs_cis, rotate-half or
interleaved, partial rotary), ``rope_3d`` (video RoPE with in-kernel angles) and
``qk_norm_rope`` (per-head norm + RoPE in one pass). The surface is lazy (PEP 562):
importing this package registers its ops (data only) and imports no backend and no Triton.
Needs only ``sgl-diffusion-core``.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from . import specs as _specs  # noqa: F401  (registers ops and backends)
from .__about__ import __version__ as __version__

_NAMES = ("apply_rope", "apply_rope_qk", "rope_3d", "qk_norm_rope")
# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {
    **{n: "rope_api" for n in _NAMES},
    **{f"can_use_{n}": "rope_api" for n in _NAMES},
    **{f"{n}_reference": "rope_api" for n in _NAMES},
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
