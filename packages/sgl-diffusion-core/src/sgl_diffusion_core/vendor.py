"""Vendor facts, written once: threads per warp (a ROCm wavefront is 64 wide) and the platforms
Triton backends compile for. Triton's dtype map lives in ``triton_math.TL_DTYPES`` (it imports Triton)."""

from __future__ import annotations

WARP_SIZE: dict[str, int] = {"cuda": 32, "hip": 64}


def warp_size(platform: str) -> int:
    """Threads per warp (wavefront on ROCm) of a tensor platform; 32 for anything not ROCm."""
    return WARP_SIZE.get(platform, 32)
