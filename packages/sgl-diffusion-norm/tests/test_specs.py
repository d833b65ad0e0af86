"""Registry data of the norm family: which ops are exact by default, and why.

docs/design.md makes exact the default only where an exact *kernel* exists; the eager torch chain is
exact by definition but is no fused op. A default flipped by accident (an op without an exact
kernel made exact by default runs its slow eager chain everywhere: that happened once, caught
by a GPU benchmark at 5% of copy) fails here, on the CPU lane.
"""

from __future__ import annotations

import sgl_diffusion_norm  # noqa: F401  (registers the family)
from sgl_diffusion_core import REGISTRY

EXACT_BY_DEFAULT = {"norm.rms_norm", "norm.rms_modulate", "norm.layer_norm", "norm.ln_modulate"}


def _norm_ops():
    return [op for op in REGISTRY.ops() if op.startswith("norm.")]


def test_exact_by_default_only_with_an_exact_kernel():
    for op in _norm_ops():
        exact_kernels = [s.backend for s in REGISTRY.specs(op) if s.contract.kind == "exact" and s.backend != "torch"]
        if REGISTRY.op(op).default_exact:
            assert exact_kernels, f"{op} is exact by default but has no exact kernel (only the eager chain)"


def test_which_ops_are_exact_by_default():
    """The measured choice (``_row_norm.py``): the four row norms' exact kernels by default (LayerNorm's
    kernel runs at 96-103% of copy on an H200, its modulated form at 83-92%); every op without an
    exact kernel close."""
    assert {op for op in _norm_ops() if REGISTRY.op(op).default_exact} == EXACT_BY_DEFAULT
