"""sgl-diffusion core: platform detection, the KernelSpec registry, contracts, errors,
custom-op registration, and the test and benchmark helpers every domain package uses.

Importing this package imports torch (it must look at tensors) but no Triton.
"""

from . import aot, bench, testing
from .__about__ import __version__
from .aot import AotVariant
from .errors import MissingPackageError, UnsupportedInputError
from .launch import RowConfig, next_pow2
from .ops import PlanCache, is_compiling, register_custom_op, tensor_sig
from .platform import (
    MachineInfo,
    default_device,
    device_arch,
    machine,
    module_available,
    tensor_platform,
    triton_interpret,
)
from .registry import (
    FLOAT_DTYPES,
    REGISTRY,
    Capabilities,
    Contract,
    Explanation,
    InputDesc,
    KernelSpec,
    OpDef,
    Verdict,
    describe,
    dtype_name,
    explain,
    register,
    register_op,
    resolve_target,
    select_impl,
)
from .triton_launch import PreparedLaunch

__all__ = [
    "FLOAT_DTYPES",
    "REGISTRY",
    "AotVariant",
    "Capabilities",
    "Contract",
    "Explanation",
    "InputDesc",
    "KernelSpec",
    "MachineInfo",
    "MissingPackageError",
    "OpDef",
    "PlanCache",
    "PreparedLaunch",
    "RowConfig",
    "UnsupportedInputError",
    "Verdict",
    "__version__",
    "aot",
    "bench",
    "testing",
    "default_device",
    "describe",
    "device_arch",
    "dtype_name",
    "explain",
    "is_compiling",
    "machine",
    "module_available",
    "next_pow2",
    "register",
    "register_custom_op",
    "register_op",
    "resolve_target",
    "select_impl",
    "tensor_platform",
    "tensor_sig",
    "triton_interpret",
]
