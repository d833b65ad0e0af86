"""The eager chains of the row-norm family (the definition of their exact contracts), shared by
the ``<op>_torch`` backends and the exact kernel's fallback.

The eager chains, written once here and documented in the package README:

* ``layer_norm``: ``F.layer_norm(x, (D,), weight, bias, eps)`` with ``weight`` / ``bias``
  cast to x's dtype first when theirs differs (CUDA's LayerNorm refuses a mix; what a module
  cast to x's dtype holds).
* ``rms_norm``: the diffusers ``RMSNorm`` forward:
  ``var = x.float().pow(2).mean(-1, keepdim=True); h = x * torch.rsqrt(var + eps)`` (fp32);
  with a weight: ``h.to(weight.dtype)`` when the weight is bf16/fp16, then ``h * weight``,
  then ``+ bias``; without a weight: ``h.to(x.dtype)`` (then ``+ bias`` when one is given).
* ``ln_modulate`` / ``rms_modulate``: the norm above, then the adaLN chain of
  ``scale_shift``: ``h * (scale_offset + scale) + shift`` (each op in eager's own dtype), then
  ``.to(x.dtype)`` (a no-op for same-dtype modulation; Wan's ``.type_as(x)`` for fp32 mods).
* ``gated_residual_norm_modulate``: ``new_residual = residual + gate * update`` (eager, the
  ``gated_residual`` chain, then ``.to(residual.dtype)``), then the ``*_modulate`` chain on it.

With ``out_dtype`` an FP8 dtype, ``ln_modulate`` / ``rms_modulate`` return that chain's result
quantized per row (:func:`quantize_rows`: ``quantize_fp8``'s row-wise definition): ``(codes, scale)``.

Per-frame modulation ``[B, F, 1, D]`` is expanded to per-token rows (every element sees the
same values and the same ops as on x viewed as ``[B, F, L, D]``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_diffusion_core import broadcast_view, quantize_fp8_torch, row_geometry

_HALF = (torch.bfloat16, torch.float16)


def _ln_params(x: torch.Tensor, weight, bias):
    # CUDA's layer_norm refuses parameters in another dtype than x (CPU accepts fp32 with half x):
    # the chain casts them to x's dtype, the same on every device
    cast = lambda t: t if t is None or t.dtype == x.dtype else t.to(x.dtype)  # noqa: E731
    return cast(weight), cast(bias)


def _layer(x3: torch.Tensor, weight, bias, eps: float) -> torch.Tensor:
    w, b = _ln_params(x3, weight, bias)
    return F.layer_norm(x3, (x3.shape[-1],), w, b, eps)


def _rms(x3: torch.Tensor, weight, bias, eps: float) -> torch.Tensor:
    var = x3.to(torch.float32).pow(2).mean(-1, keepdim=True)
    h = x3 * torch.rsqrt(var + eps)
    if weight is not None:
        if weight.dtype in _HALF:
            h = h.to(weight.dtype)
        h = h * weight
    else:
        h = h.to(x3.dtype)
    if bias is not None:
        h = h + bias
    return h


_NORMS = {"layer": _layer, "rms": _rms}


def _modulate(h: torch.Tensor, g, scale, shift, scale_offset: float, out_dtype: torch.dtype) -> torch.Tensor:
    y = h * (scale_offset + broadcast_view(scale, g))
    if shift is not None:
        y = y + broadcast_view(shift, g)
    return y.to(out_dtype)


def _rows(x: torch.Tensor):
    g = row_geometry("x", x, [])
    return g, (x.unsqueeze(0) if g.is_2d else x)


def _done(y: torch.Tensor, g) -> torch.Tensor:
    return (y.squeeze(0) if g.is_2d else y).contiguous()


def norm_chain(norm: str, x, scale=None, shift=None, weight=None, bias=None, eps=1e-6, scale_offset=1.0):
    """The eager chain of one op of the family (``scale=None``: the plain norm)."""
    g, x3 = _rows(x)
    h = _NORMS[norm](x3, weight, bias, eps)
    if scale is not None:
        h = _modulate(h, g, scale, shift, scale_offset, x.dtype)
    return _done(h, g)


def gated_chain(
    residual, update, gate, scale, shift=None, norm="layer", weight=None, bias=None, eps=1e-6, scale_offset=1.0
):
    """The eager chain of ``gated_residual_norm_modulate``: ``(out, new_residual)``."""
    g, r3 = _rows(residual)
    u3 = update.unsqueeze(0) if g.is_2d else update
    t = u3 if gate is None else broadcast_view(gate, g) * u3
    new = (r3 + t).to(residual.dtype)
    h = _NORMS[norm](new, weight, bias, eps)
    out = _modulate(h, g, scale, shift, scale_offset, residual.dtype)
    return _done(out, g), _done(new, g)


def quantize_rows(y: torch.Tensor, fp8: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``y`` quantized per row to FP8 ``fp8`` (``quantize_fp8``'s row-wise definition, core's)."""
    return quantize_fp8_torch(y, fp8, "row")
