"""Vendor facts, written once: threads per warp (a ROCm wavefront is 64 wide) and the FP8 storage
formats. Triton's dtype maps live in ``triton_math`` (``TL_DTYPES``, ``TL_FP8``: it imports Triton).

Two FP8 storage formats, one per vendor generation: ``float8_e4m3fn`` (OCP E4M3: NVIDIA sm_89+,
AMD gfx950; largest finite 448) and ``float8_e4m3fnuz`` (AMD gfx942; exponent bias 8, no negative
zero, largest finite 240)."""

from __future__ import annotations

WARP_SIZE: dict[str, int] = {"cuda": 32, "hip": 64}


def warp_size(platform: str) -> int:
    """Threads per warp (wavefront on ROCm) of a tensor platform; 32 for anything not ROCm."""
    return WARP_SIZE.get(platform, 32)


E4M3FN = "float8_e4m3fn"
E4M3FNUZ = "float8_e4m3fnuz"
# largest finite value of each FP8 format (the saturation bound of every quantizer)
FP8_MAX: dict[str, float] = {E4M3FN: 448.0, E4M3FNUZ: 240.0}
# smallest positive (subnormal) value of each format: one ulp below the smallest normal
FP8_TINY: dict[str, float] = {E4M3FN: 2.0**-9, E4M3FNUZ: 2.0**-10}
# the AMD target that stores each format
FP8_AMD_TARGETS: dict[str, tuple[str, ...]] = {E4M3FN: ("gfx950",), E4M3FNUZ: ("gfx942",)}
# an all-zero row (or tensor) is quantized with amax = FP8_MIN_AMAX: scale FP8_MIN_AMAX / fp8_max, codes 0
FP8_MIN_AMAX = 1e-12


def fp8_native(platform: str, arch: object, fmt: str) -> bool:
    """Whether the device stores and multiplies FP8 format ``fmt`` (NVIDIA sm_89+ and AMD gfx950:
    ``float8_e4m3fn``; AMD gfx942: ``float8_e4m3fnuz``). The CPU has both (torch; the interpreter)."""
    if platform == "cuda":
        return fmt == E4M3FN and isinstance(arch, int) and arch >= 89
    if platform == "hip":
        return {"gfx942": E4M3FNUZ, "gfx950": E4M3FN}.get(str(arch)) == fmt
    return platform == "cpu"
