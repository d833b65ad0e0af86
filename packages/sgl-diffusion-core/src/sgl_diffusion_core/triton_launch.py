"""A prepared Triton launch with a lean host path (used by Triton backends; imports no Triton).

``kernel[grid](*args, **constexprs)`` re-binds and re-specializes every argument on every
call; with ~20 arguments that costs more host time than the kernel takes at image sizes.
A :class:`PreparedLaunch` fixes grid, constexprs and launch options once per call
signature and, after the first launch, calls the compiled kernel's launcher directly while
every pointer keeps the 16-byte alignment it was specialized for. Any other call takes the
regular JIT path, which re-specializes.

The direct call passes ``None`` for Triton's launch hooks while no hook is installed: the
regular path builds launch metadata and calls the two (empty) hook chains from C on every
launch, which at tiny sizes is a fifth of the host time. With a hook installed (a profiler
such as proton) the regular ``CompiledKernel[grid]`` runner is used, hooks included.

Contract for callers: integer arguments that are not in the kernel's
``do_not_specialize`` list must be the same on every call of one PreparedLaunch (they
are baked into the compiled kernel); derive them from the plan's shapes and strides.
"""

from __future__ import annotations

from functools import reduce
from operator import or_
from typing import Any

import torch

# Triton's knobs (its launch hook chains), imported with the first compiled kernel: importing this
# module imports no Triton (the lazy package surfaces promise that)
_knobs: Any = None


def _raw_stream(index: int) -> int:
    return torch._C._cuda_getCurrentRawStream(index)


class PreparedLaunch:
    """Grid, constexprs and launch options of one call signature; the kernel's pointer
    arguments must be its first ``n_ptrs`` parameters and the constexprs its last ones;
    ``options`` are Triton launch options (``RowConfig.launch_options``: num_warps, ...)."""

    def __init__(self, kernel: Any, grid: tuple[int, ...], constexprs: dict[str, Any], *, n_ptrs: int,
                 options: dict[str, Any], fp_fusion: bool = True, direct: bool = True,
                 device: torch.device | None = None) -> None:
        names = list(kernel.arg_names)
        n_const = len(constexprs)
        if set(names[len(names) - n_const:]) != set(constexprs):
            raise ValueError(f"{kernel.__name__}: constexprs {sorted(constexprs)} must be the trailing parameters")
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.constexprs = constexprs
        self._const_tail = tuple(constexprs[n] for n in names[len(names) - n_const:])
        self._n_ptrs = n_ptrs
        # fp_fusion=False forbids contracting a*b+c into an FMA (exact contracts need it off);
        # stated explicitly so the choice does not depend on Triton's changing default.
        self.options = {**options, "enable_fp_fusion": fp_fusion}
        self._direct = direct
        self._runner = None
        self._raw = None  # (run, grid, function, packed metadata) of the compiled kernel
        # Triton launches on the *current* CUDA device; tensors on another device would be
        # read through foreign pointers. Remember the tensors' device and switch to it.
        self._device_index = None
        if device is not None and device.type == "cuda":
            self._device_index = device.index if device.index is not None else torch.cuda.current_device()

    def __call__(self, *args: Any) -> None:
        n = self._n_ptrs
        ptrs = [t.data_ptr() for t in args[:n]]
        raw = self._raw
        if raw is not None and not reduce(or_, ptrs, 0) & 15:
            # Integer pointers: the launcher takes them as they are (no data_ptr() call and no
            # cuPointerGetAttribute per argument); devices were validated when the plan was made.
            # The stream is the tensors' device's current one, read directly (the runner would ask
            # the driver for the current device first). The current device is read directly too
            # (torch.cuda.current_device() first checks lazy init, which the tensors imply).
            run, gx, gy, gz, function, meta, hooks, get_device, get_stream, tail = raw
            idx = self._device_index
            current = get_device()
            if (idx is None or current == idx) and not (hooks.launch_enter_hook.calls
                                                        or hooks.launch_exit_hook.calls):
                run(gx, gy, gz, get_stream(current), function, meta, None, None, None, *ptrs, *args[n:], *tail)
                return
        self._regular(args, ptrs)

    def _regular(self, args: tuple, ptrs: list[int]) -> None:
        """Every launch the direct call above does not take: the first one (it compiles), one with a
        pointer off its 16-byte alignment, one while a launch hook is installed, or one from another
        current device (Triton launches on the current device: switch to the tensors' one)."""
        idx = self._device_index
        if idx is not None and torch._C._cuda_getDevice() != idx:
            with torch.cuda.device(idx):
                return self._regular(args, ptrs)
        misaligned = reduce(or_, ptrs, 0) & 15
        runner = self._runner
        if runner is not None and not misaligned:
            stream = _raw_stream(torch._C._cuda_getDevice() if idx is None else idx)
            runner(*ptrs, *args[self._n_ptrs:], *self._const_tail, stream=stream)
            return
        compiled = self.kernel[self.grid](*args, **self.constexprs, **self.options)
        if self._direct and not misaligned and compiled is not None and hasattr(compiled, "__getitem__"):
            self._runner = compiled[self.grid]  # loads the module: function and run exist from here
            self._raw = _raw_launch(compiled, self.grid, self._const_tail)


def _raw_launch(compiled: Any, grid: tuple[int, int, int], tail: tuple) -> tuple | None:
    """What the direct call needs, read once from a loaded compiled kernel: ``(run, *grid, function,
    packed_metadata, runtime_knobs, current_device, raw_stream, constexpr_tail)`` (the hook chains are read
    from the runtime knobs on every call, as Triton does); None where this Triton's compiled kernel lacks one
    of them or its hooks are not the chains this module reads (the runner is used then)."""
    global _knobs
    if _knobs is None:
        try:
            from triton import knobs as _knobs
        except ImportError:  # a Triton without knobs: the runner, hooks included
            return None
    hooks = getattr(_knobs, "runtime", None)
    if not all(hasattr(getattr(hooks, h, None), "calls") for h in ("launch_enter_hook", "launch_exit_hook")):
        return None
    parts = tuple(getattr(compiled, a, None) for a in ("run", "function", "packed_metadata"))
    if any(p is None for p in parts):
        return None
    run, function, meta = parts
    return (run, *grid, function, meta, hooks, torch._C._cuda_getDevice, _raw_stream, tail)
