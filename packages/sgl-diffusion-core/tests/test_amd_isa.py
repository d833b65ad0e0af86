"""The ROCm checks of the Triton compile lanes (tools/amd_isa.py) over hand-written ISA: each defect
is named, a clean build passes, and narrow loads pass only with the variant's stated reason."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from sgl_diffusion_core import AotVariant

TOOL = Path(__file__).resolve().parents[3] / "tools" / "amd_isa.py"
pytestmark = pytest.mark.skipif(not TOOL.exists(), reason="tools/amd_isa.py lives in the repository checkout")


def _tool():
    spec = importlib.util.spec_from_file_location("amd_isa", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _res(stack=0, registers="40v/30s/0a", warps=4):
    return SimpleNamespace(stack=stack, registers=registers, num_warps=warps, notes=[])


def _variant(**kw):
    return AotVariant(name="k[x]", kernel=None, signature={}, **kw)


ASM_WIDE = "\tglobal_load_dwordx4 v[0:3], v4, s[0:1]\n\tglobal_load_dword v5, v6, s[2:3]\n.amdgpu_metadata\n"
ASM_LDS = "\tglobal_load_lds_dwordx4 v1, s[0:1]\n\tglobal_load_ushort v5, v6, s[2:3]\n.amdgpu_metadata\n"
ASM_NARROW = "\tglobal_load_dwordx2 v[0:1], v4, s[0:1]\n\tbuffer_load_dword v5, v6, s[0:3], 0 offen\n"


def test_clean_build_passes_and_counts_wide_loads():
    amd = _tool()
    for asm, wide in ((ASM_WIDE, 1), (ASM_LDS, 1)):
        res = _res()
        assert amd.rocm_checks(asm, res, _variant(divisible_by_16=("X",))) == []
        assert f"global loads: {wide} of 2 are 128-bit" in res.notes


def test_each_defect_is_named():
    amd = _tool()
    assert "scratch" in amd.rocm_checks(ASM_WIDE, _res(stack=64), _variant())[0]
    # 8 waves spread over 4 SIMDs: 2 waves per SIMD, 256 VGPRs each
    assert "exceed the 256" in amd.rocm_checks(ASM_WIDE, _res(registers="200v/30s/100a", warps=8), _variant())[0]
    problems = amd.rocm_checks(ASM_NARROW, _res(), _variant(divisible_by_16=("X",)))
    assert len(problems) == 1 and "no global load is 128-bit" in problems[0]


def test_narrow_loads_need_a_reason_or_no_alignment_claim():
    amd = _tool()
    res = _res()
    assert amd.rocm_checks(ASM_NARROW, res, _variant(divisible_by_16=("X",), narrow_loads="a gather")) == []
    assert "narrow loads by design: a gather" in res.notes
    # no 16-byte alignment declared: the build cannot be expected to load 128 bits
    assert amd.rocm_checks(ASM_NARROW, _res(), _variant()) == []
