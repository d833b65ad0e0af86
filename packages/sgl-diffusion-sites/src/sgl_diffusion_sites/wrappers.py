"""Mounted modules: a subclass of the original module's class that shares its state.

``mount_module(original, Mixin, site, kernels)`` builds an instance of ``Mixin + type(original)``
without running ``__init__`` and shares the original's ``__dict__`` entries (the same
``_parameters``, ``_buffers``, ``_modules`` and hook dictionaries, the same child modules):
``isinstance`` checks, ``state_dict`` keys, ``.to()``, hooks and parameter identity are
unchanged, and ``unmount`` puts the original object back. The mixin's ``forward`` is the
fused form; ``self._sgl_ref(...)`` is the original class's ``forward`` (the eager chain).

Not shared: ``_compiled_call_impl``, which ``Module.compile()`` (and diffusers'
``compile_repeated_blocks``) set on the original. It is ``torch.compile`` of the original's bound
``_call_impl``: a twin that kept it would run the original's compiled forward, never its own. The
twin starts uncompiled (``compile_repeated_blocks`` of this package compiles it again); the
original keeps its compiled forward, which ``unmount`` puts back with it.
"""

from __future__ import annotations

from typing import Any

import torch

from .kernels import Kernels
from .report import Site

_CLASSES: dict[tuple[type, type], type] = {}


def mounted_class(orig_cls: type, mixin: type) -> type:
    key = (orig_cls, mixin)
    if key not in _CLASSES:
        # the original forward as a plain function on the class (``self._sgl_ref(...)`` binds it);
        # dynamo cannot trace ``type(x).forward`` of a class marked allow-in-graph
        _CLASSES[key] = type(f"Mounted{orig_cls.__name__}", (mixin, orig_cls),
                             {"__module__": __name__, "_sgl_ref": orig_cls.forward})
    return _CLASSES[key]


def mount_module(original: torch.nn.Module, mixin: type, site: Site, kernels: Kernels) -> torch.nn.Module:
    cls = mounted_class(type(original), mixin)
    w = cls.__new__(cls)
    w.__dict__.update(original.__dict__)
    w.__dict__.pop("_compiled_call_impl", None)  # the original's compiled forward (see the module doc)
    # plain attributes, not registered submodules: the original stays out of the module tree
    object.__setattr__(w, "_sgl_original", original)
    object.__setattr__(w, "_sgl_site", site)
    object.__setattr__(w, "_sgl_k", kernels)
    return w


def original_of(module: torch.nn.Module) -> torch.nn.Module | None:
    return module.__dict__.get("_sgl_original")


def is_compiled(module: torch.nn.Module) -> bool:
    """Whether ``Module.compile()`` was called on this module (its calls run a compiled forward)."""
    return module.__dict__.get("_compiled_call_impl") is not None


class _Mounted:
    _sgl_original: torch.nn.Module
    _sgl_site: Site
    _sgl_k: Kernels
    _sgl_ref: Any  # the original class's forward (set per mounted class)


# ---------------------------------------------------------------------------- adaLN modules
class MountedAdaLNZero(_Mounted):
    """diffusers ``AdaLayerNormZero``: ``norm(x) * (1 + scale_msa) + shift_msa`` and the 5 other chunks."""

    def forward(self, x, timestep=None, class_labels=None, hidden_dtype=None, emb=None):
        def fused():
            e = emb
            if self.emb is not None:
                e = self.emb(timestep, class_labels, hidden_dtype=hidden_dtype)
            e = self.linear(self.silu(e))
            shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = e.chunk(6, dim=1)
            h = self._sgl_k.norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None])
            return h, gate_msa, shift_mlp, scale_mlp, gate_mlp

        def ref():
            return self._sgl_ref(x, timestep, class_labels, hidden_dtype, emb)

        return self._sgl_site.run(fused, ref, x, emb, timestep, class_labels, hidden_dtype, module=self)


class MountedAdaLNZeroSingle(_Mounted):
    """diffusers ``AdaLayerNormZeroSingle``: ``norm(x) * (1 + scale) + shift``, and the gate."""

    def forward(self, x, emb=None):
        def fused():
            e = self.linear(self.silu(emb))
            shift_msa, scale_msa, gate_msa = e.chunk(3, dim=1)
            return self._sgl_k.norm_modulate(self.norm, x, scale_msa[:, None], shift_msa[:, None]), gate_msa

        return self._sgl_site.run(fused, lambda: self._sgl_ref(x, emb), x, emb, module=self)


class MountedAdaLNContinuous(_Mounted):
    """diffusers ``AdaLayerNormContinuous``: ``norm(x) * (1 + scale)[:, None] + shift[:, None]``."""

    def forward(self, x, conditioning_embedding):
        def fused():
            e = self.linear(self.silu(conditioning_embedding).to(x.dtype))
            scale, shift = torch.chunk(e, 2, dim=1)
            return self._sgl_k.norm_modulate(self.norm, x, scale[:, None, :], shift[:, None, :])

        return self._sgl_site.run(fused, lambda: self._sgl_ref(x, conditioning_embedding), x, conditioning_embedding,
                                  module=self)


# ---------------------------------------------------------------------------- activations
class MountedGELUProj(_Mounted):
    """diffusers ``GELU`` (``proj`` then ``F.gelu(approximate="tanh")``): the activation kernel."""

    def forward(self, hidden_states):
        return self._sgl_site.run(lambda: self._sgl_k.gelu_tanh(self.proj(hidden_states)),
                                  lambda: self._sgl_ref(hidden_states), hidden_states, module=self)


class MountedGELUTanh(_Mounted):
    """``nn.GELU(approximate="tanh")``: the activation kernel."""

    def forward(self, input):
        return self._sgl_site.run(lambda: self._sgl_k.gelu_tanh(input), lambda: self._sgl_ref(input), input,
                                  module=self)


# ---------------------------------------------------------------------------- blocks
class MountedFluxBlock(_Mounted):
    """``FluxTransformerBlock``: the four gated residuals and the two inline ``norm2`` modulations."""

    def forward(self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None,
                joint_attention_kwargs=None):
        k = self._sgl_k

        def fused():
            h, e = hidden_states, encoder_hidden_states
            norm_h, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(h, emb=temb)
            norm_e, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(e, emb=temb)
            outs = self.attn(hidden_states=norm_h, encoder_hidden_states=norm_e,
                             image_rotary_emb=image_rotary_emb, **(joint_attention_kwargs or {}))
            attn_output, context_attn_output = outs[0], outs[1]
            h = k.gated_residual(h, attn_output, gate_msa[:, None])
            norm_h = k.norm_modulate(self.norm2, h, scale_mlp[:, None], shift_mlp[:, None])
            h = k.gated_residual(h, self.ff(norm_h), gate_mlp[:, None])
            if len(outs) == 3:
                h = h + outs[2]
            e = k.gated_residual(e, context_attn_output, c_gate_msa[:, None])
            norm_e = k.norm_modulate(self.norm2_context, e, c_scale_mlp[:, None], c_shift_mlp[:, None])
            e = k.gated_residual(e, self.ff_context(norm_e), c_gate_mlp[:, None])
            if e.dtype == torch.float16:
                e = e.clip(-65504, 65504)
            return e, h

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, image_rotary_emb, joint_attention_kwargs)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, image_rotary_emb, module=self)


class MountedFluxSingleBlock(_Mounted):
    """``FluxSingleTransformerBlock``: the gated residual ``residual + gate * proj_out(...)``."""

    def forward(self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None,
                joint_attention_kwargs=None):
        def fused():
            text_seq_len = encoder_hidden_states.shape[1]
            h = torch.cat([encoder_hidden_states, hidden_states], dim=1)
            residual = h
            norm_h, gate = self.norm(h, emb=temb)
            mlp_h = self.act_mlp(self.proj_mlp(norm_h))
            attn_output = self.attn(hidden_states=norm_h, image_rotary_emb=image_rotary_emb,
                                    **(joint_attention_kwargs or {}))
            h = torch.cat([attn_output, mlp_h], dim=2)
            h = self._sgl_k.gated_residual(residual, self.proj_out(h), gate[:, None])
            if h.dtype == torch.float16:
                h = h.clip(-65504, 65504)
            return h[:, :text_seq_len], h[:, text_seq_len:]

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, image_rotary_emb, joint_attention_kwargs)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, image_rotary_emb, module=self)


class MountedWanBlock(_Mounted):
    """``WanTransformerBlock``: the inline ``norm1`` / ``norm3`` modulations and the two gated residuals."""

    def forward(self, hidden_states, encoder_hidden_states, temb, rotary_emb):
        k = self._sgl_k

        def fused():
            h = hidden_states
            if temb.ndim == 4:
                chunks = (self.scale_shift_table.unsqueeze(0) + temb.float()).chunk(6, dim=2)
                chunks = [c.squeeze(2) for c in chunks]
            else:
                chunks = (self.scale_shift_table + temb.float()).chunk(6, dim=1)
            shift_msa, scale_msa, gate_msa, c_shift_msa, c_scale_msa, c_gate_msa = chunks
            norm_h = self._wan_modulate(self.norm1, h, scale_msa, shift_msa)
            attn_output = self.attn1(norm_h, None, None, rotary_emb)
            h = k.gated_residual(h, attn_output, gate_msa).type_as(h)
            norm_h = self.norm2(h.float()).type_as(h)
            h = h + self.attn2(norm_h, encoder_hidden_states, None, None)
            norm_h = self._wan_modulate(self.norm3, h, c_scale_msa, c_shift_msa)
            return k.gated_residual(h, self.ffn(norm_h), c_gate_msa).type_as(h)

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, rotary_emb)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, rotary_emb, module=self)

    def _wan_modulate(self, norm, h, scale, shift):
        """``(norm(h.float()) * (1 + scale) + shift).type_as(h)``."""
        k = self._sgl_k
        if not k.exact:
            return k.norm_modulate(norm, h, scale, shift).type_as(h)
        return k.scale_shift(norm(h.float()), scale, shift).type_as(h)


# ---------------------------------------------------------------------------- attention processors
class MountedFluxAttnProcessor:
    """diffusers ``FluxAttnProcessor`` with RoPE (and, in close mode, QK-norm + RoPE) fused.

    Set on the attention module with ``set_processor``; the original processor object is kept
    and put back by ``unmount``. The text + image concatenation and the attention itself stay
    as diffusers does them (``dispatch_attention_fn``, so attention backends still apply).
    """

    kind = "qk_norm_rope"  # the report's site kind

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        """The ops the mounted processor calls on ``attn`` (a tuple), or why it stays eager (a str)."""
        return ("rope.apply_rope_qk",) if exact else ("rope.qk_norm_rope", "rope.apply_rope_qk")

    def __init__(self, original: Any, site: Site, kernels: Kernels) -> None:
        self._sgl_original = original
        self._sgl_site = site
        self._sgl_k = kernels
        self._attention_backend = getattr(original, "_attention_backend", None)
        self._parallel_config = getattr(original, "_parallel_config", None)

    def _route(self, attn, handled: bool, *args):
        """``self._fused(attn, *args)`` through the site's gate when the call is one this processor
        handles, the original processor otherwise. ``args``: the call's arguments after ``attn``,
        in the original's order (the subclasses spell out the original's signature, which
        diffusers inspects to filter keyword arguments)."""
        def ref():
            return self._sgl_original(attn, *args)

        if not handled:
            return ref()
        return self._sgl_site.run(lambda: self._fused(attn, *args), ref, *args, module=attn)

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None,
                 image_rotary_emb=None):
        return self._route(attn, isinstance(image_rotary_emb, tuple), hidden_states, encoder_hidden_states,
                           attention_mask, image_rotary_emb)

    def _fused(self, attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb):
        from diffusers.models.attention_dispatch import dispatch_attention_fn
        from diffusers.models.transformers.transformer_flux import _get_qkv_projections

        k = self._sgl_k
        cos, sin = image_rotary_emb
        query, key, value, encoder_query, encoder_key, encoder_value = _get_qkv_projections(
            attn, hidden_states, encoder_hidden_states)
        query = query.unflatten(-1, (-1, attn.head_dim))
        key = key.unflatten(-1, (-1, attn.head_dim))
        value = value.unflatten(-1, (-1, attn.head_dim))
        if attn.added_kv_proj_dim is not None:
            # text and image are normalized by different norms before the joint concat: the
            # rotation runs on the concatenated sequence
            query, key = attn.norm_q(query), attn.norm_k(key)
            encoder_query = encoder_query.unflatten(-1, (-1, attn.head_dim))
            encoder_key = encoder_key.unflatten(-1, (-1, attn.head_dim))
            encoder_value = encoder_value.unflatten(-1, (-1, attn.head_dim))
            encoder_query = attn.norm_added_q(encoder_query)
            encoder_key = attn.norm_added_k(encoder_key)
            query = torch.cat([encoder_query, query], dim=1)
            key = torch.cat([encoder_key, key], dim=1)
            value = torch.cat([encoder_value, value], dim=1)
            query, key = k.rope_qk(query, key, cos, sin)
        else:
            query, key = k.qk_norm_rope(query, key, attn.norm_q, attn.norm_k, cos, sin)
        hidden_states = dispatch_attention_fn(query, key, value, attn_mask=attention_mask,
                                              backend=self._attention_backend, parallel_config=self._parallel_config)
        hidden_states = hidden_states.flatten(2, 3).to(query.dtype)
        if encoder_hidden_states is not None:
            encoder_hidden_states, hidden_states = hidden_states.split_with_sizes(
                [encoder_hidden_states.shape[1], hidden_states.shape[1] - encoder_hidden_states.shape[1]], dim=1)
            hidden_states = attn.to_out[0](hidden_states.contiguous())
            hidden_states = attn.to_out[1](hidden_states)
            encoder_hidden_states = attn.to_add_out(encoder_hidden_states.contiguous())
            return hidden_states, encoder_hidden_states
        return hidden_states


class MountedWanAttnProcessor(MountedFluxAttnProcessor):
    """diffusers ``WanAttnProcessor`` with its pair-wise RoPE fused (``x1 * cos - x2 * sin``,
    ``x1 * sin + x2 * cos`` is the rotate-pairs chain: ``a - b`` and ``a + (-b)`` are the same IEEE
    operation). Wan's QK-norm normalizes across heads (over the whole inner dim), which the per-head
    ``qk_norm`` kernels do not cover: it stays eager; so do the image-conditioning branch (I2V) and
    the attention itself."""

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        if getattr(attn, "is_cross_attention", False):
            return "cross-attention: no RoPE here; its QK-norm stays eager"
        if getattr(attn, "add_k_proj", None) is not None:
            return "image-conditioned (I2V) attention: no processor site for it yet; RoPE stays eager"
        return ("rope.apply_rope_qk",)

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, rotary_emb=None):
        return self._route(attn, rotary_emb is not None and attn.add_k_proj is None, hidden_states,
                           encoder_hidden_states, attention_mask, rotary_emb)

    def _fused(self, attn, hidden_states, encoder_hidden_states, attention_mask, rotary_emb):
        from diffusers.models.attention_dispatch import dispatch_attention_fn
        from diffusers.models.transformers.transformer_wan import _get_qkv_projections

        query, key, value = _get_qkv_projections(attn, hidden_states, encoder_hidden_states)
        query = attn.norm_q(query)
        key = attn.norm_k(key)
        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))
        cos, sin = rotary_emb  # [1, S, 1, D], one angle per pair, repeated per element
        query, key = self._sgl_k.rope_qk(query, key, cos[0, :, 0], sin[0, :, 0])
        hidden_states = dispatch_attention_fn(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
            backend=self._attention_backend,
            parallel_config=(self._parallel_config if encoder_hidden_states is None else None))
        hidden_states = hidden_states.flatten(2, 3).type_as(query)
        hidden_states = attn.to_out[0](hidden_states)
        return attn.to_out[1](hidden_states)


class MountedHunyuanVideoAttnProcessor(MountedFluxAttnProcessor):
    """diffusers ``HunyuanVideoAttnProcessor2_0``: per-head QK-norm, RoPE of the image tokens (real
    ``[S, D]`` tables, adjacent pairs: Flux's convention), joint image + text attention.

    Double blocks (``add_q_proj``): image q/k normalized and rotated, text q/k normalized, then
    ``cat([image, text])`` of q, k and v: one ``joint_qkv_cat(text_first=False)``. Single blocks:
    q/k/v are projected from the joint sequence and normalized, and only the image rows rotate: the
    eager ``cat([rope(x[:, :-S_txt]), x[:, -S_txt:]])`` becomes RoPE in place on those rows (no
    concatenation). exact: the model's norms, then ``apply_rope_qk(exact=True)``; close:
    ``qk_norm_rope`` on the image rows, ``qk_norm`` on the text rows / text stream. The attention
    stays ``dispatch_attention_fn``.
    """

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        ops = ("rope.apply_rope_qk",) if exact else ("rope.qk_norm_rope", "norm.qk_norm")
        return ops + ("layout.joint_qkv_cat",) if attn.add_q_proj is not None else ops

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, image_rotary_emb=None):
        return self._route(attn, encoder_hidden_states is not None and isinstance(image_rotary_emb, tuple),
                           hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb)

    def _fused(self, attn, hidden_states, encoder_hidden_states, attention_mask, image_rotary_emb):
        from diffusers.models.attention_dispatch import dispatch_attention_fn

        k = self._sgl_k
        cos, sin = image_rotary_emb
        s_txt = encoder_hidden_states.shape[1]
        double = attn.add_q_proj is not None
        if not double:
            hidden_states = torch.cat([hidden_states, encoder_hidden_states], dim=1)
        query = attn.to_q(hidden_states).unflatten(2, (attn.heads, -1))
        key = attn.to_k(hidden_states).unflatten(2, (attn.heads, -1))
        value = attn.to_v(hidden_states).unflatten(2, (attn.heads, -1))
        n_img = query.shape[1] if double else query.shape[1] - s_txt
        query, key = k.qk_norm_rope_rows(query, key, attn.norm_q, attn.norm_k, cos, sin, n_img)
        if double:
            encoder_query = attn.add_q_proj(encoder_hidden_states).unflatten(2, (attn.heads, -1))
            encoder_key = attn.add_k_proj(encoder_hidden_states).unflatten(2, (attn.heads, -1))
            encoder_value = attn.add_v_proj(encoder_hidden_states).unflatten(2, (attn.heads, -1))
            encoder_query, encoder_key = k.qk_norm(encoder_query, encoder_key, attn.norm_added_q,
                                                   attn.norm_added_k, inplace=True)
            query, key, value = k.joint_qkv_cat(query, key, value, encoder_query, encoder_key, encoder_value,
                                                text_first=False)
        hidden_states = dispatch_attention_fn(query, key, value, attn_mask=attention_mask, dropout_p=0.0,
                                              is_causal=False, backend=self._attention_backend,
                                              parallel_config=self._parallel_config)
        hidden_states = hidden_states.flatten(2, 3).to(query.dtype)
        hidden_states, encoder_hidden_states = hidden_states[:, :-s_txt], hidden_states[:, -s_txt:]
        if getattr(attn, "to_out", None) is not None:
            hidden_states = attn.to_out[0](hidden_states)
            hidden_states = attn.to_out[1](hidden_states)
        if getattr(attn, "to_add_out", None) is not None:
            encoder_hidden_states = attn.to_add_out(encoder_hidden_states)
        return hidden_states, encoder_hidden_states


class MountedQwenImageAttnProcessor(MountedFluxAttnProcessor):
    """diffusers ``QwenDoubleStreamAttnProcessor2_0``: per-head QK-norm of the image and text streams,
    RoPE with complex64 freqs (adjacent pairs), then ``cat([text, image])`` of q, k and v: one
    ``joint_qkv_cat(text_first=True)``.

    Eager's rotation is a complex64 product, which CUDA contracts into FMAs (``fma(a, c, -(b * d))``,
    ``fma(a, d, b * c)``: measured on an H200, torch 2.11; the CPU's product has no FMA). The exact
    rope kernel has none, so it would match on the CPU only and fall back on every GPU: in exact mode
    the norms and the rotation stay the model's own and the concatenation alone is fused. close:
    ``qk_norm_rope`` with the complex table on each stream, then the concatenation.
    """

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        return ("layout.joint_qkv_cat",) if exact else ("rope.qk_norm_rope", "layout.joint_qkv_cat")

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, encoder_hidden_states_mask=None,
                 attention_mask=None, image_rotary_emb=None):
        def ref():
            return self._sgl_original(attn, hidden_states, encoder_hidden_states, encoder_hidden_states_mask,
                                      attention_mask, image_rotary_emb)

        complex_pair = (isinstance(image_rotary_emb, tuple) and len(image_rotary_emb) == 2
                        and all(isinstance(f, torch.Tensor) and f.is_complex() for f in image_rotary_emb))
        if encoder_hidden_states is None or attention_mask is not None or not (
                image_rotary_emb is None or complex_pair):
            return ref()  # the original raises (no text stream, an external mask) or an unknown table

        def fused():
            return self._fused(attn, hidden_states, encoder_hidden_states, encoder_hidden_states_mask,
                               image_rotary_emb)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, encoder_hidden_states_mask,
                                  image_rotary_emb, module=attn)

    def _fused(self, attn, hidden_states, encoder_hidden_states, encoder_hidden_states_mask, image_rotary_emb):
        from diffusers.models.attention_dispatch import dispatch_attention_fn
        from diffusers.models.transformers.transformer_qwenimage import apply_rotary_emb_qwen

        k = self._sgl_k
        attention_mask = None
        if encoder_hidden_states_mask is not None:
            image_mask = torch.ones((hidden_states.shape[0], hidden_states.shape[1]), dtype=torch.bool,
                                    device=hidden_states.device)
            attention_mask = torch.cat([encoder_hidden_states_mask, image_mask], dim=1)[:, None, None, :]
        seq_txt = encoder_hidden_states.shape[1]
        head_dim = attn.inner_dim // attn.heads
        img_q, img_k, img_v = (p(hidden_states).unflatten(-1, (-1, head_dim))
                               for p in (attn.to_q, attn.to_k, attn.to_v))
        txt_q, txt_k, txt_v = (p(encoder_hidden_states).unflatten(-1, (-1, head_dim))
                               for p in (attn.add_q_proj, attn.add_k_proj, attn.add_v_proj))
        if image_rotary_emb is not None and not k.exact:
            img_freqs, txt_freqs = image_rotary_emb
            img_q, img_k = k.qk_norm_rope_rows(img_q, img_k, attn.norm_q, attn.norm_k, img_freqs, None,
                                               img_q.shape[1])
            txt_q, txt_k = k.qk_norm_rope_rows(txt_q, txt_k, attn.norm_added_q, attn.norm_added_k, txt_freqs, None,
                                               txt_q.shape[1])
        else:  # exact mode: the model's norms (no exact per-head norm kernel) and eager's complex rotation
            img_q, img_k = k.qk_norm(img_q, img_k, attn.norm_q, attn.norm_k, inplace=True)
            txt_q, txt_k = k.qk_norm(txt_q, txt_k, attn.norm_added_q, attn.norm_added_k, inplace=True)
            if image_rotary_emb is not None:
                img_freqs, txt_freqs = image_rotary_emb
                img_q = apply_rotary_emb_qwen(img_q, img_freqs, use_real=False)
                img_k = apply_rotary_emb_qwen(img_k, img_freqs, use_real=False)
                txt_q = apply_rotary_emb_qwen(txt_q, txt_freqs, use_real=False)
                txt_k = apply_rotary_emb_qwen(txt_k, txt_freqs, use_real=False)
        joint_query, joint_key, joint_value = k.joint_qkv_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v,
                                                              text_first=True)
        out = dispatch_attention_fn(joint_query, joint_key, joint_value, attn_mask=attention_mask, dropout_p=0.0,
                                    is_causal=False, backend=self._attention_backend,
                                    parallel_config=self._parallel_config)
        out = out.flatten(2, 3).to(joint_query.dtype)
        txt_out, img_out = out[:, :seq_txt, :], out[:, seq_txt:, :]
        img_out = attn.to_out[0](img_out.contiguous())
        if len(attn.to_out) > 1:
            img_out = attn.to_out[1](img_out)
        txt_out = attn.to_add_out(txt_out.contiguous())
        return img_out, txt_out


class MountedSD3AttnProcessor(MountedFluxAttnProcessor):
    """diffusers ``JointAttnProcessor2_0`` of SD3 / SD3.5 with ``qk_norm``: per-head QK-norm (no RoPE),
    then ``cat([image, text])`` of q, k and v. Close mode only: one ``qk_norm`` launch per stream
    (q and k together, in place) and ``joint_qkv_cat``; attention stays ``F.scaled_dot_product_attention``
    (it then reads ``[B, H, S, D]`` views of ``[B, S, H, D]`` memory instead of eager's contiguous
    concatenation)."""

    kind = "qk_norm"

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        if exact:
            return ("exact mode keeps it eager: no exact per-head QK-norm kernel to verify (norm.qk_norm's "
                    "exact backend is the eager chain itself; the exact RMS row kernel reproduces CUDA's "
                    "reduction order only for rows wider than 128 and has not run on a GPU), no RoPE, and "
                    "eager's concat gives SDPA contiguous [B, H, S, D] q/k/v where joint_qkv_cat writes "
                    "[B, S, H, D]; quality='close' mounts it")
        return ("norm.qk_norm", "layout.joint_qkv_cat") if attn.add_q_proj is not None else ("norm.qk_norm",)

    def __call__(self, attn, hidden_states, encoder_hidden_states=None, attention_mask=None, *args, **kwargs):
        def ref():
            return self._sgl_original(attn, hidden_states, encoder_hidden_states, attention_mask, *args, **kwargs)

        def fused():
            return self._fused(attn, hidden_states, encoder_hidden_states)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, module=attn)

    def _fused(self, attn, hidden_states, encoder_hidden_states):
        k = self._sgl_k
        batch_size, s_img = hidden_states.shape[0], hidden_states.shape[1]
        query, key, value = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
        head_dim = key.shape[-1] // attn.heads
        query, key, value = (t.view(batch_size, -1, attn.heads, head_dim) for t in (query, key, value))
        query, key = k.qk_norm(query, key, attn.norm_q, attn.norm_k, inplace=True)
        if encoder_hidden_states is not None:
            e_q, e_k, e_v = (p(encoder_hidden_states).view(batch_size, -1, attn.heads, head_dim)
                             for p in (attn.add_q_proj, attn.add_k_proj, attn.add_v_proj))
            e_q, e_k = k.qk_norm(e_q, e_k, attn.norm_added_q, attn.norm_added_k, inplace=True)
            query, key, value = k.joint_qkv_cat(query, key, value, e_q, e_k, e_v, text_first=False)
        hidden_states = torch.nn.functional.scaled_dot_product_attention(
            query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        hidden_states = hidden_states.to(query.dtype)
        if encoder_hidden_states is not None:
            hidden_states, encoder_hidden_states = hidden_states[:, :s_img], hidden_states[:, s_img:]
            if not attn.context_pre_only:
                encoder_hidden_states = attn.to_add_out(encoder_hidden_states)
        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        if encoder_hidden_states is not None:
            return hidden_states, encoder_hidden_states
        return hidden_states


class MountedHunyuanVideoBlock(_Mounted):
    """``HunyuanVideoTransformerBlock``: the four gated residuals and the two inline ``norm2`` modulations
    (``x + y * gate`` is ``x + gate * y``: IEEE multiplication commutes)."""

    def forward(self, hidden_states, encoder_hidden_states, temb, attention_mask=None, freqs_cis=None,
                *args, **kwargs):
        k = self._sgl_k

        def fused():
            h, e = hidden_states, encoder_hidden_states
            norm_h, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(h, emb=temb)
            norm_e, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(e, emb=temb)
            attn_output, context_attn_output = self.attn(hidden_states=norm_h, encoder_hidden_states=norm_e,
                                                         attention_mask=attention_mask, image_rotary_emb=freqs_cis)
            h = k.gated_residual(h, attn_output, gate_msa[:, None])
            e = k.gated_residual(e, context_attn_output, c_gate_msa[:, None])
            norm_h = k.norm_modulate(self.norm2, h, scale_mlp[:, None], shift_mlp[:, None])
            norm_e = k.norm_modulate(self.norm2_context, e, c_scale_mlp[:, None], c_shift_mlp[:, None])
            h = k.gated_residual(h, self.ff(norm_h), gate_mlp[:, None])
            e = k.gated_residual(e, self.ff_context(norm_e), c_gate_mlp[:, None])
            return h, e

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, attention_mask, freqs_cis, *args, **kwargs)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, attention_mask, freqs_cis,
                                  module=self)


class MountedHunyuanVideoSingleBlock(_Mounted):
    """``HunyuanVideoSingleTransformerBlock``: the gated residual ``gate * proj_out(...) + residual``."""

    def forward(self, hidden_states, encoder_hidden_states, temb, attention_mask=None, image_rotary_emb=None,
                *args, **kwargs):
        def fused():
            text_seq_length = encoder_hidden_states.shape[1]
            h = torch.cat([hidden_states, encoder_hidden_states], dim=1)
            residual = h
            norm_h, gate = self.norm(h, emb=temb)
            mlp_h = self.act_mlp(self.proj_mlp(norm_h))
            attn_output, context_attn_output = self.attn(
                hidden_states=norm_h[:, :-text_seq_length, :], encoder_hidden_states=norm_h[:, -text_seq_length:, :],
                attention_mask=attention_mask, image_rotary_emb=image_rotary_emb)
            attn_output = torch.cat([attn_output, context_attn_output], dim=1)
            h = torch.cat([attn_output, mlp_h], dim=2)
            h = self._sgl_k.gated_residual(residual, self.proj_out(h), gate[:, None])
            return h[:, :-text_seq_length, :], h[:, -text_seq_length:, :]

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, attention_mask, image_rotary_emb,
                                 *args, **kwargs)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, attention_mask,
                                  image_rotary_emb, module=self)


class MountedSD35AdaLNZeroX(_Mounted):
    """diffusers ``SD35AdaLayerNormZeroX``: one norm, two modulations of it (attention and the dual attention)."""

    def forward(self, hidden_states, emb=None):
        def fused():
            e = self.linear(self.silu(emb))
            (shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp, shift_msa2, scale_msa2,
             gate_msa2) = e.chunk(9, dim=1)
            norm_h = self.norm(hidden_states)
            k = self._sgl_k
            h = k.scale_shift(norm_h, scale_msa[:, None], shift_msa[:, None])
            h2 = k.scale_shift(norm_h, scale_msa2[:, None], shift_msa2[:, None])
            return h, gate_msa, shift_mlp, scale_mlp, gate_mlp, h2, gate_msa2

        return self._sgl_site.run(fused, lambda: self._sgl_ref(hidden_states, emb), hidden_states, emb, module=self)


class MountedSD3Block(_Mounted):
    """SD3's ``JointTransformerBlock``: the gated residuals and the inline ``norm2`` modulations (the
    chunked feed-forward option runs the original block)."""

    def forward(self, hidden_states, encoder_hidden_states, temb, joint_attention_kwargs=None):
        k = self._sgl_k

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, temb, joint_attention_kwargs)

        if self._chunk_size is not None:
            return ref()

        def fused():
            h, e = hidden_states, encoder_hidden_states
            jkw = joint_attention_kwargs or {}
            if self.use_dual_attention:
                norm_h, gate_msa, shift_mlp, scale_mlp, gate_mlp, norm_h2, gate_msa2 = self.norm1(h, emb=temb)
            else:
                norm_h, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.norm1(h, emb=temb)
            if self.context_pre_only:
                norm_e = self.norm1_context(e, temb)
            else:
                norm_e, c_gate_msa, c_shift_mlp, c_scale_mlp, c_gate_mlp = self.norm1_context(e, emb=temb)
            attn_output, context_attn_output = self.attn(hidden_states=norm_h, encoder_hidden_states=norm_e, **jkw)
            h = k.gated_residual(h, attn_output, gate_msa[:, None])
            if self.use_dual_attention:
                h = k.gated_residual(h, self.attn2(hidden_states=norm_h2, **jkw), gate_msa2[:, None])
            norm_h = k.norm_modulate(self.norm2, h, scale_mlp[:, None], shift_mlp[:, None])
            h = k.gated_residual(h, self.ff(norm_h), gate_mlp[:, None])
            if self.context_pre_only:
                return None, h
            e = k.gated_residual(e, context_attn_output, c_gate_msa[:, None])
            norm_e = k.norm_modulate(self.norm2_context, e, c_scale_mlp[:, None], c_shift_mlp[:, None])
            e = k.gated_residual(e, self.ff_context(norm_e), c_gate_mlp[:, None])
            return e, h

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, temb, module=self)


class MountedQwenImageBlock(_Mounted):
    """``QwenImageTransformerBlock``: its four ``_modulate`` chains (norm, then ``x * (1 + scale) + shift``,
    per sample or, for edit models, per token through ``modulate_index``) and four gated residuals."""

    def _sgl_mod(self, norm, x, mod_params, index=None):
        shift, scale, gate = mod_params.chunk(3, dim=-1)
        if index is not None:  # the same per-token selection as the original, then the fused chain
            b = shift.size(0) // 2
            pick = index.unsqueeze(-1) == 0
            shift = torch.where(pick, shift[:b].unsqueeze(1), shift[b:].unsqueeze(1))
            scale = torch.where(pick, scale[:b].unsqueeze(1), scale[b:].unsqueeze(1))
            gate = torch.where(pick, gate[:b].unsqueeze(1), gate[b:].unsqueeze(1))
        else:
            shift, scale, gate = shift.unsqueeze(1), scale.unsqueeze(1), gate.unsqueeze(1)
        return self._sgl_k.norm_modulate(norm, x, scale, shift), gate

    def forward(self, hidden_states, encoder_hidden_states, encoder_hidden_states_mask, temb,
                image_rotary_emb=None, joint_attention_kwargs=None, modulate_index=None):
        k = self._sgl_k

        def fused():
            h, e, t = hidden_states, encoder_hidden_states, temb
            img_mod1, img_mod2 = self.img_mod(t).chunk(2, dim=-1)
            if self.zero_cond_t:
                t = torch.chunk(t, 2, dim=0)[0]
            txt_mod1, txt_mod2 = self.txt_mod(t).chunk(2, dim=-1)
            img_modulated, img_gate1 = self._sgl_mod(self.img_norm1, h, img_mod1, modulate_index)
            txt_modulated, txt_gate1 = self._sgl_mod(self.txt_norm1, e, txt_mod1)
            img_attn_output, txt_attn_output = self.attn(
                hidden_states=img_modulated, encoder_hidden_states=txt_modulated,
                encoder_hidden_states_mask=encoder_hidden_states_mask, image_rotary_emb=image_rotary_emb,
                **(joint_attention_kwargs or {}))
            h = k.gated_residual(h, img_attn_output, img_gate1)
            e = k.gated_residual(e, txt_attn_output, txt_gate1)
            img_modulated2, img_gate2 = self._sgl_mod(self.img_norm2, h, img_mod2, modulate_index)
            h = k.gated_residual(h, self.img_mlp(img_modulated2), img_gate2)
            txt_modulated2, txt_gate2 = self._sgl_mod(self.txt_norm2, e, txt_mod2)
            e = k.gated_residual(e, self.txt_mlp(txt_modulated2), txt_gate2)
            if e.dtype == torch.float16:
                e = e.clip(-65504, 65504)
            if h.dtype == torch.float16:
                h = h.clip(-65504, 65504)
            return e, h

        def ref():
            return self._sgl_ref(hidden_states, encoder_hidden_states, encoder_hidden_states_mask, temb,
                                 image_rotary_emb, joint_attention_kwargs, modulate_index)

        return self._sgl_site.run(fused, ref, hidden_states, encoder_hidden_states, encoder_hidden_states_mask, temb,
                                  image_rotary_emb, modulate_index, module=self)
