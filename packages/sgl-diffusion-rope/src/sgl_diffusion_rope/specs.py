"""Registry entries of sgl-diffusion-rope: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from sgl_diffusion_core import Capabilities, Contract, KernelSpec, OpDef, register, register_op

DISTRIBUTION = "sgl-diffusion-rope"
PKG = "sgl_diffusion_rope"

# Layout tags (describe_rope): x layout (or "bshd->bhsd"), angle source, pair convention.
_TABLE = ("bshd", "bhsd", "table-half", "table-full", "rotate-half", "interleaved")
_ARCH = (("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950"))
_EVERYWHERE = ("cuda", "hip", "cpu", "mps", "xpu")

OPS = {
    "apply_rope": ("RoPE of x with a cos/sin table or complex freqs_cis (rotate-half or interleaved, partial rotary)",
                   "describe_apply_rope", _TABLE + ("complex",), True),
    "apply_rope_qk": ("apply_rope on q and k in one launch", "describe_apply_rope_qk", _TABLE + ("complex",), True),
    "rope_3d": ("video RoPE, angles computed in the kernel from (t, h, w) grid positions or position ids",
                "describe_rope_3d", ("bshd", "bhsd", "grid-angles", "pos-angles", "rotate-half", "interleaved"),
                False),
    "qk_norm_rope": ("per-head RMS/LayerNorm then RoPE on q and k in one pass (optionally writing [B, H, S, Dh])",
                     "describe_qk_norm_rope", _TABLE + ("complex", "bshd->bhsd", "bhsd->bshd"), False),
}

# qk_norm_rope's eager chain (diffusers' RMSNorm) rounds the normalized value and its weighted
# product to the storage dtype before the rotation: two more roundings than the fused fp32 path,
# each up to half an ulp of an intermediate of magnitude up to |normalized x * weight| (~4-8 for
# RMS-normalized rows), mixed by cos/sin. Where the rotation cancels, the output is much smaller
# than those intermediates, so the eager chain's error is absolute, not relative to the output:
# measured on the H200 at Wan (387M values) 0.025 at outputs of 0.4. The declared bound is
# therefore absolute (bf16 6e-2: 2 ulps at magnitude 4-8, as norm's modulated ops declare); the
# tests also hold the fused path to one ulp of an fp64 evaluation, so no formula error hides there.
_TOLERANCES = {"qk_norm_rope": {"bfloat16": (6e-2, 2**-6), "float16": (8e-3, 2**-9)}}

for name, (summary, describe, layouts, has_exact) in OPS.items():
    op = f"rope.{name}"
    register_op(OpDef(
        op=op, distribution=DISTRIBUTION, describe=f"{PKG}.rope_api:{describe}", public=f"{PKG}.rope_api:{name}",
        summary=summary, default_exact=False, bench=f"{PKG}.rope_bench:{name}_cases",
    ))
    register(KernelSpec(
        op=op, backend="triton", target=f"{PKG}.rope_triton:rope",
        capabilities=Capabilities(platforms=("cuda", "hip"), min_arch=_ARCH, layouts=layouts, interpretable=True,
                                  requires=("triton",)),
        contract=Contract.close(_TOLERANCES.get(name)), priority=10,
        notes="one program per (token, block of heads); angles read or computed once per token; fp32 math",
        aot=f"{PKG}.rope_triton:aot_{name}", executed_on=("sm_90", "cpu-interpreter"),
    ))
    if has_exact:
        register(KernelSpec(
            op=op, backend="triton_exact", target=f"{PKG}.rope_triton:rope_exact",
            capabilities=Capabilities(platforms=("cuda", "hip"), min_arch=_ARCH, layouts=_TABLE, interpretable=True,
                                      requires=("triton",)),
            contract=Contract.exact(), priority=5,
            notes="the same kernel, every product and sum rounded to the eager dtype, no FMA (real tables)",
            aot=f"{PKG}.rope_triton:aot_{name}_exact", executed_on=("sm_90", "cpu-interpreter"),
        ))
    register(KernelSpec(
        op=op, backend="torch", target=f"{PKG}.rope_torch:rope",
        capabilities=Capabilities(platforms=_EVERYWHERE), contract=Contract.exact(), priority=0,
        notes="the eager chain (the definition of the contracts)", executed_on=("sm_90", "cpu"),
    ))
