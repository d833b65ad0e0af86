"""Does the assignment of channels to the held slab's three register chunks move ``channel_rms_norm`` on
contiguous x at C = 384 (GPU probe, session 17)?

The public benches measure the cluster rule at 84.3-84.4% of copy at 21 x 240 x 416 but 85.7-85.8% at
21 x 120 x 208 and 85.7% at 21 x 480 x 832 (channel strides of 4, 1 and 16 MB), run after run: a
stride-dependent loss that points at how DRAM channels and banks see the 384 channel rows a slab reads
together. Every warp's load covers consecutive channels of one chunk; this probe changes which channels a
chunk holds, and the order in which programs walk the chunks, with nothing else changed:

* ``block``: chunk k holds channels ``k * 128 + j`` (the library's kernel; the probe's control);
* ``interleave``: chunk k holds channels ``3 * j + k`` (a warp's rows 12 MB apart instead of 4 MB);
* ``rotate``: ``block`` chunks, program ``pid`` reading them from chunk ``pid % 3`` on;
* ``reverse``: ``block`` chunks, odd programs reading them last to first.

Each is timed as one CTA of 64 positions and as a two-CTA cluster of 128 (the rule's form), with SiLU and
bias, against the public op and a same-run copy (``channel_pipe_probe.measure``). Usage:
``python3 tools/gpu/channel_perm_probe.py OUT.json [CASE ...]`` (default c384-240 c384 c384-480).
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
_sq = resolve_target(f"{_CH}:_sq")
_affine_silu = resolve_target(f"{_CH}:_affine_silu")

MODES = {"block": 0, "interleave": 1, "rotate": 2, "reverse": 3}


@triton.jit
def _rows(k, pid, BLOCK_C: tl.constexpr, MODE: tl.constexpr):
    j = tl.arange(0, BLOCK_C)
    if MODE == 1:
        return (j * 3 + k)[:, None]
    elif MODE == 2:
        return (((k + pid) % 3) * BLOCK_C + j)[:, None]
    elif MODE == 3:
        return (tl.where(pid % 2 == 1, 2 - k, k) * BLOCK_C + j)[:, None]
    else:
        return (k * BLOCK_C + j)[:, None]


@triton.jit
def _out(xk, c, G, BIAS, Y, C, P, p, pmask, inv, FAST: tl.constexpr):
    g = tl.load(G + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32)
    b = tl.load(BIAS + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = _affine_silu(triton_math.widen_held(xk), inv[None, :], g, b, True, True, FAST)
    tl.store(Y + c.to(tl.int64) * P + p, triton_math.narrow(y, Y.dtype.element_ty), mask=(c < C) & pmask)


@triton.jit
def _perm_kernel(X, G, BIAS, Y, C, P, scale, eps, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
                 MODE: tl.constexpr, FAST: tl.constexpr):
    pid = tl.program_id(0)
    p = (pid.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64))[None, :]
    pmask = p < P
    c0 = _rows(0, pid, BLOCK_C, MODE)
    c1 = _rows(1, pid, BLOCK_C, MODE)
    c2 = _rows(2, pid, BLOCK_C, MODE)
    x0 = tl.load(X + c0.to(tl.int64) * P + p, mask=(c0 < C) & pmask, other=0.0, eviction_policy="evict_first")
    x1 = tl.load(X + c1.to(tl.int64) * P + p, mask=(c1 < C) & pmask, other=0.0, eviction_policy="evict_first")
    x2 = tl.load(X + c2.to(tl.int64) * P + p, mask=(c2 < C) & pmask, other=0.0, eviction_policy="evict_first")
    inv = scale / tl.maximum(tl.sqrt(tl.sum(_sq(x0) + _sq(x1) + _sq(x2), axis=0)), eps)
    _out(x0, c0, G, BIAS, Y, C, P, p, pmask, inv, FAST)
    _out(x1, c1, G, BIAS, Y, C, P, p, pmask, inv, FAST)
    _out(x2, c2, G, BIAS, Y, C, P, p, pmask, inv, FAST)


def variants(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor):
    if x.shape[0] != 1 or not x.is_contiguous() or x.shape[1] != 384:
        raise SystemExit("the probe takes one contiguous sample with 384 channels")
    C = x.shape[1]
    P = x[0, 0].numel()
    fast = triton_math.fast_level(x.dtype, "cuda", None)
    out = []
    for ctas, bp in ((2, 128), (1, 64)):
        for mode, code in MODES.items():
            y = torch.empty_like(x)

            def fn(y=y, bp=bp, code=code, ctas=ctas):
                _perm_kernel[(triton.cdiv(P, bp),)](x, gamma, bias, y, C, P, C ** 0.5, 1e-12, BLOCK_C=128,
                                                    BLOCK_P=bp, MODE=code, FAST=fast, num_warps=8, num_stages=1,
                                                    num_ctas=ctas)
                return y
            out.append((f"{mode} ctas={ctas} p={bp}", fn, {"mode": mode, "ctas": ctas, "block_p": bp}))
    return out


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "channel_perm_probe.json"
    for case in sys.argv[2:] or ["c384-240", "c384", "c384-480"]:
        measure(path.replace(".json", f"_{case}.json"), case, variants)
