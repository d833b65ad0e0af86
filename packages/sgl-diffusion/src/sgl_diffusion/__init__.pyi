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
from sgl_diffusion_modulate import can_use_gated_residual as can_use_gated_residual
from sgl_diffusion_modulate import can_use_scale_shift as can_use_scale_shift
from sgl_diffusion_modulate import gated_residual as gated_residual
from sgl_diffusion_modulate import gated_residual_ as gated_residual_
from sgl_diffusion_modulate import gated_residual_reference as gated_residual_reference
from sgl_diffusion_modulate import scale_shift as scale_shift
from sgl_diffusion_modulate import scale_shift_reference as scale_shift_reference
from sgl_diffusion_norm import can_use_gated_residual_norm_modulate as can_use_gated_residual_norm_modulate
from sgl_diffusion_norm import can_use_layer_norm as can_use_layer_norm
from sgl_diffusion_norm import can_use_ln_modulate as can_use_ln_modulate
from sgl_diffusion_norm import can_use_rms_modulate as can_use_rms_modulate
from sgl_diffusion_norm import can_use_rms_norm as can_use_rms_norm
from sgl_diffusion_norm import exact_gate as exact_gate
from sgl_diffusion_norm import gated_residual_norm_modulate as gated_residual_norm_modulate
from sgl_diffusion_norm import gated_residual_norm_modulate_reference as gated_residual_norm_modulate_reference
from sgl_diffusion_norm import layer_norm as layer_norm
from sgl_diffusion_norm import layer_norm_reference as layer_norm_reference
from sgl_diffusion_norm import ln_modulate as ln_modulate
from sgl_diffusion_norm import ln_modulate_reference as ln_modulate_reference
from sgl_diffusion_norm import rms_modulate as rms_modulate
from sgl_diffusion_norm import rms_modulate_reference as rms_modulate_reference
from sgl_diffusion_norm import rms_norm as rms_norm
from sgl_diffusion_norm import rms_norm_reference as rms_norm_reference

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
    "call_signature",
    "can_use_gated_residual",
    "can_use_gated_residual_norm_modulate",
    "can_use_layer_norm",
    "can_use_ln_modulate",
    "can_use_rms_modulate",
    "can_use_rms_norm",
    "can_use_scale_shift",
    "default_device",
    "describe",
    "device_arch",
    "exact_gate",
    "explain",
    "gated_residual",
    "gated_residual_",
    "gated_residual_norm_modulate",
    "gated_residual_norm_modulate_reference",
    "gated_residual_reference",
    "layer_norm",
    "layer_norm_reference",
    "ln_modulate",
    "ln_modulate_reference",
    "machine",
    "module_available",
    "register",
    "register_op",
    "rms_modulate",
    "rms_modulate_reference",
    "rms_norm",
    "rms_norm_reference",
    "scale_shift",
    "scale_shift_reference",
    "select_impl",
    "tensor_platform",
    "triton_interpret",
]
