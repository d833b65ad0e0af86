"""The family ops a mounted site calls, with the mount's quality and backend bound.

``Kernels(quality, backend)`` is what every mounted module holds: each method is the fused
form of one eager chain, written so that its eager chain is visible next to it. Where the
forced backend cannot serve an input (``can_use_*`` is False) the method runs that eager
chain instead (a site never raises where the unmounted model would not).

Exact mode uses only ops whose contract is ``torch.equal`` to the chain: ``scale_shift`` and
``gated_residual`` (bit-exact elementwise kernels) after the model's own norm module,
``apply_rope(exact=True)`` (real tables) and ``joint_qkv_cat`` (data movement). Close mode also
fuses the norm into the modulation (``ln_modulate``), the per-head QK-norm into the rotation
(``qk_norm_rope``) or runs it alone (``qk_norm``), and uses the close activation kernels.

Under ``torch.compile`` tracing (``under_compile``): ``"fused"`` traces every op as its custom op;
``"auto"`` traces the eager chain of the ops in :data:`INDUCTOR_FUSES` (plain elementwise
arithmetic that inductor fuses itself, as fast as our kernels and into its neighbours) and keeps
the others; ``"eager"`` traces every eager chain. An op kept fused checks while tracing that its
inputs have the layout its kernels need (:func:`_last_dims_contiguous`): one that has not traces its
eager chain, as eager mode runs it.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

import sgl_diffusion_activation as _activation
import sgl_diffusion_attention as _attention
import sgl_diffusion_layout as _layout
import sgl_diffusion_modulate as _modulate
import sgl_diffusion_norm as _norm
import sgl_diffusion_rope as _rope
from sgl_diffusion_core import is_compiling

# The domains are imported here, not inside the methods below: dynamo traces these methods, and
# torch 2.11's dynamo graph-breaks on an import statement whose module is a domain package (its
# module class is a ``types.ModuleType`` subclass); attribute access on the module is traced.

UNDER_COMPILE = ("auto", "fused", "eager")

# Ops that ``under_compile="auto"`` traces as their eager chain. Each is plain elementwise arithmetic:
# inductor generates the same single pass (H200, bf16, FLUX / Wan / HunyuanVideo shapes, docs/benchmarks:
# ours at 0.91-1.01x of torch.compile for scale_shift and gated_residual, 0.94-0.96x for gelu_tanh) and,
# seeing the chain, also fuses it with its neighbours (the model's norm before a modulation, the next
# norm + modulation after a residual, the concat after the MLP activation), which an opaque custom op
# prevents. The ops not listed beat inductor or have nothing for it to fuse: RoPE (apply_rope 1.27-1.37x
# of compile), the one-pass norm + modulation (ln_modulate 1.77-2.6x), the per-head QK-norm (+ RoPE) (the
# same row-norm kernels; in place on q / k rows), the joint q / k / v concatenation (one launch; its
# inputs come from the rope / norm ops and the projections).
INDUCTOR_FUSES = frozenset({"modulate.scale_shift", "modulate.gated_residual", "activation.gelu_tanh"})


def compile_ops(ops: tuple[str, ...], under_compile: str) -> tuple[str, ...]:
    """The ops of ``ops`` that stay custom ops while ``torch.compile`` traces, under a policy."""
    if under_compile == "fused":
        return ops
    if under_compile == "eager":
        return ()
    return tuple(op for op in ops if op not in INDUCTOR_FUSES)


def _last_dims_contiguous(args: tuple) -> bool:
    """Whether every tensor of ``args`` has a contiguous last dim (stride 1, or size <= 1): the layout
    every kernel here needs, and the one a model's own data can break (HunyuanVideo's first double
    block gets the patch embedding as a transposed view). Dynamo traces it (static or symbolic
    shapes); the ops' ``can_use_*`` cannot be traced (they catch the error ``select_impl`` raises)."""
    for t in args:
        if isinstance(t, torch.Tensor) and t.dim() > 0 and t.shape[-1] > 1 and t.stride(-1) != 1:
            return False
    return True




def _layer_norm_params(norm: torch.nn.Module) -> tuple[float, torch.Tensor | None, torch.Tensor | None] | None:
    """``(eps, weight, bias)`` of a LayerNorm over the last dim (also diffusers' FP32LayerNorm), else None."""
    if isinstance(norm, torch.nn.LayerNorm) and len(norm.normalized_shape) == 1:
        return float(norm.eps), norm.weight, norm.bias
    return None


class Kernels:
    """Fused replacements for the eager chains of DiT blocks, for one quality and backend."""

    def __init__(self, quality: str, backend: str | None, under_compile: str = "auto") -> None:
        self.quality = quality
        self.backend = backend
        self.exact = quality == "exact"
        self.under_compile = under_compile
        # op -> [fused calls, eager-chain calls (the backend could not serve)], eager mode only
        self.counts: dict[str, list[int]] = {}
        # the last key-padding mask read on the host: (weakref to it, its version, its lens or None)
        self._mask_seen: tuple | None = None

    def backend_for(self, op: str) -> str | None:
        """The backend asked of ``op``: a forced ``"triton"`` means the op's ``triton_exact`` variant
        where exact mode needs it and the op has one (``rope.apply_rope_qk``)."""
        if self.backend == "triton" and self.exact:
            from sgl_diffusion_core import REGISTRY

            if any(spec.backend == "triton_exact" for spec in REGISTRY.specs(op)):
                return "triton_exact"
        return self.backend

    def _fuse(self, op: str, can_use, *args, backend: str | None = None, exact: bool | None = None,
              **kwargs) -> bool:
        """Whether this call of ``op`` runs its kernel (else its eager chain).

        Eager mode: ``can_use(*args, **kwargs, backend=, exact=)`` once per call signature (the op keeps the verdict),
        counted in ``counts``. While
        ``torch.compile`` traces: False for an op the policy traces eagerly, else whether every tensor
        argument has a contiguous last dim (:func:`_last_dims_contiguous`), so such an input (a
        transposed residual) traces the eager chain, as it runs eagerly, instead of failing in the
        op's fake implementation.
        """
        if is_compiling():
            return bool(compile_ops((op,), self.under_compile)) and _last_dims_contiguous(args)
        if exact is not None:
            kwargs["exact"] = exact
        ok = bool(can_use(*args, **kwargs, backend=backend))  # the op keeps its verdict per call signature
        self.counts.setdefault(op, [0, 0])[0 if ok else 1] += 1
        return ok

    # ------------------------------------------------------------------ modulation
    def scale_shift(self, h: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None) -> torch.Tensor:
        """``h * (1 + scale) + shift``: bit-exact on every backend."""
        can_use_scale_shift = _modulate.can_use_scale_shift
        scale_shift = _modulate.scale_shift

        if not self._fuse("modulate.scale_shift", can_use_scale_shift, h, scale, shift, backend=self.backend):
            return h * (1 + scale) + shift if shift is not None else h * (1 + scale)
        return scale_shift(h, scale, shift, backend=self.backend)

    def gated_residual(self, residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        """``residual + gate * update``: bit-exact on every backend."""
        can_use_gated_residual = _modulate.can_use_gated_residual
        gated_residual = _modulate.gated_residual

        if not self._fuse("modulate.gated_residual", can_use_gated_residual, residual, update, gate,
                          backend=self.backend):
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
            can_use_ln_modulate = _norm.can_use_ln_modulate
            ln_modulate = _norm.ln_modulate

            eps, weight, bias = params
            kw = {"weight": weight, "bias": bias, "eps": eps, "exact": False, "backend": self.backend}
            if self._fuse("norm.ln_modulate", can_use_ln_modulate, x, scale, shift, **kw):
                out = ln_modulate(x, scale, shift, **kw)
                return out.to(torch.promote_types(norm_out_dtype(norm, x), scale.dtype))
        return self.scale_shift(norm(x), scale, shift)

    # ------------------------------------------------------------------ activation
    def gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
        """``F.gelu(x, approximate="tanh")`` (close kernel; exact mode never mounts it)."""
        can_use_gelu_tanh = _activation.can_use_gelu_tanh
        gelu_tanh = _activation.gelu_tanh

        if not self._fuse("activation.gelu_tanh", can_use_gelu_tanh, x, backend=self.backend, exact=False):
            return F.gelu(x, approximate="tanh")
        return gelu_tanh(x, backend=self.backend, exact=False)

    # ------------------------------------------------------------------ rope
    def rope_qk(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor | None, *,
                inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """diffusers' pair-wise rotation of q and k (``[B, S, H, D]``): with real tables (``cos``, ``sin``
        ``[S, D]`` or ``[S, D/2]``) ``apply_rotary_emb(x, (cos, sin), sequence_dim=1)``, i.e.
        ``(x.float() * cos + rotate_pairs(x).float() * sin).to(x.dtype)``; with a complex64 ``cos``
        ``[S, D/2]`` (``sin=None``) Qwen-Image's ``view_as_real(view_as_complex(x.float()) * freqs)
        .type_as(x)`` (close mode only: the exact kernel takes real tables). exact mode: the bit-exact
        kernel. ``inplace``: q and k are overwritten (also by the eager chain) and returned."""
        apply_rope_qk = _rope.apply_rope_qk
        can_use_apply_rope_qk = _rope.can_use_apply_rope_qk

        kw = {"interleaved": True, "inplace": inplace, "exact": self.exact,
              "backend": self.backend_for("rope.apply_rope_qk")}
        if not self._fuse("rope.apply_rope_qk", can_use_apply_rope_qk, q, k, cos, sin, **kw):
            qo, ko = _rope_pairs_eager(q, cos, sin), _rope_pairs_eager(k, cos, sin)
            return (q.copy_(qo), k.copy_(ko)) if inplace else (qo, ko)
        return apply_rope_qk(q, k, cos, sin, **kw)

    def qk_norm_rope(self, q: torch.Tensor, k: torch.Tensor, norm_q: torch.nn.Module, norm_k: torch.nn.Module,
                     cos: torch.Tensor, sin: torch.Tensor | None, *,
                     inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``rope(norm_q(q)), rope(norm_k(k))``: one fused close pass (RMS per head, then the rotation)
        in close mode for two RMS norms (:func:`rms_pair`); the model's norms, then ``rope_qk``,
        otherwise. ``inplace`` (honoured on the fused path, where the result keeps q's dtype): q and k
        are overwritten and returned."""
        pair = None if self.exact else rms_pair(norm_q, norm_k, q, k)
        if pair is not None:
            can_use_qk_norm_rope = _rope.can_use_qk_norm_rope
            qk_norm_rope = _rope.qk_norm_rope

            eps, wq, wk = pair
            kw = {"norm": "rms", "eps": eps, "interleaved": True, "inplace": inplace, "exact": False,
                  "backend": self.backend}
            if self._fuse("rope.qk_norm_rope", can_use_qk_norm_rope, q, k, wq, wk, cos, sin, **kw):
                return qk_norm_rope(q, k, wq, wk, cos, sin, **kw)
            qo, ko = self.rope_qk(norm_q(q), norm_k(k), cos, sin, inplace=True)
            return (q.copy_(qo), k.copy_(ko)) if inplace else (qo, ko)
        return self.rope_qk(_apply(norm_q, q), _apply(norm_k, k), cos, sin)

    def qk_norm(self, q: torch.Tensor, k: torch.Tensor, norm_q: torch.nn.Module | None,
                norm_k: torch.nn.Module | None, *, inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``norm_q(q), norm_k(k)`` per head of ``[B, S, H, D]`` (a None norm: unchanged): one close
        ``qk_norm`` launch (fp32 statistics, one rounding) in close mode for two RMS norms
        (:func:`rms_pair`), the model's modules otherwise (exact mode: no exact per-head norm kernel).
        ``inplace`` (honoured on the fused path): q and k are overwritten and returned."""
        pair = None if self.exact else rms_pair(norm_q, norm_k, q, k)
        if pair is not None:
            can_use_qk_norm = _norm.can_use_qk_norm
            qk_norm = _norm.qk_norm

            eps, wq, wk = pair
            kw = {"norm": "rms", "eps": eps, "inplace": inplace, "exact": False, "backend": self.backend}
            if self._fuse("norm.qk_norm", can_use_qk_norm, q, k, wq, wk, **kw):
                return qk_norm(q, k, wq, wk, **kw)
            qo, ko = norm_q(q), norm_k(k)
            return (q.copy_(qo), k.copy_(ko)) if inplace else (qo, ko)
        return _apply(norm_q, q), _apply(norm_k, k)

    def qk_norm_rope_rows(self, q: torch.Tensor, k: torch.Tensor, norm_q: torch.nn.Module | None,
                          norm_k: torch.nn.Module | None, cos: torch.Tensor, sin: torch.Tensor | None,
                          n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``norm_q(q)``, ``norm_k(k)`` over every token of ``[B, S, H, D]``, then RoPE of the first ``n``
        tokens only (the image tokens of HunyuanVideo's joint sequence; ``n == S``: every token), as
        whole tensors, with no concatenation: q and k must be the caller's own (fresh projections),
        they may be overwritten.

        close with two RMS norms: ``qk_norm_rope`` on the first n tokens and ``qk_norm`` on the rest,
        both in place; otherwise the model's norms, then ``rope_qk`` in place on their first n tokens
        (the eager chain's values: ``cat([rope(norm(x)[:, :n]), norm(x)[:, n:]])``).
        """
        if not self.exact and rms_pair(norm_q, norm_k, q, k) is not None:
            self.qk_norm_rope(q[:, :n], k[:, :n], norm_q, norm_k, cos, sin, inplace=True)
            if n < q.shape[1]:
                self.qk_norm(q[:, n:], k[:, n:], norm_q, norm_k, inplace=True)
            return q, k
        q, k = _apply(norm_q, q), _apply(norm_k, k)
        self.rope_qk(q[:, :n], k[:, :n], cos, sin, inplace=True)
        return q, k

    # ------------------------------------------------------------------ attention
    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                  kv_lens: torch.Tensor | None = None) -> torch.Tensor | None:
        """``sgl_diffusion_attention.attention(q, k, v, kv_lens=kv_lens)`` on ``[B, S, H, Dh]`` (bshd, the
        projections' own layout: no transpose, no copy), or None where the caller must run the model's own
        attention (its eager chain): the op cannot serve the input, or, while ``torch.compile`` traces,
        ``under_compile="eager"``. The mount's forced backend is asked first where the op has it and it
        serves the input, else the op's own choice (on the CPU its ``torch`` backend)."""
        attn = _attention
        op = "attention.attention"
        if is_compiling():
            if not compile_ops((op,), self.under_compile):
                return None
            return attn.attention(q, k, v, kv_lens=kv_lens)
        for backend in dict.fromkeys((self.backend, None)):
            try:
                ok = attn.can_use_attention(q, k, v, kv_lens=kv_lens, backend=backend)
            except Exception:  # a backend name the op does not have
                ok = False
            if ok:
                self.counts.setdefault(op, [0, 0])[0] += 1
                return attn.attention(q, k, v, kv_lens=kv_lens, backend=backend)
        self.count_eager(op)
        return None

    def count_eager(self, op: str) -> None:
        """Count a call of ``op`` that ran the model's own chain (eager mode only)."""
        if not is_compiling():
            self.counts.setdefault(op, [0, 0])[1] += 1

    def key_padding_lens(self, mask: torch.Tensor, batch: int, offset: int = 0, *,
                         host: bool = False) -> torch.Tensor | bool | None:
        """``kv_lens`` (``[batch]`` int32: ``offset`` + the number of leading True entries) when the
        boolean ``mask`` (``[B, S]`` or ``[B, 1, 1, S]``, B 1 or ``batch``) is a pure key-padding mask,
        "the first n keys valid" per sample with n >= 1 and some key masked; None when every key is valid
        (dense attention); False otherwise (the caller runs the model's own attention with the mask:
        never a wrong answer). On the mask's device, or with ``host=True`` on the CPU (the attention op
        then slices the keys with no device read).

        The check reads the mask on the host. On the CPU that costs nothing; on a GPU it is one sync per
        mask object, not per call: the answer (the lengths on both sides) is cached on the mask (a weak
        reference and its version counter, so an in-place change is seen) and a model passes the same
        mask to every block of a forward (HunyuanVideo's joint mask, Qwen-Image's text mask). An inference
        tensor has no version counter: it is checked at every call. While ``torch.compile`` traces or a
        CUDA graph is captured nothing is read: False (the model's own masked attention is traced /
        captured).
        """
        if is_compiling() or not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            return False
        if mask.dim() == 4 and mask.shape[1] == 1 and mask.shape[2] == 1:
            mask = mask[:, 0, 0]
        if mask.dim() != 2 or mask.shape[0] not in (1, batch) or mask.shape[1] == 0:
            return False
        if mask.is_cuda and torch.cuda.is_current_stream_capturing():
            return False
        try:
            version: int | None = mask._version
        except RuntimeError:  # an inference tensor: no version counter, no cache
            version = None
        seen = self._mask_seen
        if version is not None and seen is not None and seen[0]() is mask and seen[1] == version:
            lens = seen[2]
        else:
            lens = _prefix_lens(mask)
            if version is not None:
                self._mask_seen = (weakref.ref(mask), version, lens)
        if not isinstance(lens, tuple):
            return lens  # False: not a key-padding prefix; None: every key valid
        lens = lens[1] if host else lens[0]
        return (lens + offset).expand(batch).contiguous() if lens.shape[0] != batch else lens + offset

    # ------------------------------------------------------------------ layout
    def joint_qkv_cat(self, img_q: torch.Tensor, img_k: torch.Tensor, img_v: torch.Tensor, txt_q: torch.Tensor,
                      txt_k: torch.Tensor, txt_v: torch.Tensor, *,
                      text_first: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``torch.cat([txt_j, img_j], dim=1)`` (``text_first=False``: image first) for j in q, k, v
        (``[B, S, H, D]``): one launch into one buffer, bit-exact (data movement); the three
        results are contiguous views of it."""
        can_use_joint_qkv_cat = _layout.can_use_joint_qkv_cat
        joint_qkv_cat = _layout.joint_qkv_cat

        args = (img_q, img_k, img_v, txt_q, txt_k, txt_v)
        kw = {"text_first": text_first, "backend": self.backend_for("layout.joint_qkv_cat")}
        if not self._fuse("layout.joint_qkv_cat", can_use_joint_qkv_cat, *args, **kw):
            pairs = ((txt_q, img_q), (txt_k, img_k), (txt_v, img_v))
            q, k, v = (torch.cat(p if text_first else p[::-1], dim=1) for p in pairs)
            return q, k, v
        out = joint_qkv_cat(*args, **kw)
        return out[0], out[1], out[2]


def _prefix_lens(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | bool | None:
    """The per-row count of True (int32; on the mask's device and on the CPU) when every row of the
    boolean ``[B, S]`` mask is n >= 1 True entries then only False, None when every entry is True, else
    False (one host read: two flags and the counts)."""
    lens = mask.sum(dim=1, dtype=torch.int32)
    prefix = torch.arange(mask.shape[1], device=mask.device)[None, :] < lens[:, None]
    flags = torch.stack([(prefix == mask).all() & (lens >= 1).all(), mask.all()]).to(torch.int32)
    ok, full, *counts = torch.cat([flags, lens]).tolist()
    return False if not ok else None if full else (lens, torch.tensor(counts, dtype=torch.int32))


def _apply(norm: torch.nn.Module | None, x: torch.Tensor) -> torch.Tensor:
    return x if norm is None else norm(x)


def _rms_params(norm: torch.nn.Module | None, x: torch.Tensor) -> tuple[float, torch.Tensor | None] | None:
    """``(eps, weight)`` of an RMS norm over the last dim whose eager output keeps x's dtype (as the
    fused kernels' does), else None: ``torch.nn.RMSNorm`` (returns x's dtype) or diffusers' ``RMSNorm``
    without bias and with no weight or one of x's dtype (with an fp32 weight it returns fp32 for a
    bf16 x)."""
    if type(norm) is torch.nn.RMSNorm:
        if norm.eps is None or len(norm.normalized_shape) != 1:
            return None
        return float(norm.eps), norm.weight
    if norm is None or type(norm).__name__ != "RMSNorm" or type(norm).__module__ != "diffusers.models.normalization":
        return None
    weight = norm.weight
    if getattr(norm, "bias", None) is not None or len(norm.dim) != 1:
        return None
    if weight is not None and weight.dtype != x.dtype:
        return None
    return float(norm.eps), weight


def rms_pair(norm_q: torch.nn.Module | None, norm_k: torch.nn.Module | None, q: torch.Tensor,
             k: torch.Tensor) -> tuple[float, torch.Tensor | None, torch.Tensor | None] | None:
    """``(eps, weight_q, weight_k)`` when both norms are RMS norms (:func:`_rms_params`) with one eps
    (the fused per-head kernels take one), else None."""
    pq, pk = _rms_params(norm_q, q), _rms_params(norm_k, k)
    if pq is None or pk is None or pq[0] != pk[0]:
        return None
    return pq[0], pq[1], pk[1]


def norm_out_dtype(norm: torch.nn.Module, x: torch.Tensor) -> torch.dtype:
    """The dtype the eager norm module returns for x (FP32LayerNorm casts back to x's dtype)."""
    w = getattr(norm, "weight", None)
    if type(norm) is torch.nn.LayerNorm and w is not None:
        return torch.promote_types(x.dtype, w.dtype)
    return x.dtype


def _rope_pairs_eager(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor | None) -> torch.Tensor:
    """diffusers' pair-wise rotation on ``[B, S, H, D]``: real tables (``use_real_unbind_dim=-1``) or a
    complex64 ``[S, D/2]`` freqs_cis (Qwen-Image's ``apply_rotary_emb_qwen(use_real=False)``)."""
    if cos.is_complex():
        x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(x_c * cos.unsqueeze(1)).flatten(3).type_as(x)
    assert sin is not None
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    x_real, x_imag = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(3)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)
