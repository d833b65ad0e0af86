"""Ahead-of-time compile variants: what the compile lanes build for every Triton backend.

A Triton backend module exposes ``aot_variants() -> list[AotVariant]`` and names it in its
``KernelSpec.aot``; ``tools/aot_compile.py`` compiles each variant for sm_80, sm_90,
sm_100, gfx942 and gfx950 with no GPU present and reports registers, shared memory and
spills.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AotVariant:
    name: str  # e.g. "ln_modulate[bf16,D=5120,per-sample]"
    kernel: Any  # the @triton.jit function
    signature: dict[str, str]  # argument -> Triton type ("*bf16", "i32", "fp32", "constexpr")
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 1
    options: dict[str, Any] = field(default_factory=dict)  # extra compile options, e.g. enable_fp_fusion
    # an exact kernel (built without fusion) that issues FMAs on purpose (``tl.fma``), where the
    # eager code it reproduces was compiled with contraction (ATen's LayerNorm Welford): the
    # compile lane's no-FMA check does not apply to it (list the same build without the explicit
    # FMAs beside it, so that the check still covers the rest of the kernel)
    explicit_fma: bool = False
    # arguments a real launch sees as multiples of 16 (pointers 16-byte aligned, extents such as
    # P = 21 * 240 * 416): Triton specializes them (``tt.divisibility``), which is what lets it emit
    # 16-byte vector accesses; without the hint the build (and its register / spill report)
    # is a scalar-access kernel no launch runs
    divisible_by_16: tuple[str, ...] = ()
    # the lowest CUDA compute capability (major * 10 + minor) a launch of this build can run on, e.g.
    # 90 for a thread-block cluster (``num_ctas > 1``); CUDA targets below it skip the variant
    min_cuda_arch: int = 0
    # the AMD targets a launch of this build can run on (a storage format one gfx generation has: FP8
    # e4m3fnuz on gfx942, e4m3fn on gfx950); empty for every AMD target
    amd_targets: tuple[str, ...] = ()
    # why this build's global loads are narrower than 128 bits although its arguments are declared
    # 16-byte aligned (a gather at data-dependent addresses, rows shorter than one vector, eager's
    # own per-thread layout reproduced on purpose); without a reason the ROCm lanes fail such a build
    narrow_loads: str = ""
