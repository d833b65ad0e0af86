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
    "sgl-diffusion-sites": "sgl_diffusion_sites",
    # Later domains are one row each, e.g.:
    # "sgl-diffusion-ext": "sgl_diffusion_ext",
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
    "sgl-diffusion-norm": (
        "ln_modulate",
        "can_use_ln_modulate",
        "ln_modulate_reference",
        # per-head and VAE norms
        "qk_norm",
        "can_use_qk_norm",
        "qk_norm_reference",
        "channel_rms_norm",
        "can_use_channel_rms_norm",
        "channel_rms_norm_reference",
        "group_norm_silu",
        "can_use_group_norm_silu",
        "group_norm_silu_reference",
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
    "sgl-diffusion-rope": tuple(
        f"{prefix}{op}{suffix}"
        for op in ("apply_rope", "apply_rope_qk", "rope_3d", "qk_norm_rope")
        for prefix, suffix in (("", ""), ("can_use_", ""), ("", "_reference"))
    ),
    "sgl-diffusion-activation": (
        "silu",
        "can_use_silu",
        "silu_reference",
        "gelu_tanh",
        "can_use_gelu_tanh",
        "gelu_tanh_reference",
        "gelu",
        "can_use_gelu",
        "gelu_reference",
        "silu_and_mul",
        "can_use_silu_and_mul",
        "silu_and_mul_reference",
        "gelu_tanh_and_mul",
        "can_use_gelu_tanh_and_mul",
        "gelu_tanh_and_mul_reference",
        "gelu_and_mul",
        "can_use_gelu_and_mul",
        "gelu_and_mul_reference",
        "silu_mul",
        "can_use_silu_mul",
        "silu_mul_reference",
        "gelu_tanh_mul",
        "can_use_gelu_tanh_mul",
        "gelu_tanh_mul_reference",
        "gelu_mul",
        "can_use_gelu_mul",
        "gelu_mul_reference",
    ),
    "sgl-diffusion-layout": (
        "ulysses_pack_qkv",
        "can_use_ulysses_pack_qkv",
        "ulysses_pack_qkv_reference",
        "ulysses_unpack_qkv",
        "can_use_ulysses_unpack_qkv",
        "ulysses_unpack_qkv_reference",
        "ulysses_pack_out",
        "can_use_ulysses_pack_out",
        "ulysses_pack_out_reference",
        "ulysses_unpack_out",
        "can_use_ulysses_unpack_out",
        "ulysses_unpack_out_reference",
        "usp_merge_heads",
        "can_use_usp_merge_heads",
        "usp_merge_heads_reference",
        "usp_split_heads",
        "can_use_usp_split_heads",
        "usp_split_heads_reference",
        "build_varlen_meta",
        "can_use_build_varlen_meta",
        "build_varlen_meta_reference",
        "varlen_pack_qkv",
        "can_use_varlen_pack_qkv",
        "varlen_pack_qkv_reference",
        "varlen_scatter",
        "can_use_varlen_scatter",
        "varlen_scatter_reference",
        "joint_qkv_cat",
        "can_use_joint_qkv_cat",
        "joint_qkv_cat_reference",
        "joint_split",
        "can_use_joint_split",
        "joint_split_reference",
        "ulysses_all_to_all",
        "ulysses_all_to_all_out",
        "causal_conv3d_cat_pad",
        "can_use_causal_conv3d_cat_pad",
        "causal_conv3d_cat_pad_reference",
        "nearest_upsample",
        "can_use_nearest_upsample",
        "nearest_upsample_reference",
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
EXPORTS: dict[str, tuple[str, str]] = _build({**_GROUPS, **GROUPS})
