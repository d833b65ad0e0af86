import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()


def _backends(op: str) -> list[str]:
    # The exact Triton backend runs behind its gate: on CPU it can only verify inputs whose sums are
    # exact in any order, and otherwise gives eager's own result; test_row_norm_exact.py covers it.
    # The generic tests run the close kernel and the eager chain.
    return [b for b in testing.runnable_backends(op, testing.default_test_device()) if b != "triton_exact"]


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", _backends("norm.ln_modulate"))
    if "gated_backend" in metafunc.fixturenames:
        metafunc.parametrize("gated_backend", _backends("norm.gated_residual_norm_modulate"))
