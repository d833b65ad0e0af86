"""Platform detection: computed once, cached.

Two questions are answered here and nowhere else:

* which platform a *tensor* lives on (``cuda``, ``hip``, ``cpu``, ``mps``, ``xpu``) and
  the architecture of its device (``90`` for sm_90, ``"gfx942"`` for MI300), used by
  backend selection;
* what the *machine* offers (for ``sgl-diffusion doctor``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass

import torch

PLATFORMS = ("cuda", "hip", "cpu", "mps", "xpu")


@functools.cache
def _is_hip_build() -> bool:
    return getattr(torch.version, "hip", None) is not None


def tensor_platform(device: torch.device) -> str:
    """Platform name of a device: a ``cuda`` device of a ROCm build of torch is ``hip``."""
    kind = device.type
    if kind == "cuda":
        return "hip" if _is_hip_build() else "cuda"
    return kind


@functools.cache
def device_arch(platform: str, index: int | None) -> int | str | None:
    """Architecture of one device: ``major*10+minor`` on CUDA, the gfx name on ROCm."""
    if platform == "cuda":
        major, minor = torch.cuda.get_device_capability(index)
        return major * 10 + minor
    if platform == "hip":
        props = torch.cuda.get_device_properties(index)
        return str(getattr(props, "gcnArchName", "")).split(":")[0] or None
    return None


def triton_interpret() -> bool:
    """True when Triton kernels run in the interpreter (``TRITON_INTERPRET=1``), i.e. on CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def module_available(name: str) -> bool:
    """Whether a Python module can be imported, without importing it (a finder that refuses the
    name, or a module set to ``None`` in ``sys.modules``, counts as not importable)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class MachineInfo:
    platform: str  # the best accelerator platform of the machine, or "cpu"
    devices: tuple[str, ...]  # device names
    archs: tuple[int | str | None, ...]
    torch_version: str
    accelerator_runtime: str | None  # CUDA or HIP version torch was built with

    def describe(self) -> str:
        if not self.devices:
            return f"{self.platform} (no accelerator), torch {self.torch_version}"
        devs = ", ".join(f"{n} [{a}]" for n, a in zip(self.devices, self.archs))
        return f"{self.platform} {self.accelerator_runtime}: {devs}; torch {self.torch_version}"


@functools.cache
def machine() -> MachineInfo:
    """The machine's platform, computed once."""
    names: list[str] = []
    archs: list[int | str | None] = []
    runtime = None
    if torch.cuda.is_available():
        plat = "hip" if _is_hip_build() else "cuda"
        runtime = f"HIP {torch.version.hip}" if plat == "hip" else f"CUDA {torch.version.cuda}"
        for i in range(torch.cuda.device_count()):
            names.append(torch.cuda.get_device_name(i))
            archs.append(device_arch(plat, i))
    elif hasattr(torch, "xpu") and torch.xpu.is_available():
        plat = "xpu"
        names = [torch.xpu.get_device_name(i) for i in range(torch.xpu.device_count())]
        archs = [None] * len(names)
    elif torch.backends.mps.is_available():
        plat, names, archs = "mps", ["Apple MPS"], [None]
    else:
        plat = "cpu"
    return MachineInfo(plat, tuple(names), tuple(archs), torch.__version__, runtime)


def default_device() -> torch.device:
    """The best device of the machine (``cuda:0`` on CUDA and ROCm)."""
    plat = machine().platform
    if plat in ("cuda", "hip"):
        return torch.device("cuda", torch.cuda.current_device())
    if plat in ("xpu", "mps"):
        return torch.device(plat)
    return torch.device("cpu")
