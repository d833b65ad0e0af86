"""Capabilities, contracts and FP8 format facts of the quant ops' backends (data; imported by each op module).

The two FP8 storage formats and their facts are core's (``sgl_diffusion_core.vendor``). A GPU's
Triton kernels store and multiply its own format (``vendor.fp8_native``); ``quantize_fp8`` tags
an input whose format the device does not have (``LAYOUT_FOREIGN``), which only the torch backend
serves, and ``fp8_linear`` refuses it. The torch backends serve both formats on every device.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Capabilities, Contract, vendor

DISTRIBUTION = "sgl-diffusion-quant"
BENCH = "benchmarks/quant_bench.py"

E4M3FN, E4M3FNUZ = vendor.E4M3FN, vendor.E4M3FNUZ
FP8_MAX, FP8_TINY, MIN_AMAX = vendor.FP8_MAX, vendor.FP8_TINY, vendor.FP8_MIN_AMAX
AMD_TARGETS = vendor.FP8_AMD_TARGETS  # the AMD target that stores each format

# the FP8 formats the ops store: name -> torch dtype
FP8_DTYPES = {E4M3FN: torch.float8_e4m3fn, E4M3FNUZ: torch.float8_e4m3fnuz}
FP8_NAMES = {v: k for k, v in FP8_DTYPES.items()}

HIGH = ("bfloat16", "float16", "float32")
_FP8_ARCHS = (("cuda", 89), ("hip", "gfx942"), ("hip", "gfx950"))
_EVERYWHERE = ("cuda", "hip", "cpu", "mps", "xpu")

# quantize_fp8: layouts its describe tags
LAYOUT_ROWS = "uniform-rows"  # leading dims collapse into one row stride
LAYOUT_IRREGULAR = "irregular-rows"
LAYOUT_NATIVE = "native-fp8"  # the device stores this FP8 format (the CPU: both)
LAYOUT_FOREIGN = "foreign-fp8"  # a GPU that stores the other format

QUANT_TRITON_CAPS = Capabilities(platforms=("cuda", "hip"), dtypes=(*HIGH, E4M3FN, E4M3FNUZ), min_arch=_FP8_ARCHS,
                                 layouts=(LAYOUT_ROWS, LAYOUT_NATIVE), interpretable=True, requires=("triton",))
QUANT_TORCH_CAPS = Capabilities(platforms=_EVERYWHERE, dtypes=(*HIGH, E4M3FN, E4M3FNUZ),
                                layouts=(LAYOUT_ROWS, LAYOUT_IRREGULAR, LAYOUT_NATIVE, LAYOUT_FOREIGN))

# quantize_fp8: amax is a max (order-free) and both backends divide with IEEE fp32 division and
# convert with round-to-nearest-even, so they agree bit for bit where executed. The declared bound is
# one FP8 ulp on the codes (rtol 2**-3: three mantissa bits; atol: the format's smallest subnormal),
# for a conversion that breaks a tie the other way; scales (fp32) within 1e-6 relative.
QUANT_CLOSE = Contract.close({
    "float32": (0.0, 1e-6),
    E4M3FN: (FP8_TINY[E4M3FN], 2.0**-3),
    E4M3FNUZ: (FP8_TINY[E4M3FNUZ], 2.0**-3),
})

QUANT_TRITON_NOTE = ("one program per row: amax in fp32, scale = max(amax, 1e-12) / fp8_max, x / scale saturated "
                     "to +-fp8_max, round to nearest even; tensor-wise: an atomic-max amax pass first")
QUANT_TORCH_NOTE = "the reference: the same formula in eager torch (fp32)"
EXECUTED_TRITON = ("cpu-interpreter",)
EXECUTED_TORCH = ("cpu",)

# fp8_linear: the layouts its describe tags (epilogue, and the alignment torch._scaled_mm needs)
EPILOGUES = (None, "gelu_tanh", "gated_residual")
ACCUMULATE = ("fp32", "fast")
LAYOUT_ALIGNED = "k16-n16"  # a plain product, K and N multiples of 16 (cuBLASLt's FP8 GEMM)
LAYOUT_UNALIGNED = "unaligned"
# an epilogue is fused (one rounding): the gated residual's sum cancels far below the rounding of a bf16
# product, and a GELU after cuBLAS would cost passes over the output
LAYOUT_EPILOGUE = "fused epilogue (needs the product unrounded)"
OUT_DTYPES = ("bfloat16", "float16", "float32")

LINEAR_TRITON_CAPS = Capabilities(platforms=("cuda", "hip"), dtypes=(*OUT_DTYPES, E4M3FN, E4M3FNUZ),
                                  min_arch=_FP8_ARCHS, interpretable=True, requires=("triton",))
# rowwise-scaled torch._scaled_mm: CUDA sm_90+, bf16 output, K and N multiples of 16, no epilogue
LINEAR_SCALED_MM_CAPS = Capabilities(platforms=("cuda",), dtypes=("bfloat16", E4M3FN), min_arch=(("cuda", 90),),
                                     layouts=(LAYOUT_ALIGNED,))
LINEAR_TORCH_CAPS = Capabilities(platforms=_EVERYWHERE, dtypes=(*OUT_DTYPES, E4M3FN, E4M3FNUZ))

# fp8_linear, fused (Triton) against the reference: the same exact products (E4M3 x E4M3 fits fp32),
# summed in another order (|d acc| about sqrt(K / BLOCK_K) * 2**-24 * sum |x_k w_k|), then the same fp32
# epilogue and one rounding: one ulp of the output dtype either side, with an absolute floor for
# outputs that cancel (results of magnitude ~1, as the activations of a DiT block).
LINEAR_CLOSE = Contract.close({"bfloat16": (1e-2, 2**-7), "float16": (2e-3, 2**-9), "float32": (1e-3, 1e-4)})
# torch._scaled_mm rounds the product to bf16 before a bias that is not bf16 (two roundings)
LINEAR_SCALED_MM_CLOSE = Contract.close({"bfloat16": (2e-2, 2**-6), "float16": (2e-3, 2**-9),
                                         "float32": (1e-3, 1e-4)})
# accumulate="fast" on sm_90: the tensor cores' partial sum keeps fewer mantissa bits than fp32 over the
# whole K loop; its error grows with K and with the cancellation in a row's sum (on one H100, up to 7.3%
# of the output's RMS at single elements at K = 12288, where the operands' FP8 rounding moves elements
# by several times that). The contract is on what a user sees: the mean distance to the bf16 layer the
# FP8 one replaces at most this fraction above the fp32-summed result's (GPU lane, FLUX.1 / Wan shapes).
FAST_ACCUM_EXTRA_ERROR = 0.02

LINEAR_TRITON_NOTE = ("tiled FP8 GEMM (tl.dot on FP8 tiles, fp32 accumulator), row / tensor scales, bias and the "
                      "epilogue (GELU-tanh or gated residual) fused before the one rounding")
LINEAR_SCALED_MM_NOTE = ("torch._scaled_mm (cuBLASLt / CUTLASS) with row-wise scales, bf16 output, a bf16 bias in its "
                         "epilogue (another bias added after, in fp32); plain products only (no epilogue); "
                         "use_fast_accum for accumulate='fast'")
LINEAR_TORCH_NOTE = "the reference: x_fp8.float() @ w_fp8.float().T in fp32, scales, bias, epilogue, one rounding"
EXECUTED_SCALED_MM = ()
