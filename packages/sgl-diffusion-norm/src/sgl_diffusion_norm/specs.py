"""Registry entries of sgl-diffusion-norm: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from sgl_diffusion_core import MODULATION_LAYOUTS, Capabilities, Contract, KernelSpec, OpDef, register, register_op

DISTRIBUTION = "sgl-diffusion-norm"
PKG = "sgl_diffusion_norm"


# ==== row-norm family (layer_norm, rms_norm, ln_modulate, rms_modulate, gated_residual_norm_modulate) ====
# Kernels: row_norm_triton.py (close), row_norm_exact_triton.py (exact, gated); eager chains: row_norm_torch.py.

_ROW_TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    max_last_dim=65536,
    layouts=MODULATION_LAYOUTS,
    interpretable=True,
    requires=("triton",),
)
_ROW_TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=MODULATION_LAYOUTS)

# The close kernels round once; the eager chain they are compared with rounds after every op
# (norm, `scale_offset + scale`, product, `+ shift`, final cast: up to 4 roundings of
# intermediates whose magnitude can exceed the result's when the shift cancels the product).
# Declared against the eager chain (the torch backend), for modulation of the magnitude of
# real adaLN outputs (|scale|, |shift| <~ 2); the tests also bound the close kernels against
# an fp64 evaluation of the same formula at one rounding.
_PLAIN_TOL = {"bfloat16": (1e-2, 2**-7), "float16": (1e-3, 2**-10), "float32": (1e-5, 1e-5)}
_MOD_TOL = {"bfloat16": (6e-2, 2**-6), "float16": (8e-3, 2**-9), "float32": (2e-5, 2e-5)}
# rms_norm: eager rounds the normalized value, then its product with the weight (two roundings)
_RMS_TOL = {"bfloat16": (1e-2, 2**-6), "float16": (1e-3, 2**-9), "float32": (1e-5, 1e-5)}

_ROW_OPS = (
    # op, summary, fp32 close tolerance table, aot entry of the close kernel, exact by default
    ("layer_norm", "F.layer_norm(x, (D,), weight, bias, eps)", _PLAIN_TOL, "aot_variants_layer_norm", True),
    ("rms_norm", "x * rsqrt(mean(x.float()**2) + eps) [* weight] [+ bias] (diffusers RMSNorm)", _RMS_TOL,
     "aot_variants_rms_norm", True),
    ("ln_modulate", "LayerNorm(x) [* weight + bias] * (scale_offset + scale) + shift", _MOD_TOL, "aot_variants",
     True),
    ("rms_modulate", "RMSNorm(x) [* weight] * (scale_offset + scale) + shift", _MOD_TOL, "aot_variants_rms_modulate",
     True),
)

# Exact by default (DESIGN.md, "Numeric contracts", makes exact the default wherever an exact
# kernel exists). The gate verified all 40 call signatures of test_row_norm_exact_gpu.py on an
# H200 (D 1536/2432/3072/5120; per-sample, per-token, per-frame modulation; plain, affine, fp32
# weights): torch.equal to eager, for all four ops. LayerNorm's exact kernel replays ATen's Welford
# order; a plain replay ran at 12-35% of copy, slower than eager's own F.layer_norm, and the build
# of row_norm_exact_triton.launch_constants (host table of combine coefficients, vector loads,
# the combine tree as warp shuffles) runs at 96-103% of copy (layer_norm) and 83-92% (ln_modulate;
# the close kernel 94-100%). exact=False selects the close kernel
# (docs/benchmarks/layer_norm_bench_h200_s8.json, ln_modulate_bench_h200_s8.json).
for _name, _summary, _tol, _aot, _exact_default in _ROW_OPS:
    _op = f"norm.{_name}"
    register_op(
        OpDef(
            op=_op,
            distribution=DISTRIBUTION,
            describe=f"{PKG}.row_norm_api:describe_{_name}",
            public=f"{PKG}.row_norm_api:{_name}",
            summary=_summary,
            default_exact=_exact_default,
            bench=(f"{PKG}.ln_modulate_bench:bench_cases" if _name == "ln_modulate"
                   else f"{PKG}.row_norm_bench:{_name}_cases"),
        )
    )
    register(
        KernelSpec(
            op=_op,
            backend="triton",
            target=f"{PKG}.row_norm_triton:row_norm",
            capabilities=_ROW_TRITON_CAPS,
            contract=Contract.close(_tol),
            priority=10,
            notes="fp32 statistics, one rounding; one program per row, whole row in registers up to 8192 "
            "columns, chunked two-pass above",
            aot=f"{PKG}.row_norm_triton:{_aot}",
            executed_on=("sm_90", "cpu-interpreter"),
        )
    )
    register(
        KernelSpec(
            op=_op,
            backend="triton_exact",
            target=f"{PKG}.row_norm_exact_triton:row_norm_exact",
            capabilities=_ROW_TRITON_CAPS,
            contract=Contract.exact(),
            priority=5,
            notes="eager's rounding points and (where read from ATen) its reduction order; trusted per call "
            "signature only after a BitExactFusionGate saw it match eager, else eager runs",
            aot=f"{PKG}.row_norm_exact_triton:aot_variants_{_name}",
            executed_on=("sm_90", "cpu-interpreter"),
        )
    )
    register(
        KernelSpec(
            op=_op,
            backend="torch",
            target=f"{PKG}.row_norm_torch:{_name}",
            capabilities=_ROW_TORCH_CAPS,
            contract=Contract.exact(),
            priority=0,
            notes="the eager chain itself (the definition of the exact contract; see row_norm_torch.py)",
            executed_on=("cpu",),
        )
    )

register_op(
    OpDef(
        op="norm.gated_residual_norm_modulate",
        distribution=DISTRIBUTION,
        describe=f"{PKG}.gated_norm_api:describe_gated_residual_norm_modulate",
        public=f"{PKG}.gated_norm_api:gated_residual_norm_modulate",
        summary="new = residual + gate * update (bit-exact); out = norm(new) * (scale_offset + scale) + shift",
        default_exact=False,
        bench=f"{PKG}.row_norm_bench:gated_residual_norm_modulate_cases",
    )
)
register(
    KernelSpec(
        op="norm.gated_residual_norm_modulate",
        backend="triton",
        target=f"{PKG}.row_norm_triton:gated_residual_norm_modulate",
        capabilities=_ROW_TRITON_CAPS,
        contract=Contract.close(_MOD_TOL),
        priority=10,
        notes="new_residual bit-exact to eager (rounded per op, no FMA); out close (fp32 statistics, one rounding)",
        aot=f"{PKG}.row_norm_triton:aot_variants_gated",
        executed_on=("sm_90", "cpu-interpreter"),
    )
)
register(
    KernelSpec(
        op="norm.gated_residual_norm_modulate",
        backend="torch",
        target=f"{PKG}.row_norm_torch:gated_residual_norm_modulate",
        capabilities=_ROW_TORCH_CAPS,
        contract=Contract.exact(),
        priority=0,
        notes="the eager chain itself: gated_residual, then the norm + modulate chain",
        executed_on=("cpu",),
    )
)
# ==== end of the row-norm family ====


# ================================================================================================
# Per-head and VAE norms (qk_norm, channel_rms_norm, group_norm_silu): one block per op family.
# ================================================================================================

_GPU_CAPS = dict(
    platforms=("cuda", "hip"),
    min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
    interpretable=True,
    requires=("triton",),
)
_EVERYWHERE = ("cuda", "hip", "cpu", "mps", "xpu")

# op family -> (summary, extra Triton capabilities, Triton notes, torch notes)
_HEAD_VAE_OPS = {
    "qk_norm": (
        "per-head RMSNorm / LayerNorm of q and k over head_dim (one launch, optional in place)",
        {"max_last_dim": 4096},
        "one launch for q and k; 2-D tiles of ~4 KB (heads x Dh) per program, fp32 statistics",
        "the eager chain (diffusers RMSNorm / F.layer_norm) op by op: the definition of exact",
    ),
    "channel_rms_norm": (
        "F.normalize(x, dim=1) * sqrt(C) * gamma + bias [-> SiLU] (Wan-VAE RMS norm), 4-D / 5-D",
        {},
        "a program owns a tile of spatial positions x all channels; contiguous and channels_last(_3d)",
        "the fp32 eager chain (F.normalize on x.float(), one rounding): the definition of exact",
    ),
    "group_norm_silu": (
        "F.silu(F.group_norm(x, num_groups, weight, bias, eps)) for 4-D / 5-D VAE activations",
        {},
        "two passes: split per-group statistics (shifted sums, Chan combination), then normalize + SiLU",
        "the fp32 eager chain (F.group_norm on x.float(), F.silu, one rounding): the definition of exact",
    ),
}

for _name, (_summary, _extra_caps, _triton_notes, _torch_notes) in _HEAD_VAE_OPS.items():
    _op = f"norm.{_name}"
    register_op(
        OpDef(
            op=_op,
            distribution=DISTRIBUTION,
            describe=f"{PKG}.{_name}_api:describe_{_name}",
            public=f"{PKG}.{_name}_api:{_name}",
            summary=_summary,
            default_exact=False,
            bench=f"{PKG}.{_name}_bench:bench_cases",
        )
    )
    register(
        KernelSpec(
            op=_op,
            backend="triton",
            target=f"{PKG}.{_name}_triton:{_name}",
            capabilities=Capabilities(**_GPU_CAPS, **_extra_caps),
            contract=Contract.close(),
            priority=10,
            notes=_triton_notes,
            aot=f"{PKG}.{_name}_triton:aot_variants",
            # H200: benchmark checks at production shapes and the GPU lane
            executed_on=("sm_90", "cpu-interpreter"),
        )
    )
    register(
        KernelSpec(
            op=_op,
            backend="torch",
            target=f"{PKG}.{_name}_torch:{_name}",
            capabilities=Capabilities(platforms=_EVERYWHERE),
            contract=Contract.exact(),
            priority=0,
            notes=_torch_notes,
            executed_on=("cpu",),
        )
    )
