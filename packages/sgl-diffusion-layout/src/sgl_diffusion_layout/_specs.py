"""Capabilities and notes shared by the layout ops' backends (data; imported by each op module)."""

from __future__ import annotations

from dataclasses import replace

from sgl_diffusion_core import Backend, Capabilities, Contract

DISTRIBUTION = "sgl-diffusion-layout"
BENCH = "benchmarks/layout_bench.py"

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    interpretable=True,
    requires=("triton",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"))
# nearest_upsample: no "float-index-differs" (sizes where eager's float index is not i // f)
UPSAMPLE_TRITON_CAPS = replace(TRITON_CAPS, layouts=("contiguous", "channels_last", "channels_last_3d"))

PERMUTE_NOTE = "strided permutation copy: one program per destination row, a [BM, BN] tile of 16-byte accesses"
GATHER_NOTE = ("row gather: the index read once per program, padding rows zero-filled (out-of-range rows of an "
               "unchecked call NaN-filled) in the same pass")
ROWS_NOTE = ("contiguous-rows copy: both parts (and q, k, v) in one launch, 16 KB tiles of the contiguous output on "
             "a 1-D grid, 16-byte accesses; head-strided inputs take the strided permutation copy")
META_NOTE = "one program per sample: chunked prefix sum of its mask row"
CAT_PAD_NOTE = ("channels_last_3d: a flat 1-D copy per output row (b, t, h) shifted by w_left*C, 16-byte accesses; "
                "contiguous: a tile per output row; the source frame chosen per program, padding zero-filled in the "
                "same pass")
UPSAMPLE_NOTE = ("one program per input row tile: loaded once, stored at every output position it feeds "
                 "(constexpr factor loops), source row by scalar divisions per program")
TORCH_NOTE = "the eager chain itself (the definition of the exact contract)"

# Every layout op's Triton kernel ran on an H200: the GPU lane (test_layout_gpu.py, torch.equal at
# Wan / HunyuanVideo / VAE shapes) and the benchmarks' result checks (ulysses_unpack_out: the
# benchmark check only, it has no GPU test).
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")


def backends(triton: str, torch: str, note: str, *, aot: str, caps: Capabilities = TRITON_CAPS) -> list[Backend]:
    """The two backends of a layout op: ``triton`` and ``torch`` (``"module:prepare_function"``
    each), both exact (data movement never converts a value)."""
    return [
        Backend("triton", triton, caps, Contract.exact(), priority=10, notes=note, aot=aot,
                executed_on=EXECUTED_TRITON),
        Backend("torch", torch, TORCH_CAPS, Contract.exact(), notes=TORCH_NOTE, executed_on=EXECUTED_TORCH),
    ]
