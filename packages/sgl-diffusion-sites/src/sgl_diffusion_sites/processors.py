"""Mounted attention processors: diffusers' processors with RoPE (and, in close mode, QK-norm +
RoPE) fused, and in close mode (``optimize(..., attention=True)``) the attention itself through
``sgl_diffusion_attention.attention``.

Each class is set on an attention module with ``set_processor``; the original processor object
is kept and put back by ``unmount``. ``plan`` says which ops a processor calls on a given
attention module, or why that module stays eager.

The attention (``_attend``): q, k, v are ``[B, S, H, Dh]`` straight from the projections (bshd: no
transpose, no copy). A boolean key-padding mask of the form "the first n keys valid" per sample
(HunyuanVideo's joint mask, Qwen-Image's text mask) becomes ``kv_lens``; any other mask, a diffusers
attention backend or parallel config set on the processor, or an input the op cannot serve runs the
model's own attention for that call (counted as eager in ``report.op_calls``).
"""

from __future__ import annotations

from typing import Any

import torch

import sgl_diffusion_attention as _attention

from .kernels import Kernels
from .report import Site

_SAME: Any = object()  # _attend's default kv_mask: the mask itself


class UspRoute:
    """What a processor needs under ``parallelize``: the mesh, the local attention's backend, and the
    text length of the current call where the processor cannot see it (Flux's single blocks get the
    text and image rows already concatenated; the model's entry hook records it)."""

    def __init__(self, mesh: Any, backend: str | None) -> None:
        self.mesh = mesh
        self.backend = backend
        self.text_len = 0


class MountedFluxAttnProcessor:
    """diffusers ``FluxAttnProcessor`` with RoPE (and, in close mode, QK-norm + RoPE) fused.

    Set on the attention module with ``set_processor``; the original processor object is kept
    and put back by ``unmount``. The text + image concatenation stays ``torch.cat``; the attention
    is diffusers' ``dispatch_attention_fn`` (so attention backends still apply), or with a mounted
    attention site ``sgl_diffusion_attention.attention`` (``_attend``).
    """

    kind = "qk_norm_rope"  # the report's site kind

    @classmethod
    def plan(cls, attn: torch.nn.Module, exact: bool) -> tuple[str, ...] | str:
        """The ops the mounted processor calls on ``attn`` (a tuple), or why it stays eager (a str)."""
        return ("rope.apply_rope_qk",) if exact else ("rope.qk_norm_rope", "rope.apply_rope_qk")

    def __init__(self, original: Any, site: Site, kernels: Kernels, attention: Site | None = None) -> None:
        self._sgl_original = original
        self._sgl_site = site
        self._sgl_k = kernels
        self._sgl_attn = attention  # the attention site: mounted here (close mode), else None
        self._attention_backend = getattr(original, "_attention_backend", None)
        self._parallel_config = getattr(original, "_parallel_config", None)
        self._sgl_usp: UspRoute | None = None  # set by parallelize()
        self._sgl_tile: Any = None  # a sliding_tile.SlidingTile (attention="sliding_tile"), else None
        self._sgl_q8: Any = None  # a quantized.Quantized (attention="int8" / "fp8"), else None

    def _attend(self, query, key, value, mask, dispatch, *, kv_mask=_SAME, offset: int = 0, text: int = 0,
                text_first: bool = False):
        """The attention of one call, ``[B, S, H, Dh]`` in and out: ``sgl_diffusion_attention.attention``
        where this processor's attention site is mounted, else ``dispatch()`` (the model's own attention,
        with ``mask``). ``kv_mask``: the boolean key mask to turn into ``kv_lens`` (default: ``mask``),
        whose first key is key ``offset``; the keys before it are all valid (Qwen-Image's image keys).
        Under ``parallelize`` it is ``usp_attention`` over the mesh, the last ``text`` rows (the first
        with ``text_first``) being the joint text (replicated on every rank)."""
        k = self._sgl_k
        if self._sgl_usp is not None:
            return self._usp_attend(query, key, value, mask if kv_mask is _SAME else kv_mask, offset, text,
                                    text_first)
        if self._sgl_attn is None:
            return dispatch()
        if self._attention_backend is not None or self._parallel_config is not None:
            k.count_eager("attention.attention")  # a diffusers backend / context parallelism set since the mount
            return dispatch()
        kv_mask = mask if kv_mask is _SAME else kv_mask
        if self._sgl_tile is not None and kv_mask is None and not text:
            out = self._sgl_tile.attend(query, key, value)
            if out is not None:
                return out
        # the attention op takes the lengths on the host (it slices the keys with no device read); the 8-bit
        # route takes them on the device
        q8 = self._sgl_q8
        kv_lens = None if kv_mask is None else k.key_padding_lens(kv_mask, query.shape[0], offset, host=q8 is None)
        if kv_lens is False:  # not a key-padding prefix (or not readable here): the masked attention
            k.count_eager("attention.attention")
            return dispatch()
        if q8 is not None:
            out = q8.attend(query, key, value, kv_lens)
            if out is not None:
                return out
            if kv_lens is not None:
                kv_lens = k.key_padding_lens(kv_mask, query.shape[0], offset, host=True)
        out = k.attention(query, key, value, kv_lens)
        return dispatch() if out is None else out

    def _usp_attend(self, query, key, value, kv_mask, offset: int, text: int, text_first: bool):
        """``usp_attention`` of this rank's image rows with ``text`` joint rows (last, or first with
        ``text_first``); a key mask must be a key-padding prefix over the joint key order."""
        route = self._sgl_usp
        kv_lens = None if kv_mask is None else self._sgl_k.key_padding_lens(kv_mask, query.shape[0], offset)
        if kv_lens is False:
            raise ValueError("parallelize: an attention mask that is not a key-padding prefix reached a parallel "
                             "attention; usp_attention serves key-padding prefixes only (kv_lens)")
        A, kw = _attention, {**route.mesh.groups(), "kv_lens": kv_lens, "backend": route.backend}
        if not text:
            return A.usp_attention(query, key, value, **kw)
        n = query.shape[1] - text
        img, txt = (slice(text, None), slice(0, text)) if text_first else (slice(0, n), slice(n, None))
        out, joint = A.usp_attention(query[:, img], key[:, img], value[:, img], joint_q=query[:, txt],
                                     joint_k=key[:, txt], joint_v=value[:, txt],
                                     joint_strategy="front" if text_first else "rear", **kw)
        return torch.cat([joint, out] if text_first else [out, joint], dim=1)

    def _route(self, attn, handled: bool, *args):
        """``self._fused(attn, *args)`` through the site's gate when the call is one this processor
        handles, the original processor otherwise. ``args``: the call's arguments after ``attn``,
        in the original's order (the subclasses spell out the original's signature, which
        diffusers inspects to filter keyword arguments)."""
        def ref():
            return self._sgl_original(attn, *args)

        if self._sgl_usp is not None:  # parallelize: the sequence is sharded, the original would be wrong
            if not handled:
                raise ValueError(f"parallelize: {type(self._sgl_original).__name__} got a call it cannot run "
                                 "in parallel (no rotary table or no text stream)")
            return self._fused(attn, *args)
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
        s_txt = (encoder_hidden_states.shape[1] if encoder_hidden_states is not None
                 else self._sgl_usp.text_len if self._sgl_usp is not None else 0)
        hidden_states = self._attend(query, key, value, attention_mask, lambda: dispatch_attention_fn(
            query, key, value, attn_mask=attention_mask, backend=self._attention_backend,
            parallel_config=self._parallel_config), text=s_txt, text_first=True)
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
    ``qk_norm`` kernels do not cover: it stays eager; so does the image-conditioning branch (I2V: not
    mounted). The self-attention goes through ``_attend``."""

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
        hidden_states = self._attend(query, key, value, attention_mask, lambda: dispatch_attention_fn(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
            backend=self._attention_backend,
            parallel_config=(self._parallel_config if encoder_hidden_states is None else None)))
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
    goes through ``_attend``: the joint mask ``[B, 1, 1, S]`` diffusers builds (image, then the valid
    text, then the padding) is a key prefix, hence ``kv_lens``.
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
        hidden_states = self._attend(query, key, value, attention_mask, lambda: dispatch_attention_fn(
            query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
            backend=self._attention_backend, parallel_config=self._parallel_config), text=s_txt)
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
        # with the attention op: image first, so a padded text mask is a key prefix (kv_lens); attention
        # does not depend on the order of the tokens, the outputs are split by it
        text_first, n_img = self._sgl_attn is None, hidden_states.shape[1]
        attention_mask = None
        if encoder_hidden_states_mask is not None:
            image_mask = torch.ones((hidden_states.shape[0], n_img), dtype=torch.bool, device=hidden_states.device)
            parts = [encoder_hidden_states_mask, image_mask]
            attention_mask = torch.cat(parts if text_first else parts[::-1], dim=1)[:, None, None, :]
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
                                                              text_first=text_first)
        out = self._attend(joint_query, joint_key, joint_value, attention_mask, lambda: dispatch_attention_fn(
            joint_query, joint_key, joint_value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
            backend=self._attention_backend, parallel_config=self._parallel_config),
            kv_mask=encoder_hidden_states_mask, offset=n_img)
        out = out.flatten(2, 3).to(joint_query.dtype)
        if text_first:
            txt_out, img_out = out[:, :seq_txt, :], out[:, seq_txt:, :]
        else:
            img_out, txt_out = out[:, :n_img, :], out[:, n_img:, :]
        img_out = attn.to_out[0](img_out.contiguous())
        if len(attn.to_out) > 1:
            img_out = attn.to_out[1](img_out)
        txt_out = attn.to_add_out(txt_out.contiguous())
        return img_out, txt_out


class MountedSD3AttnProcessor(MountedFluxAttnProcessor):
    """diffusers ``JointAttnProcessor2_0`` of SD3 / SD3.5 with ``qk_norm``: per-head QK-norm (no RoPE),
    then ``cat([image, text])`` of q, k and v. Close mode only: one ``qk_norm`` launch per stream
    (q and k together, in place) and ``joint_qkv_cat``; the attention is ``_attend`` (the attention op
    on ``[B, S, H, D]``), else ``F.scaled_dot_product_attention`` reading ``[B, H, S, D]`` views of that
    memory instead of eager's contiguous concatenation)."""

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
        hidden_states = self._attend(query, key, value, None, lambda: torch.nn.functional.scaled_dot_product_attention(
            query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2), dropout_p=0.0,
            is_causal=False).transpose(1, 2))
        hidden_states = hidden_states.reshape(batch_size, -1, attn.heads * head_dim)
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
