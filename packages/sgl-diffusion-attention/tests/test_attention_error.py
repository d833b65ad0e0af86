"""attention_error: the distance of a fast output from fp32 attention (dense, or under a block map)."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as A


def _qkv(S=128, H=2, Dh=64, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, S, H, Dh, generator=g).to(dtype) for _ in range(3))


def test_the_fp32_reference_itself_has_no_error():
    q, k, v = _qkv(dtype=torch.float32)
    err = A.attention_error(q, k, v, A.attention_reference(q, k, v))
    assert err.cosine == pytest.approx(1.0, abs=1e-12) and err.rel_l1 == 0.0 and err.max_abs == 0.0
    assert err.ref_max > 0 and "cosine" in str(err)


def test_bf16_output_is_close_and_wrong_outputs_are_far():
    q, k, v = _qkv()
    err = A.attention_error(q, k, v, A.attention(q, k, v))
    assert err.cosine > 0.9999 and err.rel_l1 < 1e-2 and 0 < err.max_abs < 2e-2
    zeros = A.attention_error(q, k, v, torch.zeros(1, 128, 2, 64))
    assert zeros.cosine == 0.0 and zeros.rel_l1 == pytest.approx(1.0)
    swapped = A.attention_error(q, k, v, A.attention(q, v, k))
    assert swapped.cosine < 0.9 and swapped.rel_l1 > 0.3


def test_a_block_map_separates_the_kernel_error_from_the_sparsity_error():
    q, k, v = _qkv(S=128)
    bm = A.block_map_from_mask(torch.eye(2, dtype=torch.bool), block=(64, 64))  # each half attends to itself
    sparse = A.block_sparse_attention(q, k, v, bm, backend="torch")
    kernel_error = A.attention_error(q, k, v, sparse, block_map=bm)
    approximation_error = A.attention_error(q, k, v, sparse)
    assert kernel_error.cosine > 0.9999 and kernel_error.rel_l1 < 1e-2
    assert approximation_error.rel_l1 > 10 * kernel_error.rel_l1


def test_bad_input_is_named():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="shape"):
        A.attention_error(q, k, v, torch.zeros(1, 128, 2, 32))
    with pytest.raises(ValueError, match="out must be a floating-point tensor"):
        A.attention_error(q, k, v, torch.zeros(1, 128, 2, 64, dtype=torch.int32))
    with pytest.raises(ValueError, match="block= needs a block_map"):
        A.attention_error(q, k, v, q, block=(64, 64))
    bm = A.block_map_from_mask(torch.ones(2, 2, dtype=torch.bool), block=(64, 64))
    with pytest.raises(ValueError, match="bshd, no kv_lens"):
        A.attention_error(q, k, v, q, block_map=bm, kv_lens=torch.tensor([3]))
