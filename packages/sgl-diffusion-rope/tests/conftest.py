import pytest

from sgl_diffusion_core import testing


@pytest.fixture(scope="session")
def device():
    return testing.default_test_device()


def pytest_configure(config):
    config.addinivalue_line("markers", "op(op_id): the op whose runnable backends parametrize `backend`")


def pytest_generate_tests(metafunc):
    # `backend` runs over the backends of the test's op: its `op` marker, else the module's OP
    if "backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("op")
        op = marker.args[0] if marker else metafunc.module.OP
        metafunc.parametrize("backend", testing.runnable_backends(op, testing.default_test_device()))
