"""What the contiguous layout's access pattern allows, without channel_rms_norm's arithmetic (GPU, < 120 s).

channel_rms_norm on contiguous x (channels strided by P) reads, per program, a ``[C, BLOCK_P]``
slab of C runs of ``BLOCK_P`` positions each, P elements apart, and writes the same runs. At the
Wan-VAE bench shapes the kernel reaches 92.4 / 85.9 / 82.3% of copy at C = 96 / 192 / 384 (session
14 run 1), falling with C, while the channels_last rows kernel, reading one dense run per program,
reaches 95-98%. This probe copies x to y over the same tiles with no arithmetic:

* ``held``: the slab's three channel chunks all loaded, then all stored (the hold kernel's
  program: one load phase, one store phase);
* ``chunked``: chunk by chunk, each loaded and stored before the next (no phase structure: loads
  of many chunks in flight across the programs of an SM).

If the held copy of 128-byte runs at C = 384 stays near 82%, the slab's access pattern and phase
structure, not the norm's arithmetic, bounds the kernel. Each copy is checked with ``torch.equal``.
Rows: % of a same-run copy of the same bytes (``sgl_diffusion_core.bench.sweep``).

Usage: ``python3 tools/gpu/channel_pattern_probe.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import bench, resolve_target


@triton.jit
def _tile(X, b, p, pmask, P, C, k, BLOCK_C: tl.constexpr):
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    return X + b * C * P + c.to(tl.int64)[:, None] * P + p[None, :], (c < C)[:, None] & pmask[None, :]


@triton.jit
def _slab_copy(X, Y, C, P, n_pblk, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, HELD: tl.constexpr):
    """Three channel chunks of ``BLOCK_C`` rows x ``BLOCK_P`` positions (C = 3 * BLOCK_C)."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // n_pblk
    p = (pid - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    pmask = p < P
    if HELD:
        x0p, m0 = _tile(X, b, p, pmask, P, C, 0, BLOCK_C)
        x1p, m1 = _tile(X, b, p, pmask, P, C, 1, BLOCK_C)
        x2p, m2 = _tile(X, b, p, pmask, P, C, 2, BLOCK_C)
        x0 = tl.load(x0p, mask=m0, eviction_policy="evict_first")
        x1 = tl.load(x1p, mask=m1, eviction_policy="evict_first")
        x2 = tl.load(x2p, mask=m2, eviction_policy="evict_first")
        y0p, _ = _tile(Y, b, p, pmask, P, C, 0, BLOCK_C)
        y1p, _ = _tile(Y, b, p, pmask, P, C, 1, BLOCK_C)
        y2p, _ = _tile(Y, b, p, pmask, P, C, 2, BLOCK_C)
        tl.store(y0p, x0, mask=m0)
        tl.store(y1p, x1, mask=m1)
        tl.store(y2p, x2, mask=m2)
    else:
        for k in tl.static_range(3):
            xp, m = _tile(X, b, p, pmask, P, C, k, BLOCK_C)
            yp, _ = _tile(Y, b, p, pmask, P, C, k, BLOCK_C)
            tl.store(yp, tl.load(xp, mask=m, eviction_policy="evict_first"), mask=m)


@dataclasses.dataclass(frozen=True)
class Tile:
    block_p: int
    num_warps: int
    held: bool


def main(path: str) -> int:
    device = torch.device("cuda")
    shapes = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES")
    rows, failed = [], []
    for name in ("c384", "c192", "c96"):
        shape, _ = shapes[name]
        B, C = shape[0], shape[1]
        x = torch.randn(shape, device=device).to(torch.bfloat16)
        P = x.numel() // (B * C)
        tiles = [Tile(64, 8, True)] + [Tile(bp, w, h) for h in (True, False) for bp in (32, 64, 128, 256)
                                       for w in (4, 8) if (bp, w, h) != (64, 8, True)]

        def run_for(t, x=x, C=C, P=P, B=B):
            y = torch.empty_like(x)
            n_pblk = -(-P // t.block_p)

            def go():
                _slab_copy[(B * n_pblk,)](x, y, C, P, n_pblk, BLOCK_C=C // 3, BLOCK_P=t.block_p, HELD=t.held,
                                          num_warps=t.num_warps, num_stages=1)
                return y
            return go

        def check(y, x=x, name=name):
            if not torch.equal(y, x):
                failed.append(name)
                return "FAILED: the copy differs from x"
            return None

        rows += bench.sweep(f"slab_copy/{name}", tiles, run_for, 2 * bench.tensor_bytes(x), device, check=check)
        del x
        torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows, "failed": failed}, f, indent=1, default=str)
    print("\n".join(bench.sweep_summary(rows)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "channel_pattern_probe.json"))
