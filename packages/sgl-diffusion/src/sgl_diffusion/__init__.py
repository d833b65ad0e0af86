"""sgl-diffusion: fused kernels for diffusion transformers, the whole family behind one import.

The surface is lazy (PEP 562): ``import sgl_diffusion`` imports no domain package, not
``sgl_diffusion_core``, not torch and not Triton. The first touch of a name (say
``sgl_diffusion.ln_modulate``) imports the distribution that provides it and caches the
attribute here. Names, modules and distributions come from one table,
``sgl_diffusion._exports.EXPORTS``; ``__init__.pyi`` is generated from it.

A name whose distribution is not installed raises :class:`MissingDistributionError`
(an ``ImportError``) naming the distribution and the ``pip install`` command.
"""

from __future__ import annotations

import importlib
from typing import Any

from . import _exports
from .__about__ import __version__ as __version__


class MissingDistributionError(ImportError):
    """A name of the umbrella was touched whose distribution is not installed."""

    def __init__(self, attr: str, module: str, distribution: str):
        super().__init__(
            f"sgl_diffusion.{attr} is provided by the distribution {distribution!r} (import {module}), "
            f"which is not installed. Install it with: pip install {distribution}",
            name=module,
        )
        self.distribution = distribution
        self.module = module


__all__ = sorted([*_exports.EXPORTS, "__version__"])


def _is_missing(exc: ModuleNotFoundError, module: str) -> bool:
    """The module itself (or a parent package) is absent, not something it imports."""
    missing = exc.name
    return missing is not None and (module == missing or module.startswith(missing + "."))


def __getattr__(name: str) -> Any:
    entry = _exports.EXPORTS.get(name)
    if entry is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, distribution = entry
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _is_missing(exc, module_name):
            raise MissingDistributionError(name, module_name, distribution) from exc
        raise
    try:
        obj = getattr(module, name)
    except AttributeError:
        raise AttributeError(
            f"sgl_diffusion.{name}: {module_name} (distribution {distribution!r}) has no attribute {name!r}; "
            f"the installed {distribution} may be too old for this sgl-diffusion"
        ) from None
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_exports.EXPORTS))
