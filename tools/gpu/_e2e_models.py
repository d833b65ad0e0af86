"""The models and measurements of ``tools/gpu/sites_e2e.py``: FLUX.1-dev, Wan2.1-T2V-14B and HunyuanVideo
transformer configs (real and tiny), their forward inputs, the build with random weights cast as
``from_pretrained`` casts, the meta-device dry run; one synchronized forward, the timed calls (CUDA events on a
GPU, the host clock on a CPU), the comparison of an output against the reference, and torchao's float8
baseline."""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch


@dataclass
class ModelSpec:
    """One benchmarked model: its diffusers class, constructor config and forward inputs."""

    key: str
    cls_name: str
    config: dict[str, Any]
    tokens: dict[str, int]
    blocks: dict[str, int]
    reps: int
    make_inputs: Callable[[torch.device, torch.dtype], dict[str, Any]]
    notes: list[str] = field(default_factory=list)


def _randn(shape: tuple[int, ...], device: torch.device, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=g, device=device).to(dtype)


# the constructor arguments in black-forest-labs/FLUX.1-dev transformer/config.json
FLUX_DEV = dict(
    patch_size=1, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
    num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768, guidance_embeds=True,
    axes_dims_rope=(16, 56, 56),
)  # fmt: skip
# the same model kinds scaled down: 2 blocks of each kind, 2 heads of 16 (RoPE axes summing to 16)
FLUX_TINY = {**FLUX_DEV, "in_channels": 16, "num_layers": 2, "num_single_layers": 2, "attention_head_dim": 16,
             "num_attention_heads": 2, "joint_attention_dim": 32, "pooled_projection_dim": 32,
             "axes_dims_rope": (4, 6, 6)}  # fmt: skip
# the constructor arguments in Wan-AI/Wan2.1-T2V-14B-Diffusers transformer/config.json
WAN_T2V_14B = dict(
    patch_size=(1, 2, 2), num_attention_heads=40, attention_head_dim=128, in_channels=16, out_channels=16,
    text_dim=4096, freq_dim=256, ffn_dim=13824, num_layers=40, cross_attn_norm=True,
    qk_norm="rms_norm_across_heads", eps=1e-6, rope_max_seq_len=1024,
)  # fmt: skip
WAN_TINY = {**WAN_T2V_14B, "num_attention_heads": 2, "attention_head_dim": 16, "in_channels": 4, "out_channels": 4,
            "text_dim": 32, "freq_dim": 32, "ffn_dim": 64, "num_layers": 2, "rope_max_seq_len": 32}  # fmt: skip


def flux_spec(tiny: bool) -> ModelSpec:
    """FLUX.1-dev at 1024x1024 (64x64 latent patches: 4096 image tokens, 512 text tokens)."""
    config: dict[str, Any] = dict(FLUX_TINY if tiny else FLUX_DEV)
    side, s_txt = (8, 16) if tiny else (64, 512)
    s_img = side * side

    def make_inputs(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
        img_ids = torch.zeros(s_img, 3, device=device)
        img_ids[:, 1] = torch.arange(side, device=device).repeat_interleave(side)
        img_ids[:, 2] = torch.arange(side, device=device).repeat(side)
        return {
            "hidden_states": _randn((1, s_img, config["in_channels"]), device, dtype, 1),
            "encoder_hidden_states": _randn((1, s_txt, config["joint_attention_dim"]), device, dtype, 2),
            "pooled_projections": _randn((1, config["pooled_projection_dim"]), device, dtype, 3),
            # the forward multiplies timestep and guidance by 1000 (diffusers 0.42.1): t=1.0 is 1000
            "timestep": torch.tensor([1.0], device=device),
            "guidance": torch.tensor([3.5], device=device),
            "img_ids": img_ids,
            "txt_ids": torch.zeros(s_txt, 3, device=device),
            "return_dict": False,
        }

    return ModelSpec(
        key="flux",
        cls_name="FluxTransformer2DModel",
        config=config,
        tokens={"image": s_img, "text": s_txt, "joint": s_img + s_txt},
        blocks={"double": config["num_layers"], "single": config["num_single_layers"]},
        reps=5,
        make_inputs=make_inputs,
    )


WAN_LATENTS = {"480p": (1, 16, 21, 60, 104), "720p": (1, 16, 21, 90, 160)}


def wan_spec(tiny: bool, blocks: int | None, res: str = "480p") -> ModelSpec:
    """Wan2.1-T2V-14B, 81 frames at 480p (latent [1, 16, 21, 60, 104]: 32760 tokens) or 720p (latent
    [1, 16, 21, 90, 160]: 75600 tokens), 512 text tokens."""
    config: dict[str, Any] = dict(WAN_TINY if tiny else WAN_T2V_14B)
    latent, s_txt = ((1, 4, 3, 8, 8), 16) if tiny else (WAN_LATENTS[res], 512)
    full = config["num_layers"]
    notes = []
    if blocks is not None and blocks != full:
        if not 1 <= blocks <= full:
            raise SystemExit(f"--wan-blocks must be in 1..{full}, got {blocks}")
        # the same model as truncating ``model.blocks`` to its first N, without building the rest
        config["num_layers"] = blocks
        notes.append(f"truncated to {blocks} of {full} blocks (built with num_layers={blocks})")
    p_t, p_h, p_w = config["patch_size"]
    s_img = (latent[2] // p_t) * (latent[3] // p_h) * (latent[4] // p_w)

    def make_inputs(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
        return {
            "hidden_states": _randn(latent, device, dtype, 1),
            "timestep": torch.tensor([500], device=device),
            "encoder_hidden_states": _randn((1, s_txt, config["text_dim"]), device, dtype, 2),
            "return_dict": False,
        }

    return ModelSpec(
        key="wan" if res == "480p" or tiny else f"wan_{res}",
        cls_name="WanTransformer3DModel",
        config=config,
        tokens={"video": s_img, "text": s_txt},
        blocks={"blocks": config["num_layers"], "blocks_full": full},
        reps=3,
        make_inputs=make_inputs,
        notes=notes,
    )


# the constructor arguments in hunyuanvideo-community/HunyuanVideo transformer/config.json
HUNYUAN_VIDEO = dict(
    in_channels=16, out_channels=16, num_attention_heads=24, attention_head_dim=128, num_layers=20,
    num_single_layers=40, num_refiner_layers=2, mlp_ratio=4.0, patch_size=2, patch_size_t=1, qk_norm="rms_norm",
    guidance_embeds=True, text_embed_dim=4096, pooled_projection_dim=768, rope_theta=256.0,
    rope_axes_dim=(16, 56, 56),
)  # fmt: skip
HUNYUAN_TINY = {**HUNYUAN_VIDEO, "in_channels": 4, "out_channels": 4, "num_attention_heads": 2,
                "attention_head_dim": 16, "num_refiner_layers": 1, "guidance_embeds": False, "text_embed_dim": 32,
                "pooled_projection_dim": 32, "rope_axes_dim": (4, 6, 6)}  # fmt: skip


def hunyuan_spec(tiny: bool, blocks: tuple[int, int]) -> ModelSpec:
    """HunyuanVideo at 720p, 129 frames (latent [1, 16, 33, 90, 160]: 118800 video tokens), 256 text
    tokens of which the last 200 are padding (``encoder_attention_mask``): the padded joint attention
    case. Built with ``blocks = (double, single)`` blocks, a stack of the model's 20 + 40."""
    config: dict[str, Any] = dict(HUNYUAN_TINY if tiny else HUNYUAN_VIDEO)
    latent, s_txt, pad = ((1, 4, 3, 8, 8), 16, 6) if tiny else ((1, 16, 33, 90, 160), 256, 200)
    full = (config["num_layers"], config["num_single_layers"])
    double, single = blocks
    if not (1 <= double <= full[0] and 0 <= single <= full[1]):
        raise SystemExit(f"--hunyuan-blocks must be D,S with 1 <= D <= {full[0]}, 0 <= S <= {full[1]}")
    config["num_layers"], config["num_single_layers"] = double, single
    notes = [f"a stack of {double} of {full[0]} double and {single} of {full[1]} single blocks"]
    s_img = latent[2] * (latent[3] // 2) * (latent[4] // 2)

    def make_inputs(device: torch.device, dtype: torch.dtype) -> dict[str, Any]:
        mask = torch.ones(1, s_txt, dtype=torch.long, device=device)
        mask[:, s_txt - pad :] = 0
        kw = {
            "hidden_states": _randn(latent, device, dtype, 1),
            "timestep": torch.tensor([500], device=device),
            "encoder_hidden_states": _randn((1, s_txt, config["text_embed_dim"]), device, dtype, 2),
            "encoder_attention_mask": mask,
            "pooled_projections": _randn((1, config["pooled_projection_dim"]), device, dtype, 3),
            "return_dict": False,
        }
        if config["guidance_embeds"]:
            kw["guidance"] = torch.tensor([6.0 * 1000], device=device)
        return kw

    return ModelSpec(
        key="hunyuan",
        cls_name="HunyuanVideoTransformer3DModel",
        config=config,
        tokens={"video": s_img, "text": s_txt, "text_padded": pad, "joint": s_img + s_txt},
        blocks={"double": double, "single": single, "double_full": full[0], "single_full": full[1]},
        reps=3,
        make_inputs=make_inputs,
        notes=notes,
    )


def _keeps_fp32(name: str, keep: list[str]) -> bool:
    """``from_pretrained``'s rule: a parameter stays fp32 when a dotted component of its name is listed."""
    return any(k in name.split(".") for k in keep)


def cast_like_from_pretrained(model: torch.nn.Module, dtype: torch.dtype, cast_all: bool) -> list[str]:
    """Cast floating parameters and persistent buffers to ``dtype`` in place, except the model's
    ``_keep_in_fp32_modules`` (unless ``cast_all``); non-persistent buffers keep their init dtype.
    Returns the names kept in fp32."""
    keep = [] if cast_all else list(getattr(model, "_keep_in_fp32_modules", None) or [])
    kept: list[str] = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point():
                continue
            if _keeps_fp32(name, keep):
                kept.append(name)
                continue
            p.data = p.data.to(dtype)
        for mod_name, mod in model.named_modules():
            for b_name, b in list(mod._buffers.items()):
                full = f"{mod_name}.{b_name}" if mod_name else b_name
                if b is None or not b.is_floating_point() or b_name in mod._non_persistent_buffers_set:
                    continue
                if _keeps_fp32(full, keep):
                    kept.append(full)
                    continue
                mod._buffers[b_name] = b.to(dtype)
    return kept


def build(spec: ModelSpec, device: torch.device, dtype: torch.dtype, cast_all: bool) -> tuple[torch.nn.Module, dict]:
    """Build the model on ``device`` with diffusers' default init, re-draw all-zero parameters, cast."""
    import diffusers

    cls = getattr(diffusers, spec.cls_name)
    with torch.device(device):
        model = cls(**spec.config)
    g = torch.Generator(device=device).manual_seed(0)
    redrawn: list[str] = []
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.is_floating_point() and not bool(p.any()):
                p.normal_(0.0, 0.02, generator=g)
                redrawn.append(name)
    kept = cast_like_from_pretrained(model, dtype, cast_all)
    model.eval().requires_grad_(False)
    n_params = sum(p.numel() for p in model.parameters())
    n_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    info = {
        "params": n_params,
        "weights_gb": round(n_bytes / 2**30, 3),
        "redrawn_zero_params": _compact_names(redrawn),
        "kept_fp32": _compact_names(kept),
    }
    return model, info


def _compact_names(names: list[str]) -> dict[str, int]:
    """Parameter names with block indices folded (``blocks.*.norm2.bias``) -> count."""
    return dict(Counter(".".join("*" if part.isdigit() else part for part in n.split(".")) for n in names))


def dry_run(specs: list[ModelSpec], cast_all: bool) -> None:
    """Build each config on the meta device: parameter count, memory estimate, mount plan."""
    import diffusers

    import sgl_diffusion_sites as sites

    for spec in specs:
        cls = getattr(diffusers, spec.cls_name)
        with torch.device("meta"):
            model = cls(**spec.config)
        kept = cast_like_from_pretrained(model, torch.bfloat16, cast_all)
        n = sum(p.numel() for p in model.parameters())
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        dim = spec.config["num_attention_heads"] * spec.config["attention_head_dim"]
        hidden = spec.config.get("ffn_dim", 4 * dim)
        tokens = sum(v for k, v in spec.tokens.items() if k != "joint")
        # a few live [tokens, hidden] bf16 tensors: a rough activation working set, not a measurement
        act = 6 * tokens * max(hidden, 4 * dim) * 2
        print(f"{spec.key}: {spec.cls_name} {spec.blocks} tokens {spec.tokens}", flush=True)
        print(
            f"  params {n / 1e9:.3f} B; weights {weights / 2**30:.2f} GiB (bf16, {len(kept)} tensors kept fp32: "
            f"{_compact_names(kept)}); fp32 build peak ~{n * 4 / 2**30:.1f} GiB; activations ~{act / 2**30:.2f} "
            f"GiB (rough)",
            flush=True,
        )
        for quality in ("exact", "close"):
            plan = sites.mount_plan(model, quality=quality)
            kinds = ", ".join(f"{k} {v['mounted']}/{v['mounted'] + v['skipped']}" for k, v in plan.by_kind().items())
            print(f"  plan {quality}: {len(plan.mounted)} mounted, {len(plan.skipped)} skipped ({kinds})", flush=True)
        del model


# ---------------------------------------------------------------------------------------------- measurement
def sync(device: torch.device) -> None:
    """Wait until a CUDA device has finished its pending work; a no-op on a CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward(model: torch.nn.Module, kw: dict[str, Any]) -> torch.Tensor:
    with torch.no_grad():
        return model(**kw)[0]


def wall_call(model: torch.nn.Module, kw: dict[str, Any], device: torch.device) -> tuple[torch.Tensor, float]:
    """One forward, synchronized: (output, seconds)."""
    sync(device)
    t0 = time.perf_counter()
    out = forward(model, kw)
    sync(device)
    return out, time.perf_counter() - t0


def _quantile(sorted_ms: list[float], q: float) -> float:
    pos = q * (len(sorted_ms) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def measure(
    model: torch.nn.Module, kw: dict[str, Any], device: torch.device, reps: int, warmup: int
) -> tuple[dict[str, Any], torch.Tensor]:
    """``warmup`` untimed calls, then ``reps`` timed calls: (timing record, last output)."""
    out = None
    for _ in range(warmup):
        out = forward(model, kw)
    times: list[float] = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in events:
            start.record()
            out = forward(model, kw)
            end.record()
        torch.cuda.synchronize(device)
        times = [start.elapsed_time(end) for start, end in events]
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            out = forward(model, kw)
            times.append((time.perf_counter() - t0) * 1e3)
    assert out is not None
    s = sorted(times)
    rec = {
        "median_ms": round(_quantile(s, 0.5), 3),
        "p20_ms": round(_quantile(s, 0.2), 3),
        "p80_ms": round(_quantile(s, 0.8), 3),
        "reps": reps,
        "warmup": warmup,
        "times_ms": [round(t, 3) for t in times],
    }
    return rec, out


def compare(out: torch.Tensor, ref: torch.Tensor) -> dict[str, Any]:
    """``torch.equal``, max abs difference and PSNR (peak: the reference's range, as the sites tests)."""
    rec: dict[str, Any] = {"equal": bool(torch.equal(out, ref))}
    if out.shape != ref.shape:
        rec["shape_mismatch"] = [list(out.shape), list(ref.shape)]
        return rec
    x, r = out.double(), ref.double()
    rec["finite"] = bool(torch.isfinite(x).all())
    if not (rec["finite"] and bool(torch.isfinite(r).all())):
        rec["max_abs_diff"] = rec["psnr_db"] = None
        return rec
    diff = (x - r).abs()
    rec["max_abs_diff"] = float(diff.max())
    mse = float(diff.pow(2).mean())
    peak = float(r.max() - r.min())
    rec["psnr_db"] = None if mse == 0 else round(10 * math.log10(peak * peak / mse), 2)  # None: identical
    rec["cosine"] = round(float(torch.nn.functional.cosine_similarity(x.flatten(), r.flatten(), dim=0)), 6)
    return rec


def torchao_fp8(model: torch.nn.Module) -> dict[str, Any]:
    """torchao's float8 dynamic row-wise quantization of the linears quality='fp8' converts (once)."""
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_

    import sgl_diffusion_sites as sites

    if getattr(model, "_e2e_torchao", None):
        return model._e2e_torchao
    names = set(sites.fp8_linear_paths(model))
    quantize_(
        model, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()), filter_fn=lambda m, fqn: fqn in names
    )
    info = {"linears": len(names)}
    object.__setattr__(model, "_e2e_torchao", info)
    return info


_ATTENTION_KERNELS = ("attention", "fmha", "flash", "sdpa", "cudnn", "_attn")


def attention_share(model: torch.nn.Module, kw: dict[str, Any], device: torch.device) -> dict[str, Any] | None:
    """The share of one call's GPU kernel time spent in attention kernels (profiler, CUDA only)."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        forward(model, kw)
        sync(device)
    total = attn = 0.0
    names: Counter = Counter()
    for e in prof.key_averages():
        us = float(getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0))
        if us <= 0 or e.key.startswith(("cudaDevice", "Memcpy", "Memset")):
            continue
        total += us
        if any(p in e.key.lower() for p in _ATTENTION_KERNELS):
            attn += us
            names[e.key[:80]] += us
    return {
        "share": round(attn / total, 4) if total else None,
        "attention_ms": round(attn / 1e3, 3),
        "kernels_ms": round(total / 1e3, 3),
        "top": {k: round(v / 1e3, 3) for k, v in names.most_common(4)},
    }


class Results:
    """The JSON record, rewritten (atomically) after every variant."""

    def __init__(self, path: Path | None, header: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {**header, "models": {}}

    def write(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        os.replace(tmp, self.path)
