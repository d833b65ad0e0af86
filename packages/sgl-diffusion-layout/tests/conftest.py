import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()



def pytest_generate_tests(metafunc):
    # each test module names the op whose backends it runs in OP
    if "backend" in metafunc.fixturenames:
        op = metafunc.module.OP
        metafunc.parametrize("backend", testing.runnable_backends(op, testing.default_test_device()))
