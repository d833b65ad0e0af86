"""sgl-diffusion-layout: bit-exact data movement for sequence parallelism, varlen attention
and video VAEs (Ulysses/USP packing, varlen pack/scatter, joint-attention concat, causal
conv3d cat+pad, nearest upsampling).

The surface is lazy (PEP 562): importing this package registers its ops in the
``sgl_diffusion_core`` registry (data only) and imports no backend and no Triton.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from . import specs as _specs  # noqa: F401  (registers ops and backends)
from .__about__ import __version__ as __version__

# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {}
for _op, (_family, _s, _n) in _specs.OPS.items():
    for _name in (_op, f"can_use_{_op}", f"{_op}_reference"):
        _EXPORTS[_name] = f"{_family}_api"
del _op, _family, _s, _n, _name
_EXPORTS.update({
    "ulysses_all_to_all": "ulysses_dist",
    "ulysses_all_to_all_out": "ulysses_dist",
})

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
