"""sgl-diffusion-norm: fused normalization kernels for diffusion transformers.

The surface is lazy (PEP 562): importing this package registers its ops in the
``sgl_diffusion_core`` registry (data only) and imports no backend and no Triton; the
first touch of an op imports its entry module, the first call its backend.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from . import specs as _specs  # noqa: F401  (registers ops and backends)
from .__about__ import __version__ as __version__

# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {
    # ---- row-norm family (row_norm_api, gated_norm_api) ----
    "ln_modulate": "row_norm_api",
    "can_use_ln_modulate": "row_norm_api",
    "ln_modulate_reference": "row_norm_api",
    "layer_norm": "row_norm_api",
    "can_use_layer_norm": "row_norm_api",
    "layer_norm_reference": "row_norm_api",
    "rms_norm": "row_norm_api",
    "can_use_rms_norm": "row_norm_api",
    "rms_norm_reference": "row_norm_api",
    "rms_modulate": "row_norm_api",
    "can_use_rms_modulate": "row_norm_api",
    "rms_modulate_reference": "row_norm_api",
    "exact_gate": "row_norm_api",
    "gated_residual_norm_modulate": "gated_norm_api",
    "can_use_gated_residual_norm_modulate": "gated_norm_api",
    "gated_residual_norm_modulate_reference": "gated_norm_api",
    # ---- end of the row-norm family ----
    # --- per-head and VAE norms (qk_norm, channel_rms_norm, group_norm_silu) ---
    "qk_norm": "qk_norm_api",
    "can_use_qk_norm": "qk_norm_api",
    "qk_norm_reference": "qk_norm_api",
    "channel_rms_norm": "channel_rms_norm_api",
    "can_use_channel_rms_norm": "channel_rms_norm_api",
    "channel_rms_norm_reference": "channel_rms_norm_api",
    "group_norm_silu": "group_norm_silu_api",
    "can_use_group_norm_silu": "group_norm_silu_api",
    "group_norm_silu_reference": "group_norm_silu_api",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
