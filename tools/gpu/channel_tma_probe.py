"""Do Hopper's tensor-memory-accelerator loads (Triton's host ``TensorDescriptor``: one bulk copy of a
``[BLOCK_C, BLOCK_P]`` box per channel chunk into shared memory, no per-thread address arithmetic) lift
``channel_rms_norm`` on contiguous x at C = 384 above the cluster rule's 84-85% of copy (GPU probe,
session 17)?

The 21 x 240 x 416 point stayed 0.7 points short of 85% in session 16 (84.3%). Session 14 rejected an L2
prefetch of later slabs, store hints, 4-warp CTAs in clusters and a barrier-free kernel; session 13
Triton's ``cp.async`` software pipeline (``channel_pipe_probe.py``). Untried until now: TMA boxes.
Kernels here (x seen as ``[C, P]``, one sample, P * 2 bytes a multiple of 16):

* ``tma``: the hold kernel's arithmetic, the three ``[128, BLOCK_P]`` chunks loaded as TMA boxes, the
  output through ``tl.store`` (SiLU's exponent folded as in the rule) or, ``tma+st``, TMA box stores;
* ``tma-pipe``: a persistent loop over position blocks whose TMA loads the compiler pipelines
  (``tl.range(num_stages=...)``): the next tiles' boxes in flight while one is normalized and stored.

Each configuration is checked against the op's reference chain with the triton spec's tolerance and timed
(CUDA events, L2 flushed) against the public op (first, middle, last) and a same-run copy of the same bytes.
Usage: ``python3 tools/gpu/channel_tma_probe.py OUT.json [CASE ...]`` (channel_rms_norm bench cases with
257..384 channels, contiguous, one sample; default c384-240 c384). Nothing here is the library's kernel.
"""

from __future__ import annotations

import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from channel_pipe_probe import measure  # noqa: E402

from sgl_diffusion_core import resolve_target, triton_math  # noqa: E402

_CH = "sgl_diffusion_norm.channel_rms_norm_triton"
_chunk_ops = resolve_target(f"{_CH}:_chunk_ops")
_chunk_store_ops = resolve_target(f"{_CH}:_chunk_store_ops")
_sq = resolve_target(f"{_CH}:_sq")
_affine_silu = resolve_target(f"{_CH}:_affine_silu")


@triton.jit
def _tma_out(xk, k, G, BIAS, Y, yd, C, P, osc, p0, inv, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
             TMA_STORE: tl.constexpr, FAST: tl.constexpr):
    g, b = _chunk_ops(G, BIAS, C, k, BLOCK_C, True)
    if TMA_STORE:
        y = _affine_silu(triton_math.widen_held(xk), inv[None, :], g.to(tl.float32), b.to(tl.float32), True, True,
                         FAST)
        yd.store([k * BLOCK_C, p0], triton_math.narrow(y, Y.dtype.element_ty))
    else:
        p = p0 + tl.arange(0, BLOCK_P).to(tl.int64)
        _chunk_store_ops(xk, g, b, Y, p[None, :], p < P, inv, Y, C, osc, k, BLOCK_C, True, True, FAST, FAST > 0)


@triton.jit
def _tma_tile(xd, G, BIAS, Y, yd, C, P, osc, p0, scale, eps, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
              TMA_STORE: tl.constexpr, FAST: tl.constexpr):
    x0 = xd.load([0, p0])
    x1 = xd.load([BLOCK_C, p0])
    x2 = xd.load([2 * BLOCK_C, p0])
    inv = scale / tl.maximum(tl.sqrt(tl.sum(_sq(x0) + _sq(x1) + _sq(x2), axis=0)), eps)
    _tma_out(x0, 0, G, BIAS, Y, yd, C, P, osc, p0, inv, BLOCK_C, BLOCK_P, TMA_STORE, FAST)
    _tma_out(x1, 1, G, BIAS, Y, yd, C, P, osc, p0, inv, BLOCK_C, BLOCK_P, TMA_STORE, FAST)
    _tma_out(x2, 2, G, BIAS, Y, yd, C, P, osc, p0, inv, BLOCK_C, BLOCK_P, TMA_STORE, FAST)


@triton.jit
def _tma_kernel(xd, G, BIAS, Y, yd, C, P, osc, scale, eps, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
                TMA_STORE: tl.constexpr, FAST: tl.constexpr):
    _tma_tile(xd, G, BIAS, Y, yd, C, P, osc, tl.program_id(0) * BLOCK_P, scale, eps, BLOCK_C, BLOCK_P, TMA_STORE,
              FAST)


@triton.jit
def _tma_pipe_kernel(xd, G, BIAS, Y, yd, C, P, osc, n_tiles, scale, eps, BLOCK_C: tl.constexpr,
                     BLOCK_P: tl.constexpr, STAGES: tl.constexpr, TMA_STORE: tl.constexpr, FAST: tl.constexpr):
    for t in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=STAGES):
        _tma_tile(xd, G, BIAS, Y, yd, C, P, osc, t * BLOCK_P, scale, eps, BLOCK_C, BLOCK_P, TMA_STORE, FAST)


# (kind, BLOCK_P, num_warps, stages (pipe), programs per SM (pipe))
CONFIGS = [
    ("tma", 64, 8, 1, 0), ("tma+st", 64, 8, 1, 0), ("tma", 64, 4, 1, 0), ("tma", 128, 8, 1, 0),
    ("tma", 128, 16, 1, 0), ("tma+st", 128, 16, 1, 0), ("tma", 32, 4, 1, 0),
    ("tma-pipe", 64, 8, 2, 1), ("tma-pipe", 64, 8, 3, 1), ("tma-pipe", 32, 8, 2, 2), ("tma-pipe", 32, 4, 3, 2),
    ("tma-pipe+st", 64, 8, 2, 1),
]


def variants(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor):
    from triton.tools.tensor_descriptor import TensorDescriptor

    if x.shape[0] != 1 or not x.is_contiguous() or not 256 < x.shape[1] <= 384:
        raise SystemExit("the probe takes one contiguous sample with 257..384 channels (three chunks of 128)")
    C = x.shape[1]
    P = x[0, 0].numel()
    if (P * x.element_size()) % 16:
        raise SystemExit("TMA needs the channel stride (P elements) to be a multiple of 16 bytes")
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    # 16-bit outputs: SiLU's fast forms, as the rule (triton_math.fast_level)
    fast = triton_math.fast_level(x.dtype, "cuda", None)
    out = []
    for kind, bp, nw, stages, per_sm in CONFIGS:
        y = torch.empty_like(x)
        xd = TensorDescriptor.from_tensor(x.view(C, P), [128, bp])
        yd = TensorDescriptor.from_tensor(y.view(C, P), [128, bp])
        n_tiles = triton.cdiv(P, bp)
        st = kind.endswith("+st")
        if kind.startswith("tma-pipe"):
            grid = (min(n_tiles, per_sm * sms),)

            def fn(xd=xd, yd=yd, y=y, bp=bp, nw=nw, stages=stages, grid=grid, n_tiles=n_tiles, st=st):
                _tma_pipe_kernel[grid](xd, gamma, bias, y, yd, C, P, P, n_tiles, C ** 0.5, 1e-12, BLOCK_C=128,
                                       BLOCK_P=bp, STAGES=stages, TMA_STORE=st, FAST=fast, num_warps=nw,
                                       num_stages=stages)
                return y
            label = f"{kind} p={bp} w={nw} stages={stages} x{per_sm}/SM"
        else:
            def fn(xd=xd, yd=yd, y=y, bp=bp, nw=nw, n_tiles=n_tiles, st=st):
                _tma_kernel[(n_tiles,)](xd, gamma, bias, y, yd, C, P, P, C ** 0.5, 1e-12, BLOCK_C=128, BLOCK_P=bp,
                                        TMA_STORE=st, FAST=fast, num_warps=nw, num_stages=1)
                return y
            label = f"{kind} p={bp} w={nw}"
        out.append((label, fn, {"kind": kind, "block_p": bp, "num_warps": nw, "stages": stages, "per_sm": per_sm}))
    return out


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "channel_tma_probe.json"
    for case in sys.argv[2:] or ["c384-240", "c384"]:
        measure(path.replace(".json", f"_{case}.json"), case, variants)
