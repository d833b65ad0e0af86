"""usp_attention over NCCL on 2 GPUs (skipped with fewer): Ulysses 2 and ring 2 at shapes of the
production models' size class, against the ``torch`` definition of ``attention`` over the whole
sequence on one GPU, within usp_attention's declared tolerance. NVLink multicast stays off.

Shapes: Wan-like (40 heads of 128, 8191 tokens: shards of 4096 and 4095) and HunyuanVideo-like (24
heads, 6001 tokens, 256 text tokens at the rear of which 56 are padding: kv_lens), bf16.
"""

from __future__ import annotations

import os

import pytest
import torch

import sgl_diffusion_attention as A
from sgl_diffusion_core import REGISTRY, testing

pytestmark = pytest.mark.gpu

CLOSE = next(s.contract for s in REGISTRY.specs("attention.usp_attention") if s.backend == "torch")
# name -> (S, H, text rows or 0, kv_lens or None)
CASES = {"wan_like": (8191, 40, 0, None), "hunyuan_like": (6001, 24, 256, 6001 + 200)}


def _worker(rank: int, world: int) -> dict[str, str]:
    dev = torch.device("cuda", rank)
    out = {}
    for name, (S, H, T, kv) in CASES.items():
        g = torch.Generator(device=dev).manual_seed(0)
        qkv = [torch.randn(1, S, H, 128, generator=g, device=dev).to(torch.bfloat16) for _ in range(3)]
        jt = [torch.randn(1, T, H, 128, generator=g, device=dev).to(torch.bfloat16) for _ in range(3)] if T else []
        kv_lens = None if kv is None else torch.tensor([kv], dtype=torch.int32, device=dev)
        full = [torch.cat([t, j], dim=1) for t, j in zip(qkv, jt)] if T else qkv
        want = A.attention(*full, kv_lens=kv_lens, backend="torch")
        kw = {"joint_q": jt[0], "joint_k": jt[1], "joint_v": jt[2], "joint_strategy": "rear"} if T else {}
        for U, R in ((2, 1), (1, 2)):
            mesh = A.init_usp(ulysses=U, ring=R)
            try:
                got = A.usp_attention(*(A.usp_shard(t, mesh) for t in qkv), **mesh.groups(), kv_lens=kv_lens, **kw)
                o, j = got if T else (got, None)
                atol, rtol = CLOSE.tolerance(torch.bfloat16)
                testing.assert_close(o, A.usp_shard(want[:, :S], mesh), atol=atol, rtol=rtol)
                if T:
                    testing.assert_close(j, want[:, S:], atol=atol, rtol=rtol)
                out[f"{name}_u{U}_r{R}"] = "ok"
            except Exception as e:
                out[f"{name}_u{U}_r{R}"] = f"{type(e).__name__}: {e}"
    return out


def test_usp_attention_nccl_two_gpus():
    if not torch.cuda.is_available() or torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA GPUs")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    results = testing.run_ranks(_worker, 2, backend="nccl", timeout=600, collective_timeout=300)
    bad = {f"rank {r}: {k}": v for r, res in enumerate(results) for k, v in res.items() if v != "ok"}
    assert not bad, bad
