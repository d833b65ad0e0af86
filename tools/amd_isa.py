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
_AMD_WIDE_LOAD = re.compile(r"^\s*(?:global|buffer)_load_(?:lds_)?(?:dwordx4|b128)\b", re.M)
_AMD_LOAD = re.compile(r"^\s*(?:global|buffer)_load_\w+", re.M)


def rocm_checks(asm: str, res: Any, variant: Any) -> list[str]:
    """The checks the FlyDSL lane applies too (tools/compile_rocm.py), as problems: scratch (the
    private segment), VGPRs beyond what the launch's workgroup can hold, and a build whose
    arguments are declared 16-byte aligned (``divisible_by_16``) with no 128-bit global load
    (``global_load_dwordx4``, ``global_load_lds_dwordx4`` or a buffer load of 128 bits) unless the
    variant states why (``AotVariant.narrow_loads``, kept as a note). The count of 128-bit loads
    is always noted (and kept in the JSON)."""
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
        reason = getattr(variant, "narrow_loads", "")
        if reason:
            res.notes.append(f"narrow loads by design: {reason}")
        else:
            out.append(
                "declares 16-byte aligned arguments, yet no global load is 128-bit "
                "(a build that loads narrower by design states why in AotVariant.narrow_loads)"
            )
    return out
