import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()


def pytest_generate_tests(metafunc):
    # each test module names its op in OP
    if "backend" in metafunc.fixturenames:
        op = metafunc.module.OP
        metafunc.parametrize("backend", testing.runnable_backends(op, testing.default_test_device()))
