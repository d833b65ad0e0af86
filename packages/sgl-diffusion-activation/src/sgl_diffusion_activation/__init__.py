"""sgl-diffusion-activation: fused activation kernels (SiLU, GELU-tanh, GELU and their GLU forms).

The surface is lazy (PEP 562): importing this package registers its ops in the
``sgl_diffusion_core`` registry (data only) and imports no backend and no Triton.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from . import specs as _specs  # noqa: F401  (registers ops and backends)
from .__about__ import __version__ as __version__

_UNARY = ("silu", "gelu_tanh", "gelu")
_GLU = ("silu_and_mul", "gelu_tanh_and_mul", "gelu_and_mul", "silu_mul", "gelu_tanh_mul", "gelu_mul")

# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {
    **{f"{p}{n}{s}": "act_api" for n in _UNARY for p, s in (("", ""), ("can_use_", ""), ("", "_reference"))},
    **{f"{p}{n}{s}": "glu_api" for n in _GLU for p, s in (("", ""), ("can_use_", ""), ("", "_reference"))},
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
