"""What a user meets first, across packages: every way of naming an op works in ``explain``, and a
Triton backend asked for under the interpreter without numpy says which extra to install.

The CLI's usage errors (an unknown device, model or op) are tested with the umbrella
(packages/sgl-diffusion/tests/test_umbrella_cli.py), rope's argument errors with rope.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from _fresh import run_fresh

sd = pytest.importorskip("sgl_diffusion")


def test_explain_takes_an_op_id_short_name_or_function() -> None:
    x = torch.randn(2, 8, 64)
    scale, shift = torch.randn(2, 64), torch.randn(2, 64)
    for op in ("norm.ln_modulate", "ln_modulate", sd.ln_modulate):
        explanation = sd.explain(op, x, scale, shift)
        assert explanation.op == "norm.ln_modulate" and explanation.chosen == "torch", op


def test_an_unknown_op_name_lists_close_matches_and_invents_no_distribution() -> None:
    x = torch.randn(2, 8, 64)
    with pytest.raises(sd.UnknownOpError) as info:
        sd.explain("ln_modulat", x)
    msg = str(info.value)
    assert "close matches: norm.ln_modulate" in msg
    assert "sgl-diffusion-ln_modulat" not in msg and "not installed" not in msg
    with pytest.raises(ValueError, match=r"no installed package provides ops named nodomain\.\*"):
        sd.explain("nodomain.ln_modulate", x)


NO_NUMPY = """
import json, sys
sys.modules["numpy"] = None  # as if numpy were not installed: `import numpy` raises ImportError
import torch
import sgl_diffusion as sd

x, scale, shift = torch.randn(2, 8, 64), torch.randn(2, 64), torch.randn(2, 64)
try:
    sd.ln_modulate(x, scale, shift, backend="triton")
    raised = None
except Exception as e:
    raised = [type(e).__name__, isinstance(e, ValueError), str(e)]
exp = sd.explain("ln_modulate", x, scale, shift, backend="triton")
print(json.dumps({
    "raised": raised,
    "reasons": {v.backend: list(v.reasons) for v in exp.verdicts},
    "triton_loaded": "triton" in sys.modules,
}))
"""


def test_the_interpreter_without_numpy_names_the_triton_extra(tmp_path: Path) -> None:
    """Triton's interpreter imports numpy, which the triton wheel does not declare: without it, a
    Triton backend on CPU under TRITON_INTERPRET=1 is refused with the extra that installs it."""
    out = run_fresh(NO_NUMPY, tmp_path, env={"TRITON_INTERPRET": "1"})
    assert out["raised"] is not None, "backend='triton' ran under the interpreter without numpy"
    name, is_value_error, msg = out["raised"]
    assert name == "UnsupportedInputError" and is_value_error, f"raised {name}: {msg}"
    hint = "needs numpy, which is not installed (pip install 'sgl-diffusion-norm[triton]')"
    assert hint in msg, msg
    assert any(hint in r for r in out["reasons"]["triton"]), out["reasons"]
    assert not out["triton_loaded"], "Triton was imported although no Triton backend could run"
