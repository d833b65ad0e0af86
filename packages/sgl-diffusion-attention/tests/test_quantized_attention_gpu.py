"""GPU lane: quantized_attention's triton kernel at FLUX's and Wan 720p's shapes and with HunyuanVideo's padded
text (kv_lens), int8 and e4m3 q / k (and e4m3 p / v with pv="fp8"), against its definition on the first
queries (the definition is dense fp32 attention), and the outputs' distance to full-precision attention on
keys with outlier channels.

Not run on this repository's CPU lane (no GPU); it skips cleanly there.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, device_fp8_dtype, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]
OP = "attention.quantized_attention"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")
SHAPES = {"flux": (4608, 24, 0), "wan-720p": (75600, 40, 0), "hunyuan-720p": (119056, 24, 200)}
ROWS = 1024  # queries checked against the definition


def _inputs(name, seed):
    """q, k, v (k with outlier channels, as real models have) and kv_lens of one production shape."""
    S, H, pad = SHAPES[name]
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(1, S, H, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    k = (torch.randn(1, S, H, 128, device="cuda", generator=g)
         + 4 * torch.randn(1, 1, H, 128, device="cuda", generator=g)).to(torch.bfloat16)
    v = torch.randn(1, S, H, 128, device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v, torch.tensor([S - pad], dtype=torch.int32, device="cuda") if pad else None


@pytest.mark.parametrize("qk", ["int8", "fp8"])
@pytest.mark.parametrize("name", list(SHAPES))
def test_production_shapes(name, qk):
    if qk == "fp8" and device_fp8_dtype("cuda") != torch.float8_e4m3fn:
        pytest.skip("e4m3 dot products need NVIDIA sm_89+ or AMD gfx950")
    q, k, v, kv_lens = _inputs(name, seed=0)
    out, lse = attn.quantized_attention(q, k, v, kv_lens=kv_lens, qk=qk, return_lse=True)
    ref, ref_lse = attn.quantized_attention_reference(q[:, :ROWS], k, v, kv_lens=kv_lens, qk=qk, return_lse=True)
    atol, rtol = CLOSE.tolerance(torch.bfloat16)
    testing.assert_close(out[:, :ROWS], ref, atol=atol, rtol=rtol)
    testing.assert_close(lse[:, :, :ROWS], ref_lse, atol=1e-3, rtol=1e-5)
    if qk == "int8":
        err = attn.attention_error(q[:, :ROWS], k, v, out[:, :ROWS], kv_lens=kv_lens)
        assert err.cosine >= 0.999 and err.rel_l1 <= 0.03, err


@pytest.mark.parametrize("qk", ["int8", "fp8"])
@pytest.mark.parametrize("name", ["flux", "hunyuan-720p"])
def test_fp8_pv_production_shapes(name, qk):
    """pv='fp8' (e4m3 p and v, FP8 dot products) against its definition on the first queries, and its
    distance to full-precision attention against the 8-bit attention bound (cosine 0.999, relative L1 0.03).
    The definition itself misses that bound (H200: int8 q / k at FLUX cosine 0.9992, relative L1 0.040;
    e4m3 q / k 0.9986 / 0.053): the test reports that as an expected failure with the measured figures."""
    if device_fp8_dtype("cuda") != torch.float8_e4m3fn:
        pytest.skip("e4m3 dot products need NVIDIA sm_89+ or AMD gfx950")
    rows = 256  # the definition's fp32 scores, p and codes of 256 queries: about 12 GB at HunyuanVideo 720p
    q, k, v, kv_lens = _inputs(name, seed=1)
    out = attn.quantized_attention(q, k, v, kv_lens=kv_lens, qk=qk, pv="fp8")
    ref = attn.quantized_attention_reference(q[:, :rows], k, v, kv_lens=kv_lens, qk=qk, pv="fp8")
    atol, rtol = CLOSE.tolerance(torch.bfloat16)
    testing.assert_close(out[:, :rows], ref, atol=atol, rtol=rtol)
    err = attn.attention_error(q[:, :rows], k, v, out[:, :rows], kv_lens=kv_lens)
    print(f"{name} qk={qk} pv=fp8: cosine {err.cosine:.5f}, relative L1 {err.rel_l1:.4f}")
    if not (err.cosine >= 0.999 and err.rel_l1 <= 0.03):
        pytest.xfail(f"pv='fp8' misses the 8-bit bound (cosine 0.999, relative L1 0.03): {err}")
