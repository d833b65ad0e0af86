"""Capabilities, contracts and notes of the ext ops' backends (data; imported by each op module).

The ext domain has no backend matrix: every op has a ``triton`` backend (CUDA, ROCm; the CPU
only under ``TRITON_INTERPRET=1``) and a ``torch`` backend (the reference, any device). The
contracts below are the documented semantics' tolerances: integer outputs (face ids) and masks
must be equal, float outputs agree within the fp32 tolerance given per op.
"""

from __future__ import annotations

from sgl_diffusion_core import Capabilities, Contract

DISTRIBUTION = "sgl-diffusion-ext"
BENCH = "benchmarks/ext_bench.py"

# the largest image / texture side the ops accept (pixel offsets stay int32 per image, keys per batch int64)
MAX_RESOLUTION = 16384
# the most faces / vertices: a face index lives in the low 31 bits of the rasterizer's 64-bit key
MAX_FACES = 2**31 - 2

_ARCH = (("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950"))
TRITON_CAPS = Capabilities(platforms=("cuda", "hip"), dtypes=("float32",), min_arch=_ARCH, interpretable=True,
                           requires=("triton",))
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), dtypes=("float32",))

_INTS = {"int32": (0.0, 0.0), "bool": (0.0, 0.0)}
# barycentrics and z/w: both backends run the same IEEE fp32 operations in the same order (no FMA
# contraction on the GPU, correctly rounded divisions), so they agree bit for bit where executed; the
# declared bound leaves room for a platform whose division differs in the last bit
RASTERIZE_CLOSE = Contract.close({**_INTS, "float32": (1e-6, 1e-6)})
INTERPOLATE_EXACT = Contract.exact()
UV_INPAINT_CLOSE = Contract.close({**_INTS, "float32": (1e-6, 1e-6)})
# Jacobi vs Gauss-Seidel order: equal where no two unpainted vertices are adjacent (the same fp32 sums in the
# same order); otherwise the order changes which neighbours a vertex sees (see vertex_inpaint's docstring)
VERTEX_INPAINT_CLOSE = Contract.close({**_INTS, "float32": (1e-5, 1e-5)})

RASTERIZE_TRITON_NOTE = ("the per-face path, measured faster than the binned path at 40k to 1M faces "
                         "(RasterConfig.from_heuristic)")
RASTERIZE_PERFACE_NOTE = ("per-face setup kernel, a persistent kernel over (face, 8x8 tile of its bounding box) work "
                          "items writing a 64-bit (depth, face) key per pixel with atomic_min, a resolve kernel")
RASTERIZE_BINNED_NOTE = ("faces binned into 8x8-pixel screen bins (count, cumsum, scatter into per-bin lists of fixed "
                         "capacity; a face past a full bin takes the per-face path), then one program per bin "
                         "reduces its faces' (depth, face) keys 16 faces at a time (8 on AMD) and resolves in place")
RASTERIZE_TORCH_NOTE = "the reference: the same setup and keys over (face, 16x16 tile) items, scatter_reduce amin"
INTERPOLATE_TRITON_NOTE = "one program per block of pixels, the three vertex attributes gathered per channel block"
INTERPOLATE_TORCH_NOTE = "the reference: gathers and (b0*a0 + b1*a1) + b2*a2 in fp32"
UV_INPAINT_TRITON_NOTE = ("push (2x2 means of known texels) and pull (bilinear) kernels per pyramid level, "
                          "Jacobi diffusion")
UV_INPAINT_TORCH_NOTE = "the reference: the same pyramid with tensor gathers"
VERTEX_INPAINT_TRITON_NOTE = ("Jacobi sweeps over a CSR vertex graph (one kernel per sweep), convergence checked "
                              "every 8 sweeps")
VERTEX_INPAINT_TORCH_NOTE = "the reference: sequential Gauss-Seidel sweeps in vertex order, fp32 sums in CSR order"
# where each backend ran against the reference: the CPU lane, and the GPU lane on an H100 (sm_90); vertex_inpaint's
# Triton backend there against Jacobi sweeps of the reference's graph, its torch reference on the CPU only
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
EXECUTED_CPU_TORCH = ("cpu",)
