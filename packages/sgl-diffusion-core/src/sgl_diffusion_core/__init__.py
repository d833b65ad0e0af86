"""sgl-diffusion core: platform detection, the KernelSpec registry, contracts, errors,
custom-op registration, and the test and benchmark helpers every domain package uses.

Importing this package imports torch (it must look at tensors) but no Triton;
``triton_math`` (Triton device helpers for kernels) is a lazy attribute.
"""

from typing import TYPE_CHECKING

from . import aot, bench, testing, vendor
from .__about__ import __version__
from .aot import AotVariant
from .errors import (
    BackendRejectedWarning,
    IndexOutOfRangeError,
    MissingPackageError,
    UnknownOpError,
    UnsupportedInputError,
)
from .fp8 import FP8_OUT, FP8_OUT_FOREIGN, FP8_TOL, device_fp8_dtype, fp8_result_format, quantize_fp8_torch
from .gate import BitExactFusionGate, FusionFallbackWarning, call_signature
from .launch import RowConfig, TileConfig, next_pow2, warps_for
from .modulation import (
    MODULATION_LAYOUTS,
    ModLayout,
    RowGeometry,
    broadcast_view,
    check_tensors,
    describe_rows,
    mod_layout,
    row_geometry,
    rows_disjoint,
    same_memory,
    same_rows,
    writable_problem,
)
from .op import Backend, Chooser, Op, RuleChooser
from .ops import (
    Dispatcher,
    PlanCache,
    check_index_range,
    forget_index_checks,
    index_check_mode,
    is_compiling,
    lazy_domain,
    lazy_exports,
    register_custom_op,
    tensor_sig,
)
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
    eligible,
    explain,
    op_id_of,
    register,
    register_op,
    resolve_target,
    select_impl,
)
from .triton_launch import PreparedLaunch
from .vendor import WARP_SIZE, warp_size

if TYPE_CHECKING:
    from . import triton_math as triton_math


def __getattr__(name: str):
    if name == "triton_math":  # imports Triton: only backends touch it
        import importlib

        return importlib.import_module(".triton_math", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# triton_math is reachable as an attribute but kept out of __all__: touching it imports Triton.
__all__ = [
    "FLOAT_DTYPES",
    "MODULATION_LAYOUTS",
    "REGISTRY",
    "AotVariant",
    "Backend",
    "BitExactFusionGate",
    "Capabilities",
    "Contract",
    "Dispatcher",
    "Explanation",
    "FusionFallbackWarning",
    "BackendRejectedWarning",
    "Chooser",
    "RuleChooser",
    "IndexOutOfRangeError",
    "InputDesc",
    "KernelSpec",
    "MachineInfo",
    "MissingPackageError",
    "ModLayout",
    "Op",
    "OpDef",
    "PlanCache",
    "PreparedLaunch",
    "RowConfig",
    "RowGeometry",
    "TileConfig",
    "UnknownOpError",
    "UnsupportedInputError",
    "Verdict",
    "__version__",
    "aot",
    "bench",
    "call_signature",
    "broadcast_view",
    "check_index_range",
    "forget_index_checks",
    "index_check_mode",
    "check_tensors",
    "testing",
    "default_device",
    "describe",
    "describe_rows",
    "device_arch",
    "dtype_name",
    "explain",
    "is_compiling",
    "lazy_domain",
    "lazy_exports",
    "machine",
    "mod_layout",
    "module_available",
    "next_pow2",
    "op_id_of",
    "warps_for",
    "warp_size",
    "WARP_SIZE",
    "vendor",
    "quantize_fp8_torch",
    "fp8_result_format",
    "device_fp8_dtype",
    "FP8_OUT",
    "FP8_OUT_FOREIGN",
    "FP8_TOL",
    "register",
    "register_custom_op",
    "register_op",
    "resolve_target",
    "row_geometry",
    "rows_disjoint",
    "same_memory",
    "same_rows",
    "eligible",
    "select_impl",
    "tensor_platform",
    "tensor_sig",
    "triton_interpret",
    "writable_problem",
]
