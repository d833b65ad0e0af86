"""sgl-diffusion-sites: mount the family's fused kernels onto diffusers DiT models, verified and reversible.

``optimize(model, quality="exact")`` replaces the eager chains it recognizes (adaLN norm +
modulate, gated residuals, activations) by fused ops behind per-site verification gates and
returns a :class:`MountReport`; ``unmount(model)`` restores the original modules;
``compile_repeated_blocks(model, **compile_kwargs)`` compiles a mounted model regionally;
``parallelize(model, ulysses=U, ring=R)`` runs a transformer (Wan, HunyuanVideo, Flux)
sequence-parallel on ``U * R`` ranks (``unparallelize`` undoes it).

The surface is lazy (PEP 562): importing this package registers no op, imports no diffusers,
no backend and no Triton.
"""

from __future__ import annotations

from sgl_diffusion_core import lazy_exports

from .__about__ import __version__ as __version__

# public name -> entry module (relative to this package)
_EXPORTS: dict[str, str] = {
    "optimize": "mount",
    "unmount": "mount",
    "is_mounted": "mount",
    "mount_report": "mount",
    "mount_plan": "mount",
    "measure_quality": "mount",
    "fp8_linear_paths": "mount",
    "compile_repeated_blocks": "mount",
    "SUPPORTED_MODELS": "mount",
    "parallelize": "parallel",
    "unparallelize": "parallel",
    "is_parallelized": "parallel",
    "PARALLEL_MODELS": "parallel",
    "MountReport": "report",
    "Site": "report",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
