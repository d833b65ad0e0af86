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
