"""The ROCm checks of the Triton compile lanes (tools/aot_compile.py), the same the FlyDSL lane
(tools/compile_rocm.py) applies to its kernels."""

from __future__ import annotations

import re
from typing import Any


def metadata_field(text: str, key: str) -> int | None:
    """An integer field of the AMDGPU kernel metadata (``.vgpr_count: 37``), or None."""
    m = re.search(rf"^\s*\.{re.escape(key)}:\s*(\d+)", text, re.MULTILINE)
    return int(m.group(1)) if m else None


# The VGPRs (architectural + accumulation) one lane of a CDNA SIMD holds: a workgroup of w waves
# spreads over the 4 SIMDs of a CU, so each of its waves may use at most 512 / ceil(w / 4).
CDNA_VGPRS_PER_LANE = 512
_AMD_WIDE_LOAD = re.compile(r"^\s*(?:global|buffer)_load_(?:dwordx4|b128)\b", re.M)
_AMD_LOAD = re.compile(r"^\s*(?:global|buffer)_load_\w+", re.M)


def rocm_checks(asm: str, res: Any, variant: Any) -> list[str]:
    """The checks the FlyDSL lane applies too (tools/compile_rocm.py): no scratch, and VGPRs within
    what the launch's workgroup can hold. The count of 128-bit global loads is noted (and kept in
    the JSON), and flagged as a note, not a failure, in a kernel whose pointers are declared
    16-byte aligned (``divisible_by_16``) but that has none: several Triton kernels (gathers,
    the exact row norms' narrow lanes, small tiles) load narrower on gfx942 by design or by
    Triton's choice, which only a measurement on AMD hardware can judge."""
    out = []
    if res.stack:
        out.append(f"uses {res.stack} B of scratch (private segment) per lane")
    vgpr, _, agpr = (int(p[:-1]) for p in res.registers.split("/"))
    budget = CDNA_VGPRS_PER_LANE // -(-max(res.num_warps, 1) // 4)
    if vgpr + agpr > budget:
        out.append(f"{vgpr} VGPRs + {agpr} AGPRs exceed the {budget} a {res.num_warps}-wave workgroup may use")
    body = asm.split(".amdgpu_metadata", 1)[0]
    wide, loads = len(_AMD_WIDE_LOAD.findall(body)), len(_AMD_LOAD.findall(body))
    res.notes.append(f"global loads: {wide} of {loads} are 128-bit")
    if getattr(variant, "divisible_by_16", ()) and loads and not wide:
        res.notes.append("declares 16-byte aligned arguments, yet no global load is 128-bit")
    return out
