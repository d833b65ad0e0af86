"""``quality="fp8"``: the linear layers of a model's transformer blocks as FP8 linears, and the measured
distance of a mounted model's output to the unmounted one.

Policy: inside each transformer block (the classes ``optimize`` mounts as ``block_residuals``),
every ``nn.Linear`` of attention and MLP becomes an ``sgl_diffusion_quant.FP8Linear`` (weight per
output channel in the device's FP8 format, input quantized per row at each call); a diffusers
``GELU(approximate="tanh")`` projection becomes one FP8 linear with the GELU fused as its epilogue.
The FP8 linears sum with ``accumulate="fast"`` (sm_90's FP8 tensor cores keep their own partial sum, as
torchao's float8 inference does by default): on one H100 the GEMMs ran 1.42-1.78x bf16 against
1.17-1.40x summing in fp32, and the sum's error was about a hundredth of the FP8 rounding's
(``measure_quality`` reports the distance of the whole model's output).
Linears under a norm (the adaLN modulation projections: a few rows per call), the text stream's
linears (``TEXT_STREAM``: a few hundred rows, where an FP8 linear's extra quantize launch and host
time exceed what its GEMM saves), the embeddings and the final projection stay bf16. The bf16 weight
of each replaced linear moves to host memory while mounted (the FP8 copy is the one on the device);
``unmount`` moves it back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from sgl_diffusion_core import device_fp8_dtype

from .report import MountReport, Site

FP8_OPS = ("quant.quantize_fp8", "quant.fp8_linear")


def _is_tanh_gelu_proj(m: torch.nn.Module) -> bool:
    return (type(m).__name__ == "GELU" and type(m).__module__.startswith("diffusers.")
            and getattr(m, "approximate", None) == "tanh" and type(getattr(m, "proj", None)) is torch.nn.Linear)


# the linears of a block's text stream, by their diffusers names: joint attention's text projections
# (FLUX, SD3, HunyuanVideo, Qwen-Image), the text MLP, cross-attention's keys and values over the prompt
TEXT_STREAM = ("add_q_proj", "add_k_proj", "add_v_proj", "to_add_out", "ff_context", "txt_mlp")
CROSS_KV = ("attn2.to_k", "attn2.to_v")


def is_text_stream(name: str) -> bool:
    """Whether the block's linear at ``name`` reads the prompt's tokens (kept bf16 by the policy)."""
    parts = name.split(".")
    return any(p in TEXT_STREAM for p in parts) or any(name == c or name.startswith(c + ".") for c in CROSS_KV)


def fp8_targets(block: torch.nn.Module) -> list[tuple[str, torch.nn.Module, str | None]]:
    """``(path in the block, module, epilogue)`` of every layer the policy turns into an FP8 linear."""
    out: list[tuple[str, torch.nn.Module, str | None]] = []
    taken: set[str] = set()
    for name, m in block.named_modules():
        if not name or any(part.startswith("norm") for part in name.split(".")) or is_text_stream(name):
            continue
        if any(name.startswith(t + ".") for t in taken):
            continue
        if _is_tanh_gelu_proj(m):
            out.append((name, m, "gelu_tanh"))
            taken.add(name)
        elif type(m) is torch.nn.Linear:
            out.append((name, m, None))
    return out


@dataclass
class Fp8Mount:
    """One linear (or GELU projection) replaced by an FP8 linear; its bf16 weight held on the host."""

    parent: torch.nn.Module
    name: str
    original: torch.nn.Module
    mounted: torch.nn.Module
    weight: torch.nn.Parameter
    device: torch.device

    def restore(self) -> None:
        self.weight.data = self.weight.data.to(self.device)
        self.original.training = self.mounted.training
        setattr(self.parent, self.name, self.original)

    def apply(self) -> None:
        self.weight.data = self.weight.data.to("cpu")
        setattr(self.parent, self.name, self.mounted)


def mount_fp8_linears(blocks: list[tuple[str, torch.nn.Module]], report: MountReport) -> list[Fp8Mount]:
    """Replace the policy's linears of ``blocks`` (``(path, block)``) by FP8 linears; one site each (the
    quantize and linear ops pick their backends per call: a forced ``backend`` is not applied here)."""
    from sgl_diffusion_quant import FP8Linear, InputCodes

    shared = InputCodes()  # one per model: q / k / v (and a single block's MLP in) quantize their input once
    mounts: list[Fp8Mount] = []
    host_bytes = 0
    for block_path, block in blocks:
        for name, m, epilogue in fp8_targets(block):
            lin = m.proj if epilogue else m
            site = Site(path=f"{block_path}.{name}", kind="fp8_linear", module=type(m).__name__, status="skipped")
            report.sites.append(site)
            fmt = device_fp8_dtype(lin.weight.device) if lin.weight.device.type != "meta" else torch.float8_e4m3fn
            if fmt is None:
                site.reason = f"{lin.weight.device} computes in no FP8 format (NVIDIA sm_89+, AMD gfx942 / gfx950)"
                continue
            if lin.weight.dtype not in (torch.bfloat16, torch.float16, torch.float32):
                site.reason = f"the weight is {lin.weight.dtype}; FP8 linears are built from bf16 / fp16 / fp32"
                continue
            fp8 = FP8Linear.from_linear(lin, dtype=fmt, epilogue=epilogue, accumulate="fast")
            fp8.shared_input = shared
            parent_path, _, attr = name.rpartition(".")
            parent = block.get_submodule(parent_path) if parent_path else block
            mt = Fp8Mount(parent, attr, m, fp8, lin.weight, lin.weight.device)
            if lin.weight.device.type not in ("cpu", "meta"):
                host_bytes += lin.weight.numel() * lin.weight.element_size()
            mt.apply()
            mounts.append(mt)
            # whatever under_compile says (the bf16 weights are not on the device), compiled as the
            # fp8_linear custom op after the input quantization's torch definition (FP8Linear.forward)
            site.ops, site.compile_ops = FP8_OPS, ("quant.fp8_linear",)
            site.contract, site.status, site.reason = "close", "mounted", ""
    if mounts:
        report.notes.append(
            f"quality='fp8': {len(mounts)} block linears run in {str(mounts[0].mounted.weight_fp8.dtype)[6:]} "
            f"(weights per output channel, inputs per row); their bf16 weights ({host_bytes / 2**30:.2f} GiB) "
            "wait in host memory until unmount")
    return mounts


def output_tensor(out: Any) -> torch.Tensor:
    """The main output of a diffusers model call: the first element of a tuple, or ``.sample``."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    sample = getattr(out, "sample", None)
    if isinstance(sample, torch.Tensor):
        return sample
    raise TypeError(f"cannot find the output tensor of a {type(out).__name__}")


def distance(out: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    """PSNR (dB; peak: the reference's range) and cosine similarity of ``out`` against ``ref``, in fp64."""
    a, e = out.detach().double().flatten(), ref.detach().double().flatten()
    mse = (a - e).pow(2).mean().item()
    peak = (e.max() - e.min()).item() if e.numel() else 0.0
    psnr = math.inf if mse == 0 else 10 * math.log10(max(peak, 1e-30) ** 2 / mse)
    cos = torch.nn.functional.cosine_similarity(a, e, dim=0).item() if e.numel() else 1.0
    return {"psnr_db": psnr, "cosine": cos, "max_abs": (a - e).abs().max().item() if e.numel() else 0.0}
