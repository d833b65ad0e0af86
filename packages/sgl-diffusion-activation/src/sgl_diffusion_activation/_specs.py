"""Capabilities and contracts shared by the activation ops' backends (data, for ``activation.py`` and ``glu.py``)."""

from __future__ import annotations

from sgl_diffusion_core import FP8_OUT, FP8_OUT_FOREIGN, FP8_TOL, Capabilities, Contract

from ._geometry import LAYOUT_IRREGULAR, LAYOUT_ROWS

DISTRIBUTION = "sgl-diffusion-activation"

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    # one program per (row, column tile): grid dim 1 holds at most 65535 tiles of >= 256 columns
    max_last_dim=2**24,
    # FP8_OUT: an FP8 out_dtype in a format the device stores (describe tags it; see core's fp8)
    layouts=(LAYOUT_ROWS, FP8_OUT),
    interpretable=True,
    requires=("triton",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"),
                          layouts=(LAYOUT_ROWS, LAYOUT_IRREGULAR, FP8_OUT, FP8_OUT_FOREIGN))

# Unary: fp32 math and one rounding against eager's two (x + bias, then act): the core table holds
# (act's slope is at most 1.13, so the results differ by at most 2 ulps, 1 ulp above 2.3).
# An FP8 out_dtype (gelu_tanh, silu_and_mul, gelu_tanh_and_mul) against the eager chain then row-wise
# quantize_fp8: the kernel rounds its value to the result dtype first, then quantizes; values within the
# dtype's tolerance, plus one FP8 code (core's FP8_TOL).
UNARY_CLOSE = Contract.close(FP8_TOL)
# GLU: eager rounds act(a) (and x + bias) to the storage dtype before the product, the kernel
# rounds once: up to 3 roundings of u = 2**-8 (bf16) / 2**-11 (fp16) each, plus the bias rounding
# amplified by act's condition number (<= 1.3 for a >= 0): 6u relative.
GLU_CLOSE = Contract.close({"bfloat16": (1e-2, 3 * 2**-7), "float16": (1e-3, 3 * 2**-10), **FP8_TOL})

TRITON_NOTE = "fp32 math, one rounding; one program per (row, column tile), 16-byte accesses"
FP8_NOTE = ("; out_dtype=FP8: one program per row, the value rounded to the result dtype, then the row's "
            "amax, scale and FP8 codes in the same pass (rows wider than a register tile computed twice)")
TORCH_NOTE = "the eager chain itself (the definition of the exact contract)"
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
BENCH = "benchmarks/activation_bench.py"
