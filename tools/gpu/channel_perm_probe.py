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
``python3 tools/gpu/channel_perm_probe.py OUT.json [hints] [CASE ...]`` (default c384-240 c384 c384-480;
``hints``: run 4's load / store cache hints on the control instead).
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
def _out(xk, c, G, BIAS, Y, C, P, p, pmask, inv, FAST: tl.constexpr, STORE_CM: tl.constexpr):
    g = tl.load(G + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32)
    b = tl.load(BIAS + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = _affine_silu(triton_math.widen_held(xk), inv[None, :], g, b, True, True, FAST)
    tl.store(Y + c.to(tl.int64) * P + p, triton_math.narrow(y, Y.dtype.element_ty), mask=(c < C) & pmask,
             cache_modifier=STORE_CM)


@triton.jit
def _perm_kernel(X, G, BIAS, Y, C, P, scale, eps, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
                 MODE: tl.constexpr, FAST: tl.constexpr, LOAD_CM: tl.constexpr, LOAD_EV: tl.constexpr,
                 STORE_CM: tl.constexpr):
    pid = tl.program_id(0)
    p = (pid.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64))[None, :]
    pmask = p < P
    c0 = _rows(0, pid, BLOCK_C, MODE)
    c1 = _rows(1, pid, BLOCK_C, MODE)
    c2 = _rows(2, pid, BLOCK_C, MODE)
    x0 = tl.load(X + c0.to(tl.int64) * P + p, mask=(c0 < C) & pmask, other=0.0, cache_modifier=LOAD_CM,
                 eviction_policy=LOAD_EV)
    x1 = tl.load(X + c1.to(tl.int64) * P + p, mask=(c1 < C) & pmask, other=0.0, cache_modifier=LOAD_CM,
                 eviction_policy=LOAD_EV)
    x2 = tl.load(X + c2.to(tl.int64) * P + p, mask=(c2 < C) & pmask, other=0.0, cache_modifier=LOAD_CM,
                 eviction_policy=LOAD_EV)
    inv = scale / tl.maximum(tl.sqrt(tl.sum(_sq(x0) + _sq(x1) + _sq(x2), axis=0)), eps)
    _out(x0, c0, G, BIAS, Y, C, P, p, pmask, inv, FAST, STORE_CM)
    _out(x1, c1, G, BIAS, Y, C, P, p, pmask, inv, FAST, STORE_CM)
    _out(x2, c2, G, BIAS, Y, C, P, p, pmask, inv, FAST, STORE_CM)


# run 4's cache hints on the control (block chunks, a two-CTA cluster): (load cache modifier, load
# eviction policy, store cache modifier); the first is the library's kernel
HINTS = [("", "evict_first", ""), ("", "", ""), ("", "evict_last", ""), (".cg", "", ""), (".cg", "evict_first", ""),
         (".cs", "", ""), ("", "evict_first", ".cs"), (".cg", "evict_first", ".cs")]


def _check_shape(x: torch.Tensor) -> None:
    if x.shape[0] != 1 or not x.is_contiguous() or x.shape[1] != 384:
        raise SystemExit("the probe takes one contiguous sample with 384 channels")


def _variant(x, gamma, bias, label, mode, ctas, bp, hints=HINTS[0]):
    C = x.shape[1]
    P = x[0, 0].numel()
    fast = triton_math.fast_level(x.dtype, "cuda", None)
    y = torch.empty_like(x)
    lcm, lev, scm = hints

    def fn():
        _perm_kernel[(triton.cdiv(P, bp),)](x, gamma, bias, y, C, P, C ** 0.5, 1e-12, BLOCK_C=128, BLOCK_P=bp,
                                            MODE=MODES[mode], FAST=fast, LOAD_CM=lcm, LOAD_EV=lev, STORE_CM=scm,
                                            num_warps=8, num_stages=1, num_ctas=ctas)
        return y
    return label, fn, {"mode": mode, "ctas": ctas, "block_p": bp, "load_cm": lcm, "load_ev": lev, "store_cm": scm}


def variants(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor):
    """Run 3: every chunk assignment / order, as a cluster of two CTAs and as one CTA."""
    _check_shape(x)
    return [_variant(x, gamma, bias, f"{mode} ctas={ctas} p={bp}", mode, ctas, bp)
            for ctas, bp in ((2, 128), (1, 64)) for mode in MODES]


def hint_variants(x: torch.Tensor, gamma: torch.Tensor, bias: torch.Tensor):
    """Run 4: the control with each of ``HINTS``, twice in turn (the run's noise)."""
    _check_shape(x)
    return [_variant(x, gamma, bias, f"block ctas=2 p=128 ld={h[0] or '-'}/{h[1] or '-'} st={h[2] or '-'} #{k}",
                     "block", 2, 128, h) for k in (1, 2) for h in HINTS]


if __name__ == "__main__":
    path = sys.argv[1] if len(sys.argv) > 1 else "channel_perm_probe.json"
    which = hint_variants if len(sys.argv) > 2 and sys.argv[2] == "hints" else variants
    for case in [c for c in sys.argv[2:] if c != "hints"] or ["c384-240", "c384", "c384-480"]:
        measure(path.replace(".json", f"_{case}.json"), case, which)
