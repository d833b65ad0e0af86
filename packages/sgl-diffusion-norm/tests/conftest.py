import pytest
import torch

from sgl_diffusion_core import REGISTRY, module_available, triton_interpret

OP = "norm.ln_modulate"


def _device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def runnable_backends(device: torch.device) -> list[str]:
    """Backends of the op that can run on this lane (generated from the registry's capabilities)."""
    out = []
    for spec in REGISTRY.specs(OP):
        caps = spec.capabilities
        if any(not module_available(m) for m in caps.requires):
            continue
        plat = "cpu" if device.type == "cpu" else ("hip" if torch.version.hip else "cuda")
        if plat in caps.platforms or (plat == "cpu" and caps.interpretable and triton_interpret()):
            out.append(spec.backend)
    return out


@pytest.fixture(scope="session")
def device() -> torch.device:
    return _device()


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", runnable_backends(_device()))
