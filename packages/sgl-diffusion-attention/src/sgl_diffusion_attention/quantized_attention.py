"""``quantized_attention``: attention with q and k in 8 bits (int8 or e4m3): q per row, k (smoothed) per block
of 64 keys.

Backends: ``quantized_attention_triton`` (a Triton quantization pre-pass, then a flash kernel on the 8-bit
codes; CUDA sm_80+ for int8, sm_89+ for e4m3, ROCm) and ``quantized_attention_torch`` (the definition:
fp32 attention of the dequantized operands). Opt-in only: ``attention(backend=None)`` never takes it.
Its distance to full-precision attention is the caller's to check on real tensors (``attention_error``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from sgl_diffusion_core import (
    Backend,
    Capabilities,
    Contract,
    InputDesc,
    Op,
    device_arch,
    dtype_name,
    is_compiling,
    tensor_platform,
    vendor,
)

from . import _geometry as G
from . import _specs as S

QK_FORMATS = ("int8", "fp8")
PV_FORMATS = ("bf16", "fp8")
QK_FP8 = "qk='fp8' (e4m3 codes)"
PV_FP8 = "pv='fp8' (e4m3 p and v)"
# e4m3 q / k and p / v need FP8 dot products: NVIDIA sm_89+, AMD gfx950; int8: sm_80+, gfx942 / gfx950
TRITON_CAPS = replace(S.TRITON_CAPS, layouts=(S.BSHD, S.KV_LENS, S.LSE, S.GQA, QK_FP8, PV_FP8, S.head_dim_tag(64),
                                              S.head_dim_tag(128)))
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"))
TRITON_NOTE = ("q per row and k (smoothed) per block of 64 keys quantized by Triton pre-passes, then the dense "
               "kernel's online softmax over 8-bit dot products, each key tile scaled by one row vector; p rounded "
               "to v's dtype for p @ v, or with pv='fp8' p and v (per channel, Triton pre-pass) in e4m3")
TORCH_NOTE = "the definition: the same quantization, then fp32 attention of the dequantized operands"


@dataclass(frozen=True)
class QuantGeometry:
    B: int
    Sq: int
    Sk: int
    Hq: int
    Hk: int
    Dh: int
    qk: str
    smooth_k: bool
    pv: str
    scale: float
    kv_lens: bool
    return_lse: bool


def _option_problems(qk, pv, smooth_k, scale, return_lse) -> list[str]:
    problems = []
    if qk not in QK_FORMATS:
        problems.append(f"qk must be 'int8' or 'fp8', got {qk!r}")
    if pv not in PV_FORMATS:
        problems.append(f"pv must be 'bf16' (p @ v in v's dtype) or 'fp8' (e4m3 p and v), got {pv!r}")
    if not isinstance(smooth_k, bool):
        problems.append(f"smooth_k must be a bool, got {smooth_k!r}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                              or not math.isfinite(scale)):
        problems.append(f"scale must be a finite number or None (1/sqrt(Dh)), got {scale!r}")
    if not isinstance(return_lse, bool):
        problems.append(f"return_lse must be a bool, got {return_lse!r}")
    return problems


def describe_quantized_attention(q, k, v, kv_lens=None, *, qk="int8", pv="bf16", smooth_k=True, scale=None,
                                 return_lse=False, **_: object) -> InputDesc:
    """Validate the arguments of ``quantized_attention`` and describe them for backend selection."""
    problems = _option_problems(qk, pv, smooth_k, scale, return_lse)
    if not G.check_operands({"q": q, "k": k, "v": v}, "bshd", problems):
        plat = tensor_platform(q.device) if isinstance(q, torch.Tensor) else None
        return InputDesc(platform=plat, problems=problems)
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    desc = InputDesc(plat, arch, (dtype_name(q.dtype),), q.shape[-1], (), problems)
    sizes = G.check_shapes(q, k, v, "bshd", problems)
    if sizes is not None and kv_lens is not None:
        G.check_index("kv_lens", kv_lens, q.device, (torch.int32,), sizes[0], problems)
        if not problems:
            problems += G.value_problems(kv_lens, None, None, sizes[2], sizes[1], sizes[2])
    if problems:
        return desc
    B, Sq, Sk, Hq, Hk, Dh = sizes
    geom = QuantGeometry(B, Sq, Sk, Hq, Hk, Dh, qk, smooth_k, pv, Dh ** -0.5 if scale is None else float(scale),
                         kv_lens is not None, return_lse)
    tags = [S.BSHD, S.head_dim_tag(Dh)]
    tags += [S.KV_LENS] if kv_lens is not None else []
    tags += [S.LSE] if return_lse else []
    tags += [S.GQA] if Hk != Hq else []
    native = plat == "cpu" or vendor.fp8_native(plat, arch, vendor.E4M3FN)
    if qk == "fp8":
        tags += [QK_FP8 if native else "qk='fp8' on a device without FP8 dot products"]
    if pv == "fp8":
        tags += [PV_FP8 if native else "pv='fp8' on a device without FP8 dot products"]
    desc.layouts = tuple(tags)
    desc.info = {"geom": geom, "empty": B == 0 or Sq == 0 or Sk == 0 or Hq == 0 or Dh == 0}
    return desc


def empty_result(geom: QuantGeometry):
    def run(q, *_):
        o = torch.zeros((geom.B, geom.Sq, geom.Hq, geom.Dh), dtype=q.dtype, device=q.device)
        if not geom.return_lse:
            return o
        return o, torch.full((geom.B, geom.Hq, geom.Sq), float("-inf"), dtype=torch.float32, device=q.device)

    return run


# against the definition: the same codes and scales, the sum in another order and p rounded to v's dtype
QUANT_CLOSE = Contract.close(S.ATTENTION_TOLERANCES)

QUANTIZED_ATTENTION = Op(
    "attention.quantized_attention",
    distribution=S.DISTRIBUTION,
    summary="softmax(q k^T * scale) v with q (per row) and k (smoothed, per 64 keys) in 8 bits; bshd, kv_lens, GQA, "
            "lse",
    describe=describe_quantized_attention,
    n_tensors=4,
    reference=".quantized_attention_torch:quantized_attention",
    backends=[
        Backend("triton", ".quantized_attention_triton", TRITON_CAPS, QUANT_CLOSE, priority=10, notes=TRITON_NOTE,
                aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".quantized_attention_torch", TORCH_CAPS, Contract.exact(), notes=TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    bench=f"{S.BENCH}:quantized_attention_cases",
)


@QUANTIZED_ATTENTION.entry
def quantized_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    kv_lens: torch.Tensor | None = None,
    qk: str = "int8",
    pv: str = "bf16",
    smooth_k: bool = True,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Attention of 8-bit q and k as ``qk`` codes with fp32 scales (int8: ``amax / 127``, round to nearest
    even; ``"fp8"``: e4m3, ``amax / 448``): one scale per ``Dh``-row of q, one per block of 64 keys of a
    (sample, head) of k (k minus its mean over the sample's valid keys with ``smooth_k``, which leaves softmax
    unchanged; keys past ``kv_lens`` zeroed); scores ``(q_codes . k_codes) *
    q_scale * k_scale * scale``; softmax in fp32; ``p @ v`` in v's dtype (``pv="bf16"``) or in e4m3
    (``pv="fp8"``: v per (sample, head, channel) with scale ``amax / 448``, p as ``e4m3(448 p)`` with p
    relative to a power of two at or above the row's largest score, so that a flash kernel's running
    maximum changes no code; see ``quantized_attention_torch``). The FP8 forms need FP8 dot products
    (NVIDIA sm_89+, AMD gfx950) on the Triton kernel.

    q: ``[B, Sq, Hq, Dh]``; k, v: ``[B, Sk, Hk, Dh]``, ``Hk`` dividing ``Hq`` (GQA); bf16 | fp16 (fp32 on
        the ``torch`` backend); the head dim contiguous. Dh 64 or 128 on the Triton kernel.
    kv_lens: ``[B]`` int32, keys ``0 .. kv_lens[b] - 1`` valid (the padded text of joint attention).
    scale: default ``1 / sqrt(Dh)``. return_lse: also the natural-log lse, fp32 ``[B, Hq, Sq]``.
    backend: ``None`` (``triton`` on a GPU that has the dot products, ``torch`` elsewhere), ``"triton"`` or
        ``"torch"``. Contract ``close`` against the definition (attention's tolerances); its distance to
        full-precision attention depends on the data: measure it with ``attention_error``.

    Returns the output (contiguous, q's dtype) or ``(out, lse)``. Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    options = (("qk", qk), ("pv", pv), ("smooth_k", smooth_k), ("scale", scale), ("return_lse", return_lse))
    if is_compiling():
        args = (q, k, v, kv_lens, qk, pv, smooth_k, scale, backend)
        return _custom_op_lse(*args) if return_lse else _custom_op(*args)
    return QUANTIZED_ATTENTION.plan((q, k, v, kv_lens), backend, None, options)(q, k, v, kv_lens)


can_use_quantized_attention = QUANTIZED_ATTENTION.can_use
quantized_attention_reference = QUANTIZED_ATTENTION.reference


_SCHEMA = "(Tensor q, Tensor k, Tensor v, Tensor? kv_lens, str qk, str pv, bool smooth_k, float? scale, str? backend)"
_KEYED = ("qk", "pv", "smooth_k", "scale")
_custom_op, _custom_op_lse = G.bshd_lse_custom_ops(QUANTIZED_ATTENTION, "quantized_attention", _SCHEMA, _KEYED)
