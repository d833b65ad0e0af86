# Generated from sgl_diffusion/_exports.py by `python -m sgl_diffusion._stubgen`; do not edit.
# At run time these names are resolved lazily (PEP 562, see __init__.py); this stub is
# what type checkers and IDEs see.

from sgl_diffusion_activation import can_use_gelu as can_use_gelu
from sgl_diffusion_activation import can_use_gelu_and_mul as can_use_gelu_and_mul
from sgl_diffusion_activation import can_use_gelu_mul as can_use_gelu_mul
from sgl_diffusion_activation import can_use_gelu_tanh as can_use_gelu_tanh
from sgl_diffusion_activation import can_use_gelu_tanh_and_mul as can_use_gelu_tanh_and_mul
from sgl_diffusion_activation import can_use_gelu_tanh_mul as can_use_gelu_tanh_mul
from sgl_diffusion_activation import can_use_silu as can_use_silu
from sgl_diffusion_activation import can_use_silu_and_mul as can_use_silu_and_mul
from sgl_diffusion_activation import can_use_silu_mul as can_use_silu_mul
from sgl_diffusion_activation import gelu as gelu
from sgl_diffusion_activation import gelu_and_mul as gelu_and_mul
from sgl_diffusion_activation import gelu_and_mul_reference as gelu_and_mul_reference
from sgl_diffusion_activation import gelu_mul as gelu_mul
from sgl_diffusion_activation import gelu_mul_reference as gelu_mul_reference
from sgl_diffusion_activation import gelu_reference as gelu_reference
from sgl_diffusion_activation import gelu_tanh as gelu_tanh
from sgl_diffusion_activation import gelu_tanh_and_mul as gelu_tanh_and_mul
from sgl_diffusion_activation import gelu_tanh_and_mul_reference as gelu_tanh_and_mul_reference
from sgl_diffusion_activation import gelu_tanh_mul as gelu_tanh_mul
from sgl_diffusion_activation import gelu_tanh_mul_reference as gelu_tanh_mul_reference
from sgl_diffusion_activation import gelu_tanh_reference as gelu_tanh_reference
from sgl_diffusion_activation import silu as silu
from sgl_diffusion_activation import silu_and_mul as silu_and_mul
from sgl_diffusion_activation import silu_and_mul_reference as silu_and_mul_reference
from sgl_diffusion_activation import silu_mul as silu_mul
from sgl_diffusion_activation import silu_mul_reference as silu_mul_reference
from sgl_diffusion_activation import silu_reference as silu_reference
from sgl_diffusion_attention import AttentionError as AttentionError
from sgl_diffusion_attention import BlockMap as BlockMap
from sgl_diffusion_attention import UspMesh as UspMesh
from sgl_diffusion_attention import attention as attention
from sgl_diffusion_attention import attention_autotune_cache as attention_autotune_cache
from sgl_diffusion_attention import attention_error as attention_error
from sgl_diffusion_attention import attention_reference as attention_reference
from sgl_diffusion_attention import block_map_from_mask as block_map_from_mask
from sgl_diffusion_attention import block_sparse_attention as block_sparse_attention
from sgl_diffusion_attention import block_sparse_attention_reference as block_sparse_attention_reference
from sgl_diffusion_attention import can_use_attention as can_use_attention
from sgl_diffusion_attention import can_use_block_sparse_attention as can_use_block_sparse_attention
from sgl_diffusion_attention import can_use_merge_attention_states as can_use_merge_attention_states
from sgl_diffusion_attention import can_use_quantized_attention as can_use_quantized_attention
from sgl_diffusion_attention import can_use_usp_attention as can_use_usp_attention
from sgl_diffusion_attention import init_usp as init_usp
from sgl_diffusion_attention import merge_attention_states as merge_attention_states
from sgl_diffusion_attention import merge_attention_states_reference as merge_attention_states_reference
from sgl_diffusion_attention import quantized_attention as quantized_attention
from sgl_diffusion_attention import quantized_attention_reference as quantized_attention_reference
from sgl_diffusion_attention import token_mask as token_mask
from sgl_diffusion_attention import usp_attention as usp_attention
from sgl_diffusion_attention import usp_attention_reference as usp_attention_reference
from sgl_diffusion_attention import usp_gather as usp_gather
from sgl_diffusion_attention import usp_shard as usp_shard
from sgl_diffusion_attention import video_block_map as video_block_map
from sgl_diffusion_attention import video_tile_order as video_tile_order
from sgl_diffusion_core import REGISTRY as REGISTRY
from sgl_diffusion_core import BackendRejectedWarning as BackendRejectedWarning
from sgl_diffusion_core import BitExactFusionGate as BitExactFusionGate
from sgl_diffusion_core import Capabilities as Capabilities
from sgl_diffusion_core import Contract as Contract
from sgl_diffusion_core import Explanation as Explanation
from sgl_diffusion_core import FusionFallbackWarning as FusionFallbackWarning
from sgl_diffusion_core import IndexOutOfRangeError as IndexOutOfRangeError
from sgl_diffusion_core import InputDesc as InputDesc
from sgl_diffusion_core import KernelSpec as KernelSpec
from sgl_diffusion_core import MachineInfo as MachineInfo
from sgl_diffusion_core import MissingPackageError as MissingPackageError
from sgl_diffusion_core import OpDef as OpDef
from sgl_diffusion_core import UnknownOpError as UnknownOpError
from sgl_diffusion_core import UnsupportedInputError as UnsupportedInputError
from sgl_diffusion_core import Verdict as Verdict
from sgl_diffusion_core import call_signature as call_signature
from sgl_diffusion_core import default_device as default_device
from sgl_diffusion_core import describe as describe
from sgl_diffusion_core import device_arch as device_arch
from sgl_diffusion_core import explain as explain
from sgl_diffusion_core import forget_index_checks as forget_index_checks
from sgl_diffusion_core import machine as machine
from sgl_diffusion_core import module_available as module_available
from sgl_diffusion_core import register as register
from sgl_diffusion_core import register_op as register_op
from sgl_diffusion_core import select_impl as select_impl
from sgl_diffusion_core import tensor_platform as tensor_platform
from sgl_diffusion_core import triton_interpret as triton_interpret
from sgl_diffusion_ext import can_use_interpolate as can_use_interpolate
from sgl_diffusion_ext import can_use_rasterize as can_use_rasterize
from sgl_diffusion_ext import can_use_uv_inpaint as can_use_uv_inpaint
from sgl_diffusion_ext import can_use_uv_rasterize as can_use_uv_rasterize
from sgl_diffusion_ext import can_use_vertex_inpaint as can_use_vertex_inpaint
from sgl_diffusion_ext import interpolate as interpolate
from sgl_diffusion_ext import interpolate_reference as interpolate_reference
from sgl_diffusion_ext import rasterize as rasterize
from sgl_diffusion_ext import rasterize_reference as rasterize_reference
from sgl_diffusion_ext import uv_inpaint as uv_inpaint
from sgl_diffusion_ext import uv_inpaint_reference as uv_inpaint_reference
from sgl_diffusion_ext import uv_rasterize as uv_rasterize
from sgl_diffusion_ext import uv_rasterize_reference as uv_rasterize_reference
from sgl_diffusion_ext import vertex_inpaint as vertex_inpaint
from sgl_diffusion_ext import vertex_inpaint_reference as vertex_inpaint_reference
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
from sgl_diffusion_modulate import can_use_indexed_gated_residual as can_use_indexed_gated_residual
from sgl_diffusion_modulate import can_use_indexed_scale_shift as can_use_indexed_scale_shift
from sgl_diffusion_modulate import can_use_scale_shift as can_use_scale_shift
from sgl_diffusion_modulate import gated_residual as gated_residual
from sgl_diffusion_modulate import gated_residual_ as gated_residual_
from sgl_diffusion_modulate import gated_residual_reference as gated_residual_reference
from sgl_diffusion_modulate import indexed_gated_residual as indexed_gated_residual
from sgl_diffusion_modulate import indexed_gated_residual_ as indexed_gated_residual_
from sgl_diffusion_modulate import indexed_gated_residual_reference as indexed_gated_residual_reference
from sgl_diffusion_modulate import indexed_scale_shift as indexed_scale_shift
from sgl_diffusion_modulate import indexed_scale_shift_reference as indexed_scale_shift_reference
from sgl_diffusion_modulate import scale_shift as scale_shift
from sgl_diffusion_modulate import scale_shift_reference as scale_shift_reference
from sgl_diffusion_norm import can_use_channel_rms_norm as can_use_channel_rms_norm
from sgl_diffusion_norm import can_use_gated_residual_norm_modulate as can_use_gated_residual_norm_modulate
from sgl_diffusion_norm import can_use_group_norm_silu as can_use_group_norm_silu
from sgl_diffusion_norm import can_use_layer_norm as can_use_layer_norm
from sgl_diffusion_norm import can_use_ln_modulate as can_use_ln_modulate
from sgl_diffusion_norm import can_use_qk_norm as can_use_qk_norm
from sgl_diffusion_norm import can_use_rms_modulate as can_use_rms_modulate
from sgl_diffusion_norm import can_use_rms_norm as can_use_rms_norm
from sgl_diffusion_norm import channel_rms_norm as channel_rms_norm
from sgl_diffusion_norm import channel_rms_norm_reference as channel_rms_norm_reference
from sgl_diffusion_norm import exact_gate as exact_gate
from sgl_diffusion_norm import gated_residual_norm_modulate as gated_residual_norm_modulate
from sgl_diffusion_norm import gated_residual_norm_modulate_reference as gated_residual_norm_modulate_reference
from sgl_diffusion_norm import group_norm_silu as group_norm_silu
from sgl_diffusion_norm import group_norm_silu_reference as group_norm_silu_reference
from sgl_diffusion_norm import layer_norm as layer_norm
from sgl_diffusion_norm import layer_norm_reference as layer_norm_reference
from sgl_diffusion_norm import ln_modulate as ln_modulate
from sgl_diffusion_norm import ln_modulate_reference as ln_modulate_reference
from sgl_diffusion_norm import qk_norm as qk_norm
from sgl_diffusion_norm import qk_norm_reference as qk_norm_reference
from sgl_diffusion_norm import rms_modulate as rms_modulate
from sgl_diffusion_norm import rms_modulate_reference as rms_modulate_reference
from sgl_diffusion_norm import rms_norm as rms_norm
from sgl_diffusion_norm import rms_norm_reference as rms_norm_reference
from sgl_diffusion_quant import FP8Linear as FP8Linear
from sgl_diffusion_quant import InputCodes as InputCodes
from sgl_diffusion_quant import can_use_fp8_linear as can_use_fp8_linear
from sgl_diffusion_quant import can_use_quantize_fp8 as can_use_quantize_fp8
from sgl_diffusion_quant import fp8_linear as fp8_linear
from sgl_diffusion_quant import fp8_linear_reference as fp8_linear_reference
from sgl_diffusion_quant import quantize_fp8 as quantize_fp8
from sgl_diffusion_quant import quantize_fp8_reference as quantize_fp8_reference
from sgl_diffusion_rope import apply_rope as apply_rope
from sgl_diffusion_rope import apply_rope_qk as apply_rope_qk
from sgl_diffusion_rope import apply_rope_qk_reference as apply_rope_qk_reference
from sgl_diffusion_rope import apply_rope_reference as apply_rope_reference
from sgl_diffusion_rope import can_use_apply_rope as can_use_apply_rope
from sgl_diffusion_rope import can_use_apply_rope_qk as can_use_apply_rope_qk
from sgl_diffusion_rope import can_use_qk_norm_rope as can_use_qk_norm_rope
from sgl_diffusion_rope import can_use_rope_3d as can_use_rope_3d
from sgl_diffusion_rope import qk_norm_rope as qk_norm_rope
from sgl_diffusion_rope import qk_norm_rope_reference as qk_norm_rope_reference
from sgl_diffusion_rope import rope_3d as rope_3d
from sgl_diffusion_rope import rope_3d_reference as rope_3d_reference
from sgl_diffusion_sites import PARALLEL_MODELS as PARALLEL_MODELS
from sgl_diffusion_sites import SUPPORTED_MODELS as SUPPORTED_MODELS
from sgl_diffusion_sites import MountReport as MountReport
from sgl_diffusion_sites import Site as Site
from sgl_diffusion_sites import compile_repeated_blocks as compile_repeated_blocks
from sgl_diffusion_sites import is_mounted as is_mounted
from sgl_diffusion_sites import is_parallelized as is_parallelized
from sgl_diffusion_sites import mount_plan as mount_plan
from sgl_diffusion_sites import mount_report as mount_report
from sgl_diffusion_sites import optimize as optimize
from sgl_diffusion_sites import parallelize as parallelize
from sgl_diffusion_sites import unmount as unmount
from sgl_diffusion_sites import unparallelize as unparallelize

from .__about__ import __version__ as __version__

class MissingDistributionError(ImportError):
    distribution: str
    module: str
    def __init__(self, attr: str, module: str, distribution: str) -> None: ...

__all__ = [
    "AttentionError",
    "BackendRejectedWarning",
    "BitExactFusionGate",
    "BlockMap",
    "Capabilities",
    "Contract",
    "Explanation",
    "FP8Linear",
    "FusionFallbackWarning",
    "IndexOutOfRangeError",
    "InputCodes",
    "InputDesc",
    "KernelSpec",
    "MachineInfo",
    "MissingPackageError",
    "MountReport",
    "OpDef",
    "PARALLEL_MODELS",
    "REGISTRY",
    "SUPPORTED_MODELS",
    "Site",
    "UnknownOpError",
    "UnsupportedInputError",
    "UspMesh",
    "Verdict",
    "__version__",
    "apply_rope",
    "apply_rope_qk",
    "apply_rope_qk_reference",
    "apply_rope_reference",
    "attention",
    "attention_autotune_cache",
    "attention_error",
    "attention_reference",
    "block_map_from_mask",
    "block_sparse_attention",
    "block_sparse_attention_reference",
    "build_varlen_meta",
    "build_varlen_meta_reference",
    "call_signature",
    "can_use_apply_rope",
    "can_use_apply_rope_qk",
    "can_use_attention",
    "can_use_block_sparse_attention",
    "can_use_build_varlen_meta",
    "can_use_causal_conv3d_cat_pad",
    "can_use_channel_rms_norm",
    "can_use_fp8_linear",
    "can_use_gated_residual",
    "can_use_gated_residual_norm_modulate",
    "can_use_gelu",
    "can_use_gelu_and_mul",
    "can_use_gelu_mul",
    "can_use_gelu_tanh",
    "can_use_gelu_tanh_and_mul",
    "can_use_gelu_tanh_mul",
    "can_use_group_norm_silu",
    "can_use_indexed_gated_residual",
    "can_use_indexed_scale_shift",
    "can_use_interpolate",
    "can_use_joint_qkv_cat",
    "can_use_joint_split",
    "can_use_layer_norm",
    "can_use_ln_modulate",
    "can_use_merge_attention_states",
    "can_use_nearest_upsample",
    "can_use_qk_norm",
    "can_use_qk_norm_rope",
    "can_use_quantize_fp8",
    "can_use_quantized_attention",
    "can_use_rasterize",
    "can_use_rms_modulate",
    "can_use_rms_norm",
    "can_use_rope_3d",
    "can_use_scale_shift",
    "can_use_silu",
    "can_use_silu_and_mul",
    "can_use_silu_mul",
    "can_use_ulysses_pack_out",
    "can_use_ulysses_pack_qkv",
    "can_use_ulysses_unpack_out",
    "can_use_ulysses_unpack_qkv",
    "can_use_usp_attention",
    "can_use_usp_merge_heads",
    "can_use_usp_split_heads",
    "can_use_uv_inpaint",
    "can_use_uv_rasterize",
    "can_use_varlen_pack_qkv",
    "can_use_varlen_scatter",
    "can_use_vertex_inpaint",
    "causal_conv3d_cat_pad",
    "causal_conv3d_cat_pad_reference",
    "channel_rms_norm",
    "channel_rms_norm_reference",
    "compile_repeated_blocks",
    "default_device",
    "describe",
    "device_arch",
    "exact_gate",
    "explain",
    "forget_index_checks",
    "fp8_linear",
    "fp8_linear_reference",
    "gated_residual",
    "gated_residual_",
    "gated_residual_norm_modulate",
    "gated_residual_norm_modulate_reference",
    "gated_residual_reference",
    "gelu",
    "gelu_and_mul",
    "gelu_and_mul_reference",
    "gelu_mul",
    "gelu_mul_reference",
    "gelu_reference",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "gelu_tanh_and_mul_reference",
    "gelu_tanh_mul",
    "gelu_tanh_mul_reference",
    "gelu_tanh_reference",
    "group_norm_silu",
    "group_norm_silu_reference",
    "indexed_gated_residual",
    "indexed_gated_residual_",
    "indexed_gated_residual_reference",
    "indexed_scale_shift",
    "indexed_scale_shift_reference",
    "init_usp",
    "interpolate",
    "interpolate_reference",
    "is_mounted",
    "is_parallelized",
    "joint_qkv_cat",
    "joint_qkv_cat_reference",
    "joint_split",
    "joint_split_reference",
    "layer_norm",
    "layer_norm_reference",
    "ln_modulate",
    "ln_modulate_reference",
    "machine",
    "merge_attention_states",
    "merge_attention_states_reference",
    "module_available",
    "mount_plan",
    "mount_report",
    "nearest_upsample",
    "nearest_upsample_reference",
    "optimize",
    "parallelize",
    "qk_norm",
    "qk_norm_reference",
    "qk_norm_rope",
    "qk_norm_rope_reference",
    "quantize_fp8",
    "quantize_fp8_reference",
    "quantized_attention",
    "quantized_attention_reference",
    "rasterize",
    "rasterize_reference",
    "register",
    "register_op",
    "rms_modulate",
    "rms_modulate_reference",
    "rms_norm",
    "rms_norm_reference",
    "rope_3d",
    "rope_3d_reference",
    "scale_shift",
    "scale_shift_reference",
    "select_impl",
    "silu",
    "silu_and_mul",
    "silu_and_mul_reference",
    "silu_mul",
    "silu_mul_reference",
    "silu_reference",
    "tensor_platform",
    "token_mask",
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
    "unmount",
    "unparallelize",
    "usp_attention",
    "usp_attention_reference",
    "usp_gather",
    "usp_merge_heads",
    "usp_merge_heads_reference",
    "usp_shard",
    "usp_split_heads",
    "usp_split_heads_reference",
    "uv_inpaint",
    "uv_inpaint_reference",
    "uv_rasterize",
    "uv_rasterize_reference",
    "varlen_pack_qkv",
    "varlen_pack_qkv_reference",
    "varlen_scatter",
    "varlen_scatter_reference",
    "vertex_inpaint",
    "vertex_inpaint_reference",
    "video_block_map",
    "video_tile_order",
]
