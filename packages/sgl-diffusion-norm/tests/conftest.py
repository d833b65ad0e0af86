import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        # a test module names its op in OP (default: the first op of the package)
        op = getattr(metafunc.module, "OP", "norm.ln_modulate")
        metafunc.parametrize("backend", testing.runnable_backends(op, testing.default_test_device()))
