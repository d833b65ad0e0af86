"""``ln_modulate``'s entry module (kept for its import path): the op lives in ``row_norm_api``."""

from __future__ import annotations

from .row_norm_api import (
    _DISPATCH,
    can_use_ln_modulate,
    describe_ln_modulate,
    ln_modulate,
    ln_modulate_reference,
)

OP = "norm.ln_modulate"
_dispatch = _DISPATCH["ln_modulate"]

__all__ = ["OP", "can_use_ln_modulate", "describe_ln_modulate", "ln_modulate", "ln_modulate_reference"]
