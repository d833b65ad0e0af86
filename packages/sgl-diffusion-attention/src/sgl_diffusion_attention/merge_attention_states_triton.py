"""Triton kernel of ``merge_attention_states`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

One program per (sample, head, block of ``BLOCK_S`` tokens), on a 1-D grid: it reads the two
lse of its tokens once, computes ``m = max(lse1, lse2)``, ``e_i = exp(lse_i - m)`` and
``lse = m + log(e1 + e2)`` in fp32 (``w_i = e_i / (e1 + e2)`` is ``exp(lse_i - lse)``), then
``o = w1 * o1 + w2 * o2`` over the whole head dim (one tile) in fp32, rounded once. A part
of weight 0 (lse -inf) is not added, so NaN there never reaches the result; two -inf give
output 0 and lse -inf. Operands are addressed by strides (bshd, bhsd, varlen ``[T, H, D]``
with its ``[H, T]`` lse as one sample).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2


@triton.jit(do_not_specialize=["S", "n_s"])
def _merge_kernel(
    O1, L1, O2, L2, O, L,
    a_sb, a_ss, a_sh, c_sb, c_ss, c_sh, o_sb, o_ss, o_sh,
    l1_sb, l1_sh, l1_ss, l2_sb, l2_sh, l2_ss,
    S, H, n_s,
    D: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    bh = pid // n_s
    ps = pid - bh * n_s
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_s = ps * BLOCK_S + tl.arange(0, BLOCK_S)
    smask = offs_s < S
    lse1 = tl.load(L1 + b * l1_sb + h * l1_sh + offs_s * l1_ss, mask=smask, other=float("-inf"))
    lse2 = tl.load(L2 + b * l2_sb + h * l2_sh + offs_s * l2_ss, mask=smask, other=float("-inf"))
    m = tl.maximum(lse1, lse2)
    m = tl.where(m == float("-inf"), 0.0, m)
    e1 = tl.exp(lse1 - m)
    e2 = tl.exp(lse2 - m)
    total = e1 + e2
    empty = total == 0.0
    total = tl.where(empty, 1.0, total)
    tl.store(L + (b * H + h) * S + offs_s, tl.where(empty, float("-inf"), m + tl.log(total)), mask=smask)
    w1 = (e1 / total)[:, None]
    w2 = (e2 / total)[:, None]
    offs_d = tl.arange(0, BLOCK_D)
    mask = smask[:, None] & (offs_d < D)[None, :]
    rows = offs_s.to(tl.int64)[:, None]  # a varlen batch spans B * S tokens: 64-bit row offsets
    x1 = tl.load(O1 + b * a_sb + h * a_sh + rows * a_ss + offs_d[None, :], mask=mask, other=0.0)
    x2 = tl.load(O2 + b * c_sb + h * c_sh + rows * c_ss + offs_d[None, :], mask=mask, other=0.0)
    y = tl.where(w1 == 0.0, 0.0, w1 * x1.to(tl.float32)) + tl.where(w2 == 0.0, 0.0, w2 * x2.to(tl.float32))
    tl.store(O + b * o_sb + h * o_sh + rows * o_ss + offs_d[None, :], y.to(O.dtype.element_ty), mask=mask)


# The launch rule: 16 tokens per program, the whole head dim in one tile (the op serves D <= 512),
# 4 warps. A starting point, not yet swept on hardware.
BLOCK_S = 16
NUM_WARPS = 4


def block_d(D: int) -> int:
    return max(16, next_pow2(D))


def prepare(geom, o1, lse1, o2, lse2):
    """A runner for one call signature: ``(o1, lse1, o2, lse2, *scalars) -> (o, lse)``."""
    n_s = triton.cdiv(geom.S, BLOCK_S)
    launch = PreparedLaunch(_merge_kernel, (n_s * geom.B * geom.H,), {"D": geom.D, "BLOCK_S": BLOCK_S,
                                                                  "BLOCK_D": block_d(geom.D)},
                            n_ptrs=6, options={"num_warps": NUM_WARPS}, device=o1.device)
    ints = (*geom.o1, *geom.o2, *geom.o, *geom.lse1, *geom.lse2, geom.S, geom.H, n_s)
    shape, dtype, lse_shape, device = geom.out_shape, geom.dtype, geom.lse_shape, o1.device

    def run(o1, lse1, o2, lse2, *_):
        o = torch.empty(shape, dtype=dtype, device=device)
        lse = torch.empty(lse_shape, dtype=torch.float32, device=device)
        launch(o1, lse1, o2, lse2, o, lse, *ints)
        return o, lse

    return run


def aot_variants(platform: str = "cuda"):
    """bf16 / fp16 / fp32 outputs at head dims 64 and 128: 6 builds."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    ints = ("a_sb", "a_ss", "a_sh", "c_sb", "c_ss", "c_sh", "o_sb", "o_ss", "o_sh", "l1_sb", "l1_sh", "l1_ss",
            "l2_sb", "l2_sh", "l2_ss", "S", "H", "n_s")
    out = []
    for name in names.values():
        for D in (64, 128):
            sig = {p: f"*{name}" for p in ("O1", "O2", "O")}
            sig.update({"L1": "*fp32", "L2": "*fp32", "L": "*fp32", **{n: "i32" for n in ints},
                        "D": "constexpr", "BLOCK_S": "constexpr", "BLOCK_D": "constexpr"})
            out.append(AotVariant(
                name=f"merge_attention_states[{name},D={D},s={BLOCK_S},w={NUM_WARPS}]", kernel=_merge_kernel,
                signature=sig, constexprs={"D": D, "BLOCK_S": BLOCK_S, "BLOCK_D": block_d(D)}, num_warps=NUM_WARPS,
                divisible_by_16=("O1", "O2", "O", "L1", "L2", "L", "a_sb", "a_ss", "a_sh", "c_sb", "c_ss", "c_sh",
                                 "o_sb", "o_ss", "o_sh"),
                narrow_loads="" if D * (4 if name == "fp32" else 2) >= 256 else (
                    f"a {BLOCK_S} x {D} tile of 16-bit values over {NUM_WARPS} wave64 warps gives each lane "
                    "4 values (8 bytes)"),
            ))
    return out
