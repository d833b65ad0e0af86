# Generated from sgl_diffusion/_exports.py by `python -m sgl_diffusion._stubgen`; do not edit.
# At run time these names are resolved lazily (PEP 562, see __init__.py); this stub is
# what type checkers and IDEs see.

from sgl_diffusion_core import REGISTRY as REGISTRY
from sgl_diffusion_core import BitExactFusionGate as BitExactFusionGate
from sgl_diffusion_core import Capabilities as Capabilities
from sgl_diffusion_core import Contract as Contract
from sgl_diffusion_core import Explanation as Explanation
from sgl_diffusion_core import FusionFallbackWarning as FusionFallbackWarning
from sgl_diffusion_core import InputDesc as InputDesc
from sgl_diffusion_core import KernelSpec as KernelSpec
from sgl_diffusion_core import MachineInfo as MachineInfo
from sgl_diffusion_core import MissingPackageError as MissingPackageError
from sgl_diffusion_core import OpDef as OpDef
from sgl_diffusion_core import UnsupportedInputError as UnsupportedInputError
from sgl_diffusion_core import Verdict as Verdict
from sgl_diffusion_core import call_signature as call_signature
from sgl_diffusion_core import default_device as default_device
from sgl_diffusion_core import describe as describe
from sgl_diffusion_core import device_arch as device_arch
from sgl_diffusion_core import explain as explain
from sgl_diffusion_core import machine as machine
from sgl_diffusion_core import module_available as module_available
from sgl_diffusion_core import register as register
from sgl_diffusion_core import register_op as register_op
from sgl_diffusion_core import select_impl as select_impl
from sgl_diffusion_core import tensor_platform as tensor_platform
from sgl_diffusion_core import triton_interpret as triton_interpret
from sgl_diffusion_layout import build_varlen_meta as build_varlen_meta
from sgl_diffusion_layout import build_varlen_meta_reference as build_varlen_meta_reference
from sgl_diffusion_layout import can_use_build_varlen_meta as can_use_build_varlen_meta
from sgl_diffusion_layout import can_use_causal_conv3d_cat_pad as can_use_causal_conv3d_cat_pad
from sgl_diffusion_layout import can_use_joint_qkv_cat as can_use_joint_qkv_cat
from sgl_diffusion_layout import can_use_joint_split as can_use_joint_split
from sgl_diffusion_layout import can_use_nearest_upsample as can_use_nearest_upsample
from sgl_diffusion_layout import can_use_ulysses_pack_out as can_use_ulysses_pack_out
from sgl_diffusion_layout import can_use_ulysses_pack_qkv as can_use_ulysses_pack_qkv
from sgl_diffusion_layout import can_use_ulysses_unpack_out as can_use_ulysses_unpack_out
from sgl_diffusion_layout import can_use_ulysses_unpack_qkv as can_use_ulysses_unpack_qkv
from sgl_diffusion_layout import can_use_usp_merge_heads as can_use_usp_merge_heads
from sgl_diffusion_layout import can_use_usp_split_heads as can_use_usp_split_heads
from sgl_diffusion_layout import can_use_varlen_pack_qkv as can_use_varlen_pack_qkv
from sgl_diffusion_layout import can_use_varlen_scatter as can_use_varlen_scatter
from sgl_diffusion_layout import causal_conv3d_cat_pad as causal_conv3d_cat_pad
from sgl_diffusion_layout import causal_conv3d_cat_pad_reference as causal_conv3d_cat_pad_reference
from sgl_diffusion_layout import joint_qkv_cat as joint_qkv_cat
from sgl_diffusion_layout import joint_qkv_cat_reference as joint_qkv_cat_reference
from sgl_diffusion_layout import joint_split as joint_split
from sgl_diffusion_layout import joint_split_reference as joint_split_reference
from sgl_diffusion_layout import nearest_upsample as nearest_upsample
from sgl_diffusion_layout import nearest_upsample_reference as nearest_upsample_reference
from sgl_diffusion_layout import ulysses_all_to_all as ulysses_all_to_all
from sgl_diffusion_layout import ulysses_all_to_all_out as ulysses_all_to_all_out
from sgl_diffusion_layout import ulysses_pack_out as ulysses_pack_out
from sgl_diffusion_layout import ulysses_pack_out_reference as ulysses_pack_out_reference
from sgl_diffusion_layout import ulysses_pack_qkv as ulysses_pack_qkv
from sgl_diffusion_layout import ulysses_pack_qkv_reference as ulysses_pack_qkv_reference
from sgl_diffusion_layout import ulysses_unpack_out as ulysses_unpack_out
from sgl_diffusion_layout import ulysses_unpack_out_reference as ulysses_unpack_out_reference
from sgl_diffusion_layout import ulysses_unpack_qkv as ulysses_unpack_qkv
from sgl_diffusion_layout import ulysses_unpack_qkv_reference as ulysses_unpack_qkv_reference
from sgl_diffusion_layout import usp_merge_heads as usp_merge_heads
from sgl_diffusion_layout import usp_merge_heads_reference as usp_merge_heads_reference
from sgl_diffusion_layout import usp_split_heads as usp_split_heads
from sgl_diffusion_layout import usp_split_heads_reference as usp_split_heads_reference
from sgl_diffusion_layout import varlen_pack_qkv as varlen_pack_qkv
from sgl_diffusion_layout import varlen_pack_qkv_reference as varlen_pack_qkv_reference
from sgl_diffusion_layout import varlen_scatter as varlen_scatter
from sgl_diffusion_layout import varlen_scatter_reference as varlen_scatter_reference
from sgl_diffusion_modulate import can_use_gated_residual as can_use_gated_residual
from sgl_diffusion_modulate import can_use_scale_shift as can_use_scale_shift
from sgl_diffusion_modulate import gated_residual as gated_residual
from sgl_diffusion_modulate import gated_residual_ as gated_residual_
from sgl_diffusion_modulate import gated_residual_reference as gated_residual_reference
from sgl_diffusion_modulate import scale_shift as scale_shift
from sgl_diffusion_modulate import scale_shift_reference as scale_shift_reference
from sgl_diffusion_norm import can_use_ln_modulate as can_use_ln_modulate
from sgl_diffusion_norm import ln_modulate as ln_modulate
from sgl_diffusion_norm import ln_modulate_reference as ln_modulate_reference

from .__about__ import __version__ as __version__

class MissingDistributionError(ImportError):
    distribution: str
    module: str
    def __init__(self, attr: str, module: str, distribution: str) -> None: ...

__all__ = [
    "BitExactFusionGate",
    "Capabilities",
    "Contract",
    "Explanation",
    "FusionFallbackWarning",
    "InputDesc",
    "KernelSpec",
    "MachineInfo",
    "MissingPackageError",
    "OpDef",
    "REGISTRY",
    "UnsupportedInputError",
    "Verdict",
    "__version__",
    "build_varlen_meta",
    "build_varlen_meta_reference",
    "call_signature",
    "can_use_build_varlen_meta",
    "can_use_causal_conv3d_cat_pad",
    "can_use_gated_residual",
    "can_use_joint_qkv_cat",
    "can_use_joint_split",
    "can_use_ln_modulate",
    "can_use_nearest_upsample",
    "can_use_scale_shift",
    "can_use_ulysses_pack_out",
    "can_use_ulysses_pack_qkv",
    "can_use_ulysses_unpack_out",
    "can_use_ulysses_unpack_qkv",
    "can_use_usp_merge_heads",
    "can_use_usp_split_heads",
    "can_use_varlen_pack_qkv",
    "can_use_varlen_scatter",
    "causal_conv3d_cat_pad",
    "causal_conv3d_cat_pad_reference",
    "default_device",
    "describe",
    "device_arch",
    "explain",
    "gated_residual",
    "gated_residual_",
    "gated_residual_reference",
    "joint_qkv_cat",
    "joint_qkv_cat_reference",
    "joint_split",
    "joint_split_reference",
    "ln_modulate",
    "ln_modulate_reference",
    "machine",
    "module_available",
    "nearest_upsample",
    "nearest_upsample_reference",
    "register",
    "register_op",
    "scale_shift",
    "scale_shift_reference",
    "select_impl",
    "tensor_platform",
    "triton_interpret",
    "ulysses_all_to_all",
    "ulysses_all_to_all_out",
    "ulysses_pack_out",
    "ulysses_pack_out_reference",
    "ulysses_pack_qkv",
    "ulysses_pack_qkv_reference",
    "ulysses_unpack_out",
    "ulysses_unpack_out_reference",
    "ulysses_unpack_qkv",
    "ulysses_unpack_qkv_reference",
    "usp_merge_heads",
    "usp_merge_heads_reference",
    "usp_split_heads",
    "usp_split_heads_reference",
    "varlen_pack_qkv",
    "varlen_pack_qkv_reference",
    "varlen_scatter",
    "varlen_scatter_reference",
]
