"""Capabilities and contracts shared by the activation ops' backends (data, for ``activation.py`` and ``glu.py``)."""

from __future__ import annotations

from sgl_diffusion_core import Capabilities, Contract

from ._geometry import LAYOUT_IRREGULAR, LAYOUT_ROWS

DISTRIBUTION = "sgl-diffusion-activation"

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    # one program per (row, column tile): grid dim 1 holds at most 65535 tiles of >= 256 columns
    max_last_dim=2**24,
    layouts=(LAYOUT_ROWS,),
    interpretable=True,
    requires=("triton",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=(LAYOUT_ROWS, LAYOUT_IRREGULAR))

# Unary: fp32 math and one rounding against eager's two (x + bias, then act): the core table holds
# (act's slope is at most 1.13, so the results differ by at most 2 ulps, 1 ulp above 2.3).
UNARY_CLOSE = Contract.close()
# GLU: eager rounds act(a) (and x + bias) to the storage dtype before the product, the kernel
# rounds once: up to 3 roundings of u = 2**-8 (bf16) / 2**-11 (fp16) each, plus the bias rounding
# amplified by act's condition number (<= 1.3 for a >= 0): 6u relative.
GLU_CLOSE = Contract.close({"bfloat16": (1e-2, 3 * 2**-7), "float16": (1e-3, 3 * 2**-10)})

TRITON_NOTE = "fp32 math, one rounding; one program per (row, column tile), 16-byte accesses"
TORCH_NOTE = "the eager chain itself (the definition of the exact contract)"
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
BENCH = "benchmarks/activation_bench.py"
