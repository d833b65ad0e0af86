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
        # a test module names its op in OP (default: the first op of the package)
        op = getattr(metafunc.module, "OP", "norm.ln_modulate")
        metafunc.parametrize("backend", _backends(op))
    if "gated_backend" in metafunc.fixturenames:
        metafunc.parametrize("gated_backend", _backends("norm.gated_residual_norm_modulate"))
