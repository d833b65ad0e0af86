"""A prepared Triton launch with a lean host path (imported by Triton backends only).

``kernel[grid](*args, **constexprs)`` re-binds and re-specializes every argument on every
call; with ~20 arguments that costs more host time than the kernel takes at image sizes.
A :class:`PreparedLaunch` fixes grid, constexprs and launch options once per call
signature and, after the first launch, calls the compiled kernel directly
(``CompiledKernel[grid](*args)``) while every pointer keeps the 16-byte alignment it was
specialized for. Any other call takes the regular JIT path, which re-specializes.

Contract for callers: integer arguments that are not in the kernel's
``do_not_specialize`` list must be the same on every call of one PreparedLaunch (they
are baked into the compiled kernel); derive them from the plan's shapes and strides.
"""

from __future__ import annotations

from typing import Any

import torch


class PreparedLaunch:
    def __init__(self, kernel: Any, grid: tuple[int, ...], constexprs: dict[str, Any], *,
                 num_warps: int, num_stages: int = 1, direct: bool = True) -> None:
        names = list(kernel.arg_names)
        n_const = len(constexprs)
        if set(names[len(names) - n_const:]) != set(constexprs):
            raise ValueError(f"{kernel.__name__}: constexprs {sorted(constexprs)} must be the trailing parameters")
        self.kernel = kernel
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.constexprs = constexprs
        self._const_tail = tuple(constexprs[n] for n in names[len(names) - n_const:])
        self.options = {"num_warps": num_warps, "num_stages": num_stages}
        self._direct = direct
        self._runner = None

    def __call__(self, *args: Any) -> None:
        runner = self._runner
        aligned = all(a.data_ptr() & 15 == 0 for a in args if isinstance(a, torch.Tensor))
        if runner is not None and aligned:
            runner(*args, *self._const_tail)
            return
        compiled = self.kernel[self.grid](*args, **self.constexprs, **self.options)
        if self._direct and aligned and compiled is not None and hasattr(compiled, "__getitem__"):
            self._runner = compiled[self.grid]
