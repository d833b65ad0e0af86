"""The family ops a mounted site calls, with the mount's quality and backend bound.

``Kernels(quality, backend)`` is what every mounted module holds: each method is the fused
form of one eager chain, written so that its eager chain is visible next to it. Where the
forced backend cannot serve an input (``can_use_*`` is False) the method runs that eager
chain instead (a site never raises where the unmounted model would not).

Exact mode uses only ops whose contract is ``torch.equal`` to the chain: ``scale_shift`` and
``gated_residual`` (bit-exact elementwise kernels) after the model's own norm module, and
``apply_rope(exact=True)``. Close mode also fuses the norm into the modulation
(``ln_modulate`` / ``rms_modulate``) and uses the close activation kernels.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_diffusion_core import is_compiling


def _layer_norm_params(norm: torch.nn.Module) -> tuple[float, torch.Tensor | None, torch.Tensor | None] | None:
    """``(eps, weight, bias)`` of a LayerNorm over the last dim (also diffusers' FP32LayerNorm), else None."""
    if isinstance(norm, torch.nn.LayerNorm) and len(norm.normalized_shape) == 1:
        return float(norm.eps), norm.weight, norm.bias
    return None


class Kernels:
    """Fused replacements for the eager chains of DiT blocks, for one quality and backend."""

    def __init__(self, quality: str, backend: str | None) -> None:
        self.quality = quality
        self.backend = backend
        self.exact = quality == "exact"
        # op -> [fused calls, eager-chain calls (the backend could not serve)], eager mode only
        self.counts: dict[str, list[int]] = {}

    def backend_for(self, op: str) -> str | None:
        """The backend asked of ``op``: a forced ``"triton"`` means the op's ``triton_exact`` variant
        where exact mode needs it and the op has one (``rope.apply_rope_qk``)."""
        if self.backend == "triton" and self.exact:
            from sgl_diffusion_core import REGISTRY

            if any(spec.backend == "triton_exact" for spec in REGISTRY.specs(op)):
                return "triton_exact"
        return self.backend

    def _count(self, op: str, fused: bool) -> bool:
        if not is_compiling():
            self.counts.setdefault(op, [0, 0])[0 if fused else 1] += 1
        return fused

    # ------------------------------------------------------------------ modulation
    def scale_shift(self, h: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None) -> torch.Tensor:
        """``h * (1 + scale) + shift``: bit-exact on every backend."""
        from sgl_diffusion_modulate import can_use_scale_shift, scale_shift

        ok = is_compiling() or can_use_scale_shift(h, scale, shift, backend=self.backend)
        if not self._count("modulate.scale_shift", ok):
            return h * (1 + scale) + shift if shift is not None else h * (1 + scale)
        return scale_shift(h, scale, shift, backend=self.backend)

    def gated_residual(self, residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """``residual + gate * update``: bit-exact on every backend."""
        from sgl_diffusion_modulate import can_use_gated_residual, gated_residual

        if not self._count("modulate.gated_residual",
                           is_compiling() or can_use_gated_residual(residual, update, gate, backend=self.backend)):
            return residual + gate * update
        return gated_residual(residual, update, gate, backend=self.backend)

    def norm_modulate(self, norm: torch.nn.Module, x: torch.Tensor, scale: torch.Tensor,
                      shift: torch.Tensor | None) -> torch.Tensor:
        """``norm(x) * (1 + scale) + shift``.

        exact: the model's own norm module, then ``scale_shift`` (the norm stays eager: the
        exact norm kernels reproduce CUDA's reduction order, not every device's);
        close: one ``ln_modulate`` pass (fp32 statistics, one rounding) for a LayerNorm.
        The result has the dtype of the eager chain.
        """
        params = None if self.exact else _layer_norm_params(norm)
        if params is not None:
            from sgl_diffusion_norm import can_use_ln_modulate, ln_modulate

            eps, weight, bias = params
            kw = {"weight": weight, "bias": bias, "eps": eps, "exact": False, "backend": self.backend}
            if self._count("norm.ln_modulate", is_compiling() or can_use_ln_modulate(x, scale, shift, **kw)):
                out = ln_modulate(x, scale, shift, **kw)
                return out.to(torch.promote_types(norm_out_dtype(norm, x), scale.dtype))
        return self.scale_shift(norm(x), scale, shift)

    # ------------------------------------------------------------------ activation
    def gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
        """``F.gelu(x, approximate="tanh")`` (close kernel; exact mode never mounts it)."""
        from sgl_diffusion_activation import can_use_gelu_tanh, gelu_tanh

        ok = is_compiling() or can_use_gelu_tanh(x, backend=self.backend, exact=False)
        if not self._count("activation.gelu_tanh", ok):
            return F.gelu(x, approximate="tanh")
        return gelu_tanh(x, backend=self.backend, exact=False)

    # ------------------------------------------------------------------ rope
    def rope_qk(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """diffusers' ``apply_rotary_emb(x, (cos, sin), sequence_dim=1)`` on q and k (``[B, S, H, D]``)
        with pair-wise (interleaved) real tables: ``(x.float() * cos + rotate_pairs(x).float() * sin)
        .to(x.dtype)``; exact mode: the bit-exact kernel."""
        from sgl_diffusion_rope import apply_rope_qk, can_use_apply_rope_qk

        kw = {"interleaved": True, "exact": self.exact, "backend": self.backend_for("rope.apply_rope_qk")}
        if not self._count("rope.apply_rope_qk", is_compiling() or can_use_apply_rope_qk(q, k, cos, sin, **kw)):
            return _rope_pairs_eager(q, cos, sin), _rope_pairs_eager(k, cos, sin)
        return apply_rope_qk(q, k, cos, sin, **kw)

    def qk_norm_rope(self, q: torch.Tensor, k: torch.Tensor, norm_q: torch.nn.Module, norm_k: torch.nn.Module,
                     cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``rope(norm_q(q)), rope(norm_k(k))``: one fused close pass (RMS per head, then the rotation)
        in close mode for RMS norms; the model's norms, then ``rope_qk``, otherwise."""
        eps = getattr(norm_q, "eps", None)
        fusable = (not self.exact and type(norm_q) is torch.nn.RMSNorm and type(norm_k) is torch.nn.RMSNorm
                   and eps is not None and eps == norm_k.eps)
        if fusable:
            from sgl_diffusion_rope import can_use_qk_norm_rope, qk_norm_rope

            kw = {"norm": "rms", "eps": float(eps), "interleaved": True, "inplace": False, "exact": False,
                  "backend": self.backend}
            ok = is_compiling() or can_use_qk_norm_rope(q, k, norm_q.weight, norm_k.weight, cos, sin, **kw)
            if self._count("rope.qk_norm_rope", ok):
                return qk_norm_rope(q, k, norm_q.weight, norm_k.weight, cos, sin, **kw)
        return self.rope_qk(norm_q(q), norm_k(k), cos, sin)


def norm_out_dtype(norm: torch.nn.Module, x: torch.Tensor) -> torch.dtype:
    """The dtype the eager norm module returns for x (FP32LayerNorm casts back to x's dtype)."""
    w = getattr(norm, "weight", None)
    if type(norm) is torch.nn.LayerNorm and w is not None:
        return torch.promote_types(x.dtype, w.dtype)
    return x.dtype


def _rope_pairs_eager(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """diffusers' real-table, pair-wise rotation (``use_real_unbind_dim=-1``), on ``[B, S, H, D]``."""
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
