"""Tiny random-initialized configs of the five supported diffusers transformers (built from config,
no download) and inputs for one forward call. Widths are the smallest each model accepts with
2 heads (head_dim 16, its RoPE axes summing to 16) so a forward takes milliseconds eagerly and
about a second with every Triton kernel under the interpreter."""

from __future__ import annotations

from collections.abc import Callable

import torch


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape: int, dtype: torch.dtype, g: torch.Generator) -> torch.Tensor:
    return torch.randn(*shape, generator=g).to(dtype)


def _init(model: torch.nn.Module, dtype: torch.dtype, seed: int) -> torch.nn.Module:
    """Random weights for every parameter (diffusers zero-initializes some projections, which would
    make gates and modulations trivially 0), scaled so activations stay O(1)."""
    g = _gen(seed)
    with torch.no_grad():
        for p in model.parameters():
            fan_in = p.shape[-1] if p.ndim > 1 else 1
            p.copy_(torch.randn(p.shape, generator=g) / max(fan_in, 1) ** 0.5)
    return model.to(dtype).eval()


def flux(dtype=torch.bfloat16, seed=0):
    from diffusers import FluxTransformer2DModel

    m = FluxTransformer2DModel(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1,
                               attention_head_dim=16, num_attention_heads=2, joint_attention_dim=32,
                               pooled_projection_dim=32, guidance_embeds=False, axes_dims_rope=(4, 6, 6))
    g = _gen(seed + 1)
    B, s_img, s_txt = 1, 16, 8
    img_ids = torch.zeros(s_img, 3)
    img_ids[:, 1] = torch.arange(s_img) // 4
    img_ids[:, 2] = torch.arange(s_img) % 4
    kw = dict(hidden_states=_randn(B, s_img, 8, dtype=dtype, g=g),
              encoder_hidden_states=_randn(B, s_txt, 32, dtype=dtype, g=g),
              pooled_projections=_randn(B, 32, dtype=dtype, g=g), timestep=torch.tensor([0.5]),
              img_ids=img_ids, txt_ids=torch.zeros(s_txt, 3), return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


def wan(dtype=torch.bfloat16, seed=0):
    from diffusers import WanTransformer3DModel

    m = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=16, in_channels=4,
                              out_channels=4, text_dim=32, freq_dim=32, ffn_dim=64, num_layers=1,
                              cross_attn_norm=True, rope_max_seq_len=32)
    g = _gen(seed + 1)
    kw = dict(hidden_states=_randn(1, 4, 2, 8, 8, dtype=dtype, g=g), timestep=torch.tensor([500]),
              encoder_hidden_states=_randn(1, 8, 32, dtype=dtype, g=g), return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


def sd3(dtype=torch.bfloat16, seed=0):
    from diffusers import SD3Transformer2DModel

    m = SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=16,
                              num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=32,
                              pooled_projection_dim=32, out_channels=4, pos_embed_max_size=8,
                              dual_attention_layers=(0,), qk_norm="rms_norm")  # SD3.5: block 0 dual
    g = _gen(seed + 1)
    kw = dict(hidden_states=_randn(1, 4, 8, 8, dtype=dtype, g=g),
              encoder_hidden_states=_randn(1, 8, 32, dtype=dtype, g=g),
              pooled_projections=_randn(1, 32, dtype=dtype, g=g), timestep=torch.tensor([500]), return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


def qwen_image(dtype=torch.bfloat16, seed=0):
    from diffusers import QwenImageTransformer2DModel

    m = QwenImageTransformer2DModel(patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16,
                                    num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(4, 6, 6))
    g = _gen(seed + 1)
    kw = dict(hidden_states=_randn(1, 16, 16, dtype=dtype, g=g),
              encoder_hidden_states=_randn(1, 8, 32, dtype=dtype, g=g),
              encoder_hidden_states_mask=torch.ones(1, 8, dtype=torch.long), timestep=torch.tensor([0.5]),
              img_shapes=[(1, 4, 4)], return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


def qwen_image_edit(dtype=torch.bfloat16, seed=0):
    """Qwen-Image-Edit style (``zero_cond_t``): the image tokens of the condition image get the
    second modulation row through ``modulate_index`` (per-token modulation)."""
    from diffusers import QwenImageTransformer2DModel

    m = QwenImageTransformer2DModel(patch_size=2, in_channels=16, out_channels=4, num_layers=1, attention_head_dim=16,
                                    num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(4, 6, 6),
                                    zero_cond_t=True)
    g = _gen(seed + 1)
    kw = dict(hidden_states=_randn(1, 16 + 4, 16, dtype=dtype, g=g),
              encoder_hidden_states=_randn(1, 8, 32, dtype=dtype, g=g),
              encoder_hidden_states_mask=torch.ones(1, 8, dtype=torch.long), timestep=torch.tensor([0.5]),
              img_shapes=[[(1, 4, 4), (1, 2, 2)]], return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


def hunyuan_video(dtype=torch.bfloat16, seed=0):
    from diffusers import HunyuanVideoTransformer3DModel

    m = HunyuanVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=16,
                                       num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=2,
                                       patch_size_t=1, guidance_embeds=False, text_embed_dim=32,
                                       pooled_projection_dim=32, rope_axes_dim=(4, 6, 6))
    g = _gen(seed + 1)
    kw = dict(hidden_states=_randn(1, 4, 2, 8, 8, dtype=dtype, g=g), timestep=torch.tensor([500]),
              encoder_hidden_states=_randn(1, 8, 32, dtype=dtype, g=g),
              encoder_attention_mask=torch.ones(1, 8, dtype=torch.long),
              pooled_projections=_randn(1, 32, dtype=dtype, g=g), return_dict=False)
    return _init(m, dtype, seed), kw, "hidden_states"


BUILDERS: dict[str, Callable] = {
    "FluxTransformer2DModel": flux,
    "WanTransformer3DModel": wan,
    "SD3Transformer2DModel": sd3,
    "QwenImageTransformer2DModel": qwen_image,
    "QwenImageTransformer2DModel[edit]": qwen_image_edit,
    "HunyuanVideoTransformer3DModel": hunyuan_video,
}
