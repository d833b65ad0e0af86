"""GPU lane: block_sparse_attention's triton kernel at the issue's video shapes (Wan 720p, HunyuanVideo 720p
with text after the video) on video_block_map maps, against the fp32 definition (a slice of the
queries: the definition is dense attention under the map's mask), the lse to 1e-3; the block map
built on the GPU equals the one built on the CPU; torch.compile and CUDA-graph capture.

Not run on this repository's CPU lane (no GPU); it skips cleanly there.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]
OP = "attention.block_sparse_attention"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")

# name -> (H, grid, text tokens, window in tiles of 4 x 4 x 4, block)
SHAPES = {
    "wan-720p-b128": (40, (21, 45, 80), 0, (3, 3, 3), 128),
    "wan-720p-b64": (40, (21, 45, 80), 0, (3, 5, 5), 64),
    "hunyuan-720p-b128": (24, (33, 45, 80), 256, (3, 3, 3), 128),
}
# the definition is slow at video lengths: the first queries and the last ones (the text's) are checked
QUERY_ROWS = 2048


def _case(name, dtype=torch.bfloat16):
    H, grid, text, window, blk = SHAPES[name]
    S = grid[0] * grid[1] * grid[2] + text
    m = attn.video_block_map(grid, window=window, text_tokens=text, block=blk, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, S, H, 128, device="cuda", dtype=dtype, generator=g) for _ in range(3))
    return q, k, v, m


def _rows(m, first: int, last: int):
    """The map of query blocks ``first .. last - 1`` (their keys unchanged)."""
    return attn.BlockMap(m.kv_blocks[first:last], m.kv_counts[first:last], m.block, m.n_kv_blocks)


@pytest.mark.parametrize("name", list(SHAPES))
def test_production_shapes(name):
    q, k, v, m = _case(name)
    out, lse = attn.block_sparse_attention(q, k, v, m, return_lse=True, backend="triton")
    blk = m.block[0]
    S = q.shape[1]
    for first in (0, (S // blk - QUERY_ROWS // blk) * blk):  # the first rows, and rows up to the last full block
        part = _rows(m, first // blk, first // blk + QUERY_ROWS // blk)
        ref, ref_lse = attn.block_sparse_attention_reference(q[:, first:first + QUERY_ROWS].float(), k.float(),
                                                             v.float(), part, return_lse=True)
        atol, rtol = CLOSE.tolerance(torch.bfloat16)
        testing.assert_close(out[:, first:first + QUERY_ROWS].float(), ref, atol=atol, rtol=rtol)
        testing.assert_close(lse[:, :, first:first + QUERY_ROWS], ref_lse, atol=CLOSE.tolerance(torch.float32)[0],
                             rtol=0.0)


def test_full_map_matches_dense_attention():
    """Every block listed: the dense attention of the same inputs (FLUX's shape)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(1, 4608, 24, 128, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    m = attn.block_map_from_mask(torch.ones(36, 36, dtype=torch.bool, device="cuda"), block=128)
    out = attn.block_sparse_attention(q, k, v, m, backend="triton")
    ref = attn.attention_reference(q.float(), k.float(), v.float())
    atol, rtol = CLOSE.tolerance(torch.bfloat16)
    testing.assert_close(out.float(), ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("block", [64, 128])
def test_map_built_on_gpu_equals_cpu(block):
    grid, window, text = (21, 45, 80), (3, 3, 5), 512
    gpu = attn.video_block_map(grid, window=window, text_tokens=text, block=block, device="cuda")
    cpu = attn.video_block_map(grid, window=window, text_tokens=text, block=block)
    assert torch.equal(gpu.kv_blocks.cpu(), cpu.kv_blocks) and torch.equal(gpu.kv_counts.cpu(), cpu.kv_counts)


def test_empty_rows_and_gqa_fp16():
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(2, 1000, 8, 64, device="cuda", dtype=torch.float16, generator=g)
    k, v = (torch.randn(2, 900, 2, 64, device="cuda", dtype=torch.float16, generator=g) for _ in range(2))
    mask = torch.rand(16, 15, generator=torch.Generator().manual_seed(0)) < 0.3
    mask[3] = False
    m = attn.block_map_from_mask(mask.cuda(), block=64)
    out, lse = attn.block_sparse_attention(q, k, v, m, return_lse=True, backend="triton")
    ref, ref_lse = attn.block_sparse_attention_reference(q.float(), k.float(), v.float(), m, return_lse=True)
    atol, rtol = CLOSE.tolerance(torch.float16)
    testing.assert_close(out.float(), ref, atol=atol, rtol=rtol)
    testing.assert_close(lse, ref_lse, atol=1e-3, rtol=0.0)
    assert bool((out[:, 192:256] == 0).all()) and bool((lse[:, :, 192:256] == float("-inf")).all())


def test_compile_and_cuda_graph():
    q, k, v, m = _case("wan-720p-b128")
    q, k, v = (t[:, :8192].contiguous() for t in (q, k, v))
    m = attn.block_map_from_mask(m.block_mask()[:64, :64].contiguous(), block=128)  # the first 8192 tokens

    def fn(q, k, v):
        return attn.block_sparse_attention(q, k, v, m) * 2

    eager = fn(q, k, v)
    testing.assert_exact(torch.compile(fn, fullgraph=True)(q, k, v), eager)
    graph = torch.cuda.CUDAGraph()
    static = fn(q, k, v)
    with torch.cuda.graph(graph):
        static = fn(q, k, v)
    graph.replay()
    torch.cuda.synchronize()
    testing.assert_exact(static, eager)
