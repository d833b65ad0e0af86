"""Triton kernel of ``vertex_inpaint`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``): Jacobi sweeps.

Setup (texel lookup, initial colours, the CSR vertex graph and its weights) and the write-back are the shared
torch ops of ``_vertex_graph`` on the device. Each sweep is one ``_sweep_kernel`` launch, one lane per vertex,
reading the previous sweep's colours and painted flags and writing the next ones (ping-pong buffers); every
sweep adds the number of vertices it painted to its slot of a counter. The host reads the counters every
``CHECK_EVERY`` sweeps: a sweep that painted nothing means every later one is a no-op (Jacobi sweeps are
idempotent once nothing changes), so the result equals sweeping to convergence. Built without FMA
contraction; the sums run over the neighbours in CSR order as the reference's do.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2

from . import _vertex_graph as G

# why the compile lanes see no 128-bit loads here (AotVariant.narrow_loads)
_NARROW = "neighbour colours gathered through the vertex graph's adjacency lists (data-dependent rows)"


@triton.jit(do_not_specialize=["V", "C", "max_deg", "slot"])
def _sweep_kernel(COL_IN, PAINT_IN, COL_OUT, PAINT_OUT, ROWPTR, NBR, WT, CNT, V, C, max_deg, slot,
                  BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    v = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = v < V
    cols = tl.arange(0, BLOCK_C)
    cm = (cols < C)[None, :]
    was = tl.load(PAINT_IN + v, mask=m, other=1) != 0
    start = tl.load(ROWPTR + v, mask=m, other=0)
    deg = tl.load(ROWPTR + v + 1, mask=m, other=0) - start
    todo = m & ~was
    s = tl.zeros((BLOCK, BLOCK_C), dtype=tl.float32)
    ws = tl.zeros((BLOCK,), dtype=tl.float32)
    for j in range(0, max_deg):
        em = todo & (j < deg)
        nb = tl.load(NBR + start + j, mask=em, other=0)
        pk = em & (tl.load(PAINT_IN + nb, mask=em, other=0) != 0)
        w = tl.load(WT + start + j, mask=pk, other=0.0)
        c = tl.load(COL_IN + (nb * C)[:, None] + cols[None, :], mask=pk[:, None] & cm, other=0.0)
        s = tl.where(pk[:, None], s + w[:, None] * c, s)
        ws = tl.where(pk, ws + w, ws)
    new = todo & (ws > 0.0)
    old = tl.load(COL_IN + (v * C)[:, None] + cols[None, :], mask=m[:, None] & cm, other=0.0)
    out = tl.where(new[:, None], tl.math.div_rn(s, tl.where(new, ws, 1.0)[:, None]), old)
    tl.store(COL_OUT + (v * C)[:, None] + cols[None, :], out, mask=m[:, None] & cm)
    tl.store(PAINT_OUT + v, (was | new).to(tl.int8), mask=m)
    tl.atomic_add(CNT + slot, tl.sum(new.to(tl.int32), axis=0))


# The launch rule: 128 vertices per program, every channel in one tile (C <= 16), 4 warps. Not yet swept on
# hardware.
BLOCK = 128
NUM_WARPS = 4
CHECK_EVERY = 8


def prepare(geom, *tensors):
    """A runner for one call signature: ``(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx) -> (texture, mask)``."""
    C, dev = geom.C, tensors[0].device
    launch_grid = (triton.cdiv(max(geom.V, 1), BLOCK),)
    sweep = PreparedLaunch(_sweep_kernel, launch_grid, {"BLOCK": BLOCK, "BLOCK_C": next_pow2(C)}, n_ptrs=8,
                           options={"num_warps": NUM_WARPS}, fp_fusion=False, device=dev)

    def run(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx, *_):
        texel, cv, colour, painted, rowptr, nbr, wt = G.setup(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx)
        V = colour.shape[0]
        max_deg = int((rowptr[1:] - rowptr[:-1]).max()) if V else 0
        col = [colour.contiguous(), torch.empty_like(colour)]
        pnt = [painted.to(torch.int8), torch.empty(V, dtype=torch.int8, device=dev)]
        cnt = torch.zeros(CHECK_EVERY, dtype=torch.int32, device=dev)
        done, i = V == 0 or max_deg == 0, 0
        while not done and i < V + CHECK_EVERY:  # a sweep paints at least one vertex or changes nothing
            a = i % 2
            sweep(col[a], pnt[a], col[1 - a], pnt[1 - a], rowptr, nbr, wt, cnt, V, C, max_deg, i % CHECK_EVERY)
            i += 1
            if i % CHECK_EVERY == 0:
                done = int(cnt[-1]) == 0
                cnt.zero_()
        a = i % 2
        return G.write_back(texture, mask, texel, cv, col[a], pnt[a] != 0)

    return run


def aot_variants(platform: str = "cuda"):
    """The sweep at 4 channels (BLOCK_C 4): 1 build."""
    from sgl_diffusion_core import AotVariant

    sig = {"COL_IN": "*fp32", "PAINT_IN": "*i8", "COL_OUT": "*fp32", "PAINT_OUT": "*i8", "ROWPTR": "*i64",
           "NBR": "*i64", "WT": "*fp32", "CNT": "*i32", "V": "i32", "C": "i32", "max_deg": "i32", "slot": "i32",
           "BLOCK": "constexpr", "BLOCK_C": "constexpr"}
    return [AotVariant(name=f"vertex_inpaint_sweep[fp32,c=4,block={BLOCK}]", kernel=_sweep_kernel, signature=sig,
                       constexprs={"BLOCK": BLOCK, "BLOCK_C": 4}, num_warps=NUM_WARPS,
                       options={"enable_fp_fusion": False},
                       divisible_by_16=tuple(a for a, t in sig.items() if t.startswith("*")),
                       narrow_loads=_NARROW)]
