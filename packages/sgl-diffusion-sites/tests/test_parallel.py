"""parallelize: a tiny diffusers Wan, HunyuanVideo and Flux transformer run by 4 CPU ranks (gloo, one spawn
for the module) equal to the same model unparallelized, within the tolerance below; unparallelize
gives the original model back (torch.equal to its first output).

The configs are the tiny ones of ``tiny_models`` with 3 / 5 heads (not divisible by the Ulysses
degree: 2, 1 on 2 ranks; 2, 1, 1, 1 on 4) and token counts that do not divide by the ranks (Wan 27 on
4: 7, 7, 7, 6; Flux 18 image tokens on 4: 5, 5, 4, 4); HunyuanVideo's text is padded (a key-padding
mask over the joint sequence: kv_lens), at the rear; Flux's text is in front.
fp32 throughout. Tolerance: the attention's declared fp32 bound (1e-5) carried through two blocks
of projections, norms and MLPs; 1e-4 absolute and relative. About 15-25 s on two loaded cores
(four processes importing diffusers).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_sites as sites
from sgl_diffusion_core import testing

pytest.importorskip("diffusers", reason="these tests need diffusers (pinned in tools/dev-requirements.txt)")

ATOL = RTOL = 1e-4


def _init(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / max(p.shape[-1] if p.ndim > 1 else 1, 1) ** 0.5)
    return model.eval()


def wan(seed=0):
    from diffusers import WanTransformer3DModel

    m = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=3, attention_head_dim=16, in_channels=4,
                              out_channels=4, text_dim=32, freq_dim=32, ffn_dim=64, num_layers=2,
                              cross_attn_norm=True, rope_max_seq_len=32)
    g = torch.Generator().manual_seed(seed + 1)
    kw = dict(hidden_states=torch.randn(1, 4, 3, 6, 6, generator=g), timestep=torch.tensor([500]),
              encoder_hidden_states=torch.randn(1, 8, 32, generator=g), return_dict=False)
    return _init(m, seed), kw


def hunyuan_video(seed=0):
    from diffusers import HunyuanVideoTransformer3DModel

    m = HunyuanVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=5, attention_head_dim=16,
                                       num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=2,
                                       patch_size_t=1, guidance_embeds=False, text_embed_dim=32,
                                       pooled_projection_dim=32, rope_axes_dim=(4, 6, 6))
    g = torch.Generator().manual_seed(seed + 1)
    kw = dict(hidden_states=torch.randn(1, 4, 2, 8, 6, generator=g), timestep=torch.tensor([500]),
              encoder_hidden_states=torch.randn(1, 8, 32, generator=g),
              encoder_attention_mask=torch.tensor([[1] * 5 + [0] * 3]),
              pooled_projections=torch.randn(1, 32, generator=g), return_dict=False)
    return _init(m, seed), kw


def flux(seed=0):
    from diffusers import FluxTransformer2DModel

    m = FluxTransformer2DModel(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1, attention_head_dim=16,
                               num_attention_heads=3, joint_attention_dim=32, pooled_projection_dim=32,
                               guidance_embeds=False, axes_dims_rope=(4, 6, 6))
    g = torch.Generator().manual_seed(seed + 1)
    s_img, s_txt = 18, 8  # an image of 3 x 6 patches
    img_ids = torch.zeros(s_img, 3)
    img_ids[:, 1], img_ids[:, 2] = torch.arange(s_img) // 6, torch.arange(s_img) % 6
    kw = dict(hidden_states=torch.randn(1, s_img, 8, generator=g),
              encoder_hidden_states=torch.randn(1, s_txt, 32, generator=g),
              pooled_projections=torch.randn(1, 32, generator=g), timestep=torch.tensor([0.5]), img_ids=img_ids,
              txt_ids=torch.zeros(s_txt, 3), return_dict=False)
    return _init(m, seed), kw


# name -> (builder, ulysses, ring)
CASES = {
    "wan_2x2": (wan, 2, 2),
    "wan_ring4": (wan, 1, 4),
    "hunyuan_video_2x2": (hunyuan_video, 2, 2),
    "hunyuan_video_ulysses4": (hunyuan_video, 4, 1),
    "flux_2x2": (flux, 2, 2),
}


def _run(builder, ulysses: int, ring: int) -> None:
    model, kw = builder()
    with torch.no_grad():
        want = model(**kw)[0]
        report = sites.parallelize(model, ulysses=ulysses, ring=ring)
        assert report.mounted, str(report)
        got = model(**kw)[0]
        testing.assert_close(got, want, atol=ATOL, rtol=RTOL)
        assert sites.unparallelize(model) and not sites.is_parallelized(model)
        testing.assert_exact(model(**kw)[0], want)


def _worker(rank: int, world: int) -> dict[str, str]:
    out = {}
    for name, (builder, u, r) in CASES.items():
        try:
            _run(builder, u, r)
            out[name] = "ok"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


@pytest.fixture(scope="module")
def results():
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available in this build")
    return testing.run_ranks(_worker, 4, timeout=180)


@pytest.mark.multiproc
@pytest.mark.parametrize("name", list(CASES))
def test_parallel_model_matches_unparallelized(results, name):
    for r in range(4):
        assert results[r][name] == "ok", f"rank {r}: {results[r][name]}"


def test_one_rank_and_refusals():
    """ulysses = ring = 1 needs no process group: the local attention through usp_attention; the
    refusals of models it does not know, of a mounted model, and optimize on a parallelized one."""
    model, kw = hunyuan_video()
    with torch.no_grad():
        want = model(**kw)[0]
        report = sites.parallelize(model)
        assert [s.path for s in report.mounted] == ["transformer_blocks.0.attn", "single_transformer_blocks.0.attn"]
        testing.assert_close(model(**kw)[0], want, atol=ATOL, rtol=RTOL)
        with pytest.raises(ValueError, match="already parallelized"):
            sites.parallelize(model)
        assert "parallelized" in " ".join(sites.optimize(model).notes)
        assert sites.unparallelize(model)
        testing.assert_exact(model(**kw)[0], want)
    sites.optimize(model)
    with pytest.raises(ValueError, match="mounted"):
        sites.parallelize(model)
    sites.unmount(model)
    with pytest.raises(ValueError, match="is not one of"):
        sites.parallelize(torch.nn.Linear(2, 2))
