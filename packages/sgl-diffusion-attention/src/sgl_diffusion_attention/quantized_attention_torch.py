"""The definition of ``quantized_attention`` (its ``torch`` backend) and the operand quantization every
backend shares.

Quantization (:func:`quantize_qk`), per (sample, token, head) row of ``Dh`` values:

- ``smooth_k``: ``k - mean(k)``, the mean over the sample's valid keys per (head, channel) in fp32.
  Every score of a query row moves by the same ``q . mean``, which softmax removes; the rows of k
  become centred, so their quantization scale shrinks where a channel carries a large offset.
- ``qk="int8"``: ``scale = max(amax, 1e-12) / 127``, codes ``round(x / scale)`` (ties to even) in
  ``[-127, 127]``; ``qk="fp8"``: ``float8_e4m3fn`` codes with ``scale = max(amax, 1e-12) / 448``.
  The softmax scale is applied to the scores, not folded into q's scales.

Attention on the quantized operands: ``s = (q_codes . k_codes) * q_scale * k_scale * scale`` (every
product of int8 or e4m3 codes exact in fp32), keys past ``kv_lens[b]`` masked, softmax in fp32,
``o = p @ v`` with ``v`` as given, one rounding; lse in natural log.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import quantize_fp8_torch

QK_FORMATS = {"int8": (torch.int8, 127.0), "fp8": (torch.float8_e4m3fn, 448.0)}


def _rows(x: torch.Tensor, fmt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Codes and fp32 scales ``[B, S, H]`` of x's ``Dh``-rows in ``fmt`` (e4m3: core's row-wise
    ``quantize_fp8_torch``; int8 the same with ``127`` and rounding half to even)."""
    dtype, top = QK_FORMATS[fmt]
    if fmt == "fp8":
        codes, scale = quantize_fp8_torch(x, dtype)
        return codes, scale.squeeze(-1).contiguous()
    xf = x.float()
    scale = xf.abs().amax(dim=-1).clamp_min(1e-12) / xf.new_full((), top)
    codes = torch.round(xf / scale[..., None]).clamp(-top, top).to(dtype)
    return codes.contiguous(), scale.contiguous()


def key_mean(k: torch.Tensor, kv_lens: torch.Tensor | None) -> torch.Tensor:
    """fp32 ``[B, 1, Hk, Dh]``: the mean of each sample's valid keys (all keys without ``kv_lens``)."""
    kf = k.float()
    if kv_lens is None:
        return kf.mean(dim=1, keepdim=True)
    valid = torch.arange(k.shape[1], device=k.device)[None, :] < kv_lens.to(k.device)[:, None]
    total = (kf * valid[:, :, None, None]).sum(dim=1, keepdim=True)
    return total / kv_lens.to(torch.float32).clamp_min(1)[:, None, None, None]


def quantize_qk(q: torch.Tensor, k: torch.Tensor, kv_lens: torch.Tensor | None, qk: str,
                smooth_k: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(q_codes, q_scale, k_codes, k_scale)``: codes shaped like q / k (contiguous), scales ``[B, S, H]``."""
    if smooth_k:
        k = k.float() - key_mean(k, kv_lens)
    q8, qs = _rows(q, qk)
    k8, ks = _rows(k, qk)
    return q8, qs, k8, ks


def attention_on_codes(q8, qs, k8, ks, v, kv_lens, scale: float, return_lse: bool, out_dtype: torch.dtype):
    """fp32 attention of the dequantized operands (bshd), one rounding to ``out_dtype``."""
    B, Sq, Hq, Dh = q8.shape
    Hk = k8.shape[2]
    group = Hq // Hk
    qd = (q8.float() * qs[..., None]).transpose(1, 2)  # [B, Hq, Sq, Dh]
    kd = (k8.float() * ks[..., None]).transpose(1, 2).repeat_interleave(group, dim=1)
    vd = v.float().transpose(1, 2).repeat_interleave(group, dim=1)
    s = (qd @ kd.transpose(-1, -2)) * scale
    if kv_lens is not None:
        valid = torch.arange(k8.shape[1], device=q8.device)[None, :] < kv_lens.to(q8.device)[:, None]
        s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = (torch.softmax(s, dim=-1) @ vd).transpose(1, 2).to(out_dtype).contiguous()
    return (o, lse.contiguous()) if return_lse else o


def quantized_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, kv_lens: torch.Tensor | None = None,
                        qk: str = "int8", smooth_k: bool = True, scale: float | None = None,
                        return_lse: bool = False, **_: object):
    """The definition (bshd; see the module docstring)."""
    q8, qs, k8, ks = quantize_qk(q, k, kv_lens, qk, smooth_k)
    sc = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return attention_on_codes(q8, qs, k8, ks, v, kv_lens, sc, return_lse, q.dtype)


def prepare(geom, q, k, v, kv_lens):
    """The ``torch`` backend's runner ``(q, k, v, kv_lens) -> out | (out, lse)``."""
    qk, smooth, scale, lse = geom.qk, geom.smooth_k, geom.scale, geom.return_lse

    def run(q, k, v, kv_lens, *_):
        q8, qs, k8, ks = quantize_qk(q, k, kv_lens, qk, smooth)
        return attention_on_codes(q8, qs, k8, ks, v, kv_lens, scale, lse, q.dtype)

    return run
