"""sgl-diffusion-modulate: bit-exact adaLN modulation kernels (scale/shift, gated residual, and their
indexed forms: a table row per token).

The surface is lazy (PEP 562): importing this package registers its ops in the
``sgl_diffusion_core`` registry (data only) and imports no backend and no Triton.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from . import specs as _specs  # noqa: F401  (registers ops and backends)
from .__about__ import __version__ as __version__

# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {
    "scale_shift": "scale_shift_api",
    "can_use_scale_shift": "scale_shift_api",
    "scale_shift_reference": "scale_shift_api",
    "gated_residual": "gated_residual_api",
    "gated_residual_": "gated_residual_api",
    "can_use_gated_residual": "gated_residual_api",
    "gated_residual_reference": "gated_residual_api",
    "indexed_scale_shift": "indexed_api",
    "can_use_indexed_scale_shift": "indexed_api",
    "indexed_scale_shift_reference": "indexed_api",
    "indexed_gated_residual": "indexed_api",
    "indexed_gated_residual_": "indexed_api",
    "can_use_indexed_gated_residual": "indexed_api",
    "indexed_gated_residual_reference": "indexed_api",
    "IndexOutOfRangeError": "indexed_api",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
