"""Registry entries of sgl-diffusion-norm: plain data, imported with the package (no backend import)."""

from __future__ import annotations

from sgl_diffusion_core import Capabilities, Contract, KernelSpec, OpDef, register, register_op

DISTRIBUTION = "sgl-diffusion-norm"
PKG = "sgl_diffusion_norm"

# Layout tags of the modulation tensors (scale / shift), as returned by describe_ln_modulate.
MODULATION_LAYOUTS = ("per-channel", "per-sample", "per-token", "per-frame")

register_op(
    OpDef(
        op="norm.ln_modulate",
        distribution=DISTRIBUTION,
        describe=f"{PKG}.ln_modulate_api:describe_ln_modulate",
        public=f"{PKG}.ln_modulate_api:ln_modulate",
        summary="LayerNorm(x) [* weight + bias] * (scale_offset + scale) + shift",
        bench=f"{PKG}.ln_modulate_bench:bench_cases",
    )
)
register(
    KernelSpec(
        op="norm.ln_modulate",
        backend="triton",
        target=f"{PKG}.ln_modulate_triton:ln_modulate",
        capabilities=Capabilities(
            platforms=("cuda", "hip"),
            min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
            max_last_dim=65536,
            layouts=MODULATION_LAYOUTS,
            interpretable=True,
            requires=("triton",),
        ),
        contract=Contract.close(),
        priority=10,
        notes="one program per row; whole row in registers up to 8192 columns, chunked two-pass above",
        aot=f"{PKG}.ln_modulate_triton:aot_variants",
        executed_on=("sm_90", "cpu-interpreter"),
    )
)
register(
    KernelSpec(
        op="norm.ln_modulate",
        backend="torch",
        target=f"{PKG}.ln_modulate_torch:ln_modulate",
        capabilities=Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"), layouts=MODULATION_LAYOUTS),
        contract=Contract.close(),
        priority=0,
        notes="the executable spec: eager PyTorch in fp32, one final rounding",
        executed_on=("sm_90", "cpu"),
    )
)


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

# --- qk_norm ------------------------------------------------------------------------------------
register_op(
    OpDef(
        op="norm.qk_norm",
        distribution=DISTRIBUTION,
        describe=f"{PKG}.qk_norm_api:describe_qk_norm",
        public=f"{PKG}.qk_norm_api:qk_norm",
        summary="per-head RMSNorm / LayerNorm of q and k over head_dim (one launch, optional in place)",
        default_exact=False,
        bench=f"{PKG}.qk_norm_bench:bench_cases",
    )
)
register(
    KernelSpec(
        op="norm.qk_norm",
        backend="triton",
        target=f"{PKG}.qk_norm_triton:qk_norm",
        capabilities=Capabilities(**_GPU_CAPS, max_last_dim=4096),
        contract=Contract.close(),
        priority=10,
        notes="one launch for q and k; 2-D tiles of ~4 KB (heads x Dh) per program, fp32 statistics",
        aot=f"{PKG}.qk_norm_triton:aot_variants",
        executed_on=("cpu-interpreter",),
    )
)
register(
    KernelSpec(
        op="norm.qk_norm",
        backend="torch",
        target=f"{PKG}.qk_norm_torch:qk_norm",
        capabilities=Capabilities(platforms=_EVERYWHERE),
        contract=Contract.exact(),
        priority=0,
        notes="the eager chain (diffusers RMSNorm / F.layer_norm) op by op: the definition of exact",
        executed_on=("cpu",),
    )
)

# --- channel_rms_norm ---------------------------------------------------------------------------
register_op(
    OpDef(
        op="norm.channel_rms_norm",
        distribution=DISTRIBUTION,
        describe=f"{PKG}.channel_rms_norm_api:describe_channel_rms_norm",
        public=f"{PKG}.channel_rms_norm_api:channel_rms_norm",
        summary="F.normalize(x, dim=1) * sqrt(C) * gamma + bias [-> SiLU] (Wan-VAE RMS norm), 4-D / 5-D",
        default_exact=False,
        bench=f"{PKG}.channel_rms_norm_bench:bench_cases",
    )
)
register(
    KernelSpec(
        op="norm.channel_rms_norm",
        backend="triton",
        target=f"{PKG}.channel_rms_norm_triton:channel_rms_norm",
        capabilities=Capabilities(**_GPU_CAPS),
        contract=Contract.close(),
        priority=10,
        notes="a program owns a tile of spatial positions x all channels; contiguous and channels_last(_3d)",
        aot=f"{PKG}.channel_rms_norm_triton:aot_variants",
        executed_on=("cpu-interpreter",),
    )
)
register(
    KernelSpec(
        op="norm.channel_rms_norm",
        backend="torch",
        target=f"{PKG}.channel_rms_norm_torch:channel_rms_norm",
        capabilities=Capabilities(platforms=_EVERYWHERE),
        contract=Contract.exact(),
        priority=0,
        notes="the fp32 eager chain (F.normalize on x.float(), one rounding): the definition of exact",
        executed_on=("cpu",),
    )
)

# --- group_norm_silu ----------------------------------------------------------------------------
register_op(
    OpDef(
        op="norm.group_norm_silu",
        distribution=DISTRIBUTION,
        describe=f"{PKG}.group_norm_silu_api:describe_group_norm_silu",
        public=f"{PKG}.group_norm_silu_api:group_norm_silu",
        summary="F.silu(F.group_norm(x, num_groups, weight, bias, eps)) for 4-D / 5-D VAE activations",
        default_exact=False,
        bench=f"{PKG}.group_norm_silu_bench:bench_cases",
    )
)
register(
    KernelSpec(
        op="norm.group_norm_silu",
        backend="triton",
        target=f"{PKG}.group_norm_silu_triton:group_norm_silu",
        capabilities=Capabilities(**_GPU_CAPS),
        contract=Contract.close(),
        priority=10,
        notes="two passes: split per-group statistics (shifted sums, Chan combination), then normalize + SiLU",
        aot=f"{PKG}.group_norm_silu_triton:aot_variants",
        executed_on=("cpu-interpreter",),
    )
)
register(
    KernelSpec(
        op="norm.group_norm_silu",
        backend="torch",
        target=f"{PKG}.group_norm_silu_torch:group_norm_silu",
        capabilities=Capabilities(platforms=_EVERYWHERE),
        contract=Contract.exact(),
        priority=0,
        notes="the fp32 eager chain (F.group_norm on x.float(), F.silu, one rounding): the definition of exact",
        executed_on=("cpu",),
    )
)
