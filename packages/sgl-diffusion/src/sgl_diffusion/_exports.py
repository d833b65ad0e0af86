"""The umbrella's tables, as plain data: the one place the lazy surface is declared.

``DISTRIBUTIONS``: every distribution of the family the umbrella knows about, in
dependency order, mapped to its top-level import module. ``sgl-diffusion doctor``
reports each row and imports the installed ones so their ops register. A new domain is
one new row here; its exported names come from ``_domains.py`` (generated from the op
definitions by ``tools/gen_exports.py``), or, for a domain not built on ``Op``, from a group
in ``_GROUPS``.

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

from ._domains import GROUPS

DISTRIBUTIONS: dict[str, str] = {
    "sgl-diffusion-core": "sgl_diffusion_core",
    "sgl-diffusion-norm": "sgl_diffusion_norm",
    "sgl-diffusion-modulate": "sgl_diffusion_modulate",
    "sgl-diffusion-rope": "sgl_diffusion_rope",
    "sgl-diffusion-activation": "sgl_diffusion_activation",
    "sgl-diffusion-layout": "sgl_diffusion_layout",
    "sgl-diffusion-attention": "sgl_diffusion_attention",
    "sgl-diffusion-ext": "sgl_diffusion_ext",
    "sgl-diffusion-quant": "sgl_diffusion_quant",
    "sgl-diffusion-sites": "sgl_diffusion_sites",
}

# distribution -> the public names the umbrella re-exports from its top-level module
_GROUPS: dict[str, tuple[str, ...]] = {
    "sgl-diffusion-core": (
        # errors
        "UnsupportedInputError",
        "IndexOutOfRangeError",
        "MissingPackageError",
        "UnknownOpError",
        # the eager index checks' memory (after writes PyTorch's version counter cannot see)
        "forget_index_checks",
        "FusionFallbackWarning",
        "BackendRejectedWarning",  # a measured backend choice that rejected a deviating or failing backend
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
    "sgl-diffusion-sites": (
        "optimize",
        "unmount",
        "is_mounted",
        "mount_report",
        "mount_plan",
        "MountReport",
        "Site",
        "SUPPORTED_MODELS",
        "compile_repeated_blocks",
        "parallelize",
        "unparallelize",
        "is_parallelized",
        "PARALLEL_MODELS",
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


# domains built on op definitions: their groups are generated (``_domains.py``)
if set(_GROUPS) & set(GROUPS):  # a domain's names are either generated or written here, never both
    raise RuntimeError(f"_GROUPS repeats generated groups: {sorted(set(_GROUPS) & set(GROUPS))}")
EXPORTS: dict[str, tuple[str, str]] = _build({**_GROUPS, **GROUPS})
