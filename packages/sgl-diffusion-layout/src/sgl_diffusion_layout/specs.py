"""Registry entries of sgl-diffusion-layout: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from dataclasses import replace

from sgl_diffusion_core import Capabilities, Contract, KernelSpec, OpDef, register, register_op

DISTRIBUTION = "sgl-diffusion-layout"
PKG = "sgl_diffusion_layout"

_TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    interpretable=True,
    requires=("triton",),
)
_TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"))

# op -> (module family, summary, notes of the triton backend)
_PERMUTE = "strided permutation copy: one program per destination row, a [BM, BN] tile of 16-byte accesses"
_GATHER = ("row gather: the index read once per program, padding rows zero-filled (out-of-range rows of an "
           "unchecked call NaN-filled) in the same pass")
_ROWS = ("contiguous-rows copy: both parts (and q, k, v) in one launch, 16 KB tiles of the contiguous output on "
         "a 1-D grid, 16-byte accesses; head-strided inputs take the strided permutation copy")
OPS: dict[str, tuple[str, str, str]] = {
    "ulysses_pack_qkv": ("ulysses", "q, k, v [B, S, H, Dh] -> one [W, B*S, H/W, 3*Dh] send buffer", _PERMUTE),
    "ulysses_unpack_qkv": ("ulysses", "received [W, B*Sl, Hl, 3*Dh] -> q, k, v [B, W*Sl, Hl, Dh]", _PERMUTE),
    "ulysses_pack_out": ("ulysses", "attention output [B, W*Sl, Hl, Dh] -> [W, B*Sl, Hl, Dh] send buffer", _PERMUTE),
    "ulysses_unpack_out": ("ulysses", "received [W, B*Sl, Hl, Dh] -> [B, Sl, W*Hl, Dh]", _PERMUTE),
    "usp_merge_heads": ("ulysses", "x.permute(2, 1, 0, 3, 4).contiguous() of [W, Sl, B, Hl, Dh]", _PERMUTE),
    "usp_split_heads": ("ulysses", "[B, Sl, H, Dh] -> [W, Sl, B, H/W, Dh] (inverse of usp_merge_heads)", _PERMUTE),
    "build_varlen_meta": ("varlen", "[B, S] bool mask -> (indices, cu_seqlens, max_seqlen, inverse)",
                          "one program per sample: chunked prefix sum of its mask row"),
    "varlen_pack_qkv": ("varlen", "t.reshape(B*S, H, Dh).index_select(0, indices) for q, k, v", _GATHER),
    "varlen_scatter": ("varlen", "packed [nnz, H, Dh] -> [B, S, H, Dh], zeros at padding", _GATHER),
    "joint_qkv_cat": ("joint", "img/txt q, k, v -> one [3, B, S_txt+S_img, H, Dh] buffer (torch.cat along S)",
                      _ROWS),
    "joint_split": ("joint", "(txt, img) of the joint attention output: views, or copies with copy=True", _ROWS),
    "causal_conv3d_cat_pad": ("conv_pad", "F.pad(torch.cat([cache_x, x], dim=2), padding) of [B, C, T, H, W]",
                              "channels_last_3d: a flat 1-D copy per output row (b, t, h) shifted by "
                              "w_left*C, 16-byte accesses; contiguous: a tile per output row; the source frame "
                              "chosen per program, padding zero-filled in the same pass"),
    "nearest_upsample": ("upsample", "F.interpolate(x, scale_factor=f, mode='nearest'|'nearest-exact'), integer f",
                         "one program per input row tile: loaded once, stored at every output position it feeds "
                         "(constexpr factor loops), source row by scalar divisions per program"),
}


_UPSAMPLE_LAYOUTS = ("contiguous", "channels_last", "channels_last_3d")


# Ops whose Triton kernel ran on an H200: the GPU lane (test_layout_gpu.py, torch.equal at Wan /
# HunyuanVideo / VAE shapes) and the benchmarks' result checks (ulysses_unpack_out: the benchmark
# check only, it has no GPU test).
_RAN_ON_H200 = frozenset(OPS)


def _register(name: str, family: str, summary: str, notes: str) -> None:
    op = f"layout.{name}"
    register_op(OpDef(
        op=op, distribution=DISTRIBUTION, describe=f"{PKG}.{family}_api:describe_{name}",
        public=f"{PKG}.{family}_api:{name}", summary=summary, default_exact=True,
        bench=f"{PKG}.layout_bench:{name}_cases",
    ))
    register(KernelSpec(
        op=op, backend="triton", target=f"{PKG}.{family}_triton:{name}",
        # nearest_upsample: no "float-index-differs" (sizes where eager's float index is not i // f)
        capabilities=replace(_TRITON_CAPS, layouts=_UPSAMPLE_LAYOUTS) if name == "nearest_upsample" else _TRITON_CAPS,
        contract=Contract.exact(), priority=10, notes=notes, aot=f"{PKG}.{family}_triton:aot_{name}",
        executed_on=("sm_90", "cpu-interpreter") if name in _RAN_ON_H200 else ("cpu-interpreter",),
    ))
    register(KernelSpec(
        op=op, backend="torch", target=f"{PKG}.{family}_torch:{name}", capabilities=_TORCH_CAPS,
        contract=Contract.exact(), priority=0, notes="the eager chain itself (the definition of the exact contract)",
        executed_on=("sm_90", "cpu"),
    ))


for _name, (_family, _summary, _notes) in OPS.items():
    _register(_name, _family, _summary, _notes)
