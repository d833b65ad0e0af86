"""The umbrella's tables, as plain data: the one place the lazy surface is declared.

``DISTRIBUTIONS``: every distribution of the family the umbrella knows about, in
dependency order, mapped to its top-level import module. ``sgl-diffusion doctor``
reports each row and imports the installed ones so their ops register. A new domain is
one new row here (and, if it exports names, one new group in ``EXPORTS``).

``EXPORTS``: public name -> ``(import module, distribution)``. ``sgl_diffusion.<name>``
imports the module on first touch; ``__init__.pyi`` is generated from this table
(``python -m sgl_diffusion._stubgen``). Names come from a domain's top level only, never
from a backend submodule.

What the umbrella re-exports from core: what a *user* of the ops touches (errors,
``explain`` / ``select_impl``, the registry and its data types, platform queries).
Helpers for *kernel authors* (``PlanCache``, ``RowConfig``, ``next_pow2``,
``register_custom_op``, ``tensor_sig``, ``is_compiling``, ``dtype_name``,
``FLOAT_DTYPES``, ``resolve_target``) and its submodules (``aot``, ``bench``,
``testing``) stay in ``sgl_diffusion_core``. A test fails when core exports a name
that is neither re-exported here nor listed there as a kernel-author helper.

This module imports nothing: ``import sgl_diffusion`` must stay light.
"""

from __future__ import annotations

DISTRIBUTIONS: dict[str, str] = {
    "sgl-diffusion-core": "sgl_diffusion_core",
    "sgl-diffusion-norm": "sgl_diffusion_norm",
    "sgl-diffusion-modulate": "sgl_diffusion_modulate",
    # Later domains are one row each, e.g.:
    # "sgl-diffusion-rope": "sgl_diffusion_rope",
    # "sgl-diffusion-activation": "sgl_diffusion_activation",
    # "sgl-diffusion-layout": "sgl_diffusion_layout",
    # "sgl-diffusion-attention": "sgl_diffusion_attention",
    # "sgl-diffusion-ext": "sgl_diffusion_ext",
    # "sgl-diffusion-sites": "sgl_diffusion_sites",
}

# distribution -> the public names the umbrella re-exports from its top-level module
_GROUPS: dict[str, tuple[str, ...]] = {
    "sgl-diffusion-core": (
        # errors
        "UnsupportedInputError",
        "MissingPackageError",
        "FusionFallbackWarning",
        # verification of fused paths
        "BitExactFusionGate",
        "call_signature",
        # selection and its explanation
        "explain",
        "select_impl",
        "describe",
        "Explanation",
        "Verdict",
        "InputDesc",
        # the registry and its data
        "REGISTRY",
        "register",
        "register_op",
        "OpDef",
        "KernelSpec",
        "Capabilities",
        "Contract",
        # platform
        "machine",
        "MachineInfo",
        "default_device",
        "tensor_platform",
        "device_arch",
        "triton_interpret",
        "module_available",
    ),
    "sgl-diffusion-norm": (
        "ln_modulate",
        "can_use_ln_modulate",
        "ln_modulate_reference",
        # ---- row-norm family ----
        "layer_norm",
        "can_use_layer_norm",
        "layer_norm_reference",
        "rms_norm",
        "can_use_rms_norm",
        "rms_norm_reference",
        "rms_modulate",
        "can_use_rms_modulate",
        "rms_modulate_reference",
        "gated_residual_norm_modulate",
        "can_use_gated_residual_norm_modulate",
        "gated_residual_norm_modulate_reference",
        "exact_gate",
        # ---- end of the row-norm family ----
    ),
    "sgl-diffusion-modulate": (
        "scale_shift",
        "can_use_scale_shift",
        "scale_shift_reference",
        "gated_residual",
        "gated_residual_",
        "can_use_gated_residual",
        "gated_residual_reference",
    ),
}


def _build(groups: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    for dist, names in groups.items():
        module = DISTRIBUTIONS[dist]
        for name in names:
            if name in table:
                raise ValueError(f"sgl_diffusion export {name!r} is declared twice ({table[name][1]} and {dist})")
            table[name] = (module, dist)
    return table


EXPORTS: dict[str, tuple[str, str]] = _build(_GROUPS)
