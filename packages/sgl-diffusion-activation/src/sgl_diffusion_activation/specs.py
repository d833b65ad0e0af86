"""Registry entries of sgl-diffusion-activation: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from sgl_diffusion_core import Capabilities, Contract, KernelSpec, OpDef, register, register_op

from .geometry import LAYOUT_IRREGULAR, LAYOUT_ROWS

DISTRIBUTION = "sgl-diffusion-activation"
PKG = "sgl_diffusion_activation"

_TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    # one program per (row, column tile): grid dim 1 holds at most 65535 tiles of >= 256 columns
    max_last_dim=2**24,
    layouts=(LAYOUT_ROWS,),
    interpretable=True,
    requires=("triton",),
)
_TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=(LAYOUT_ROWS, LAYOUT_IRREGULAR))

# Unary: fp32 math and one rounding against eager's two (x + bias, then act): the core table holds
# (act's slope is at most 1.13, so the results differ by at most 2 ulps, 1 ulp above 2.3).
_UNARY_CLOSE = Contract.close()
# GLU: eager rounds act(a) (and x + bias) to the storage dtype before the product, the kernel
# rounds once: up to 3 roundings of u = 2**-8 (bf16) / 2**-11 (fp16) each, plus the bias rounding
# amplified by act's condition number (<= 1.3 for a >= 0): 6u relative.
_GLU_CLOSE = Contract.close({"bfloat16": (1e-2, 3 * 2**-7), "float16": (1e-3, 3 * 2**-10)})

_UNARY = {
    "silu": "silu(x + bias) = s * sigmoid(s)",
    "gelu_tanh": "gelu(x + bias, approximate='tanh')",
    "gelu": "gelu(x + bias) (erf form)",
}
_PACKED = {
    "silu_and_mul": "silu(x[..., :D]) * x[..., D:] (packed SwiGLU, optional [2D] bias)",
    "gelu_tanh_and_mul": "gelu_tanh(x[..., :D]) * x[..., D:] (packed GeGLU, optional [2D] bias)",
    "gelu_and_mul": "gelu(x[..., :D]) * x[..., D:] (packed GeGLU, erf form, optional [2D] bias)",
}
_SPLIT = {
    "silu_mul": "silu(a) * b",
    "gelu_tanh_mul": "gelu_tanh(a) * b",
    "gelu_mul": "gelu(a) * b (erf form)",
}

for table, api, describe, kernels, close in (
    (_UNARY, "act_api", "describe_unary", "act", _UNARY_CLOSE),
    (_PACKED, "glu_api", "describe_glu_packed", "glu", _GLU_CLOSE),
    (_SPLIT, "glu_api", "describe_glu_split", "glu", _GLU_CLOSE),
):
    for name, summary in table.items():
        op = f"activation.{name}"
        register_op(
            OpDef(
                op=op,
                distribution=DISTRIBUTION,
                describe=f"{PKG}.{api}:{describe}",
                public=f"{PKG}.{api}:{name}",
                summary=summary,
                default_exact=False,
                bench=f"{PKG}.activation_bench:{name}_cases",
            )
        )
        register(
            KernelSpec(
                op=op,
                backend="triton",
                target=f"{PKG}.{kernels}_triton:{name}",
                capabilities=_TRITON_CAPS,
                contract=close,
                priority=10,
                notes="fp32 math, one rounding; one program per (row, column tile), 16-byte accesses",
                aot=f"{PKG}.{kernels}_triton:aot_{name}",
                executed_on=("sm_90", "cpu-interpreter"),
            )
        )
        register(
            KernelSpec(
                op=op,
                backend="torch",
                target=f"{PKG}.{kernels}_torch:{name}",
                capabilities=_TORCH_CAPS,
                contract=Contract.exact(),
                priority=0,
                notes="the eager chain itself (the definition of the exact contract)",
                executed_on=("sm_90", "cpu"),
            )
        )
