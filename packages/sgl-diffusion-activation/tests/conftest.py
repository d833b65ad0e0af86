import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()


def pytest_generate_tests(metafunc):
    # every activation op has the same backends (triton and torch); silu stands for all of them
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", testing.runnable_backends("activation.silu", testing.default_test_device()))
