import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tiny_models



@pytest.fixture(scope="session")
def kernel_backend():
    """The backend the CPU lane forces so the Triton kernels really run (under the interpreter);
    None elsewhere (each op's own choice: Triton on a GPU)."""
    from sgl_diffusion_core import triton_interpret

    return "triton" if triton_interpret() else None
