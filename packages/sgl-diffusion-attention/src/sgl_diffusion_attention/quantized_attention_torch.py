"""The definition of ``quantized_attention`` (its ``torch`` backend) and the operand quantization every
backend shares.

Quantization (:func:`quantize_qk`):

- ``smooth_k``: ``k - mean(k)``, the mean over the sample's valid keys per (head, channel) in fp32.
  Every score of a query row moves by the same ``q . mean``, which softmax removes; the rows of k
  become centred, so their quantization scale shrinks where a channel carries a large offset.
- q per (sample, token, head) row of ``Dh`` values; k per block of ``KEY_BLOCK`` (64) consecutive keys
  of one (sample, head), ``64 x Dh`` values under one scale (keys past ``kv_lens[b]`` zeroed first, so
  padding never sets a scale; a last block shorter than 64 keys takes what it has). One scale per key
  block is what keeps the kernel's inner loop as short as dense attention's: a key tile's scores are
  scaled by one row vector, not by a row vector times a per-key vector.
- ``qk="int8"``: ``scale = max(amax, 1e-12) / 127``, codes ``round(x / scale)`` (ties to even) in
  ``[-127, 127]``; ``qk="fp8"``: ``float8_e4m3fn`` codes with ``scale = max(amax, 1e-12) / 448``.
  The softmax scale is applied to the scores, not folded into the stored scales.

Attention on the quantized operands: ``s = (q_codes . k_codes) * q_scale * k_scale * scale`` (every
product of int8 or e4m3 codes exact in fp32), keys past ``kv_lens[b]`` masked, softmax in fp32,
``o = p @ v`` with ``v`` as given, one rounding; lse in natural log.

``pv="fp8"`` (:func:`quantize_v`, :func:`fp8_pv`): v in e4m3 per (sample, head, channel) over all ``Sk``
keys (``scale = max(amax, 1e-12) / 448``), and ``p`` in e4m3 as well: with base-2 logits
``t = s * log2(e)`` and ``M = ceil(max(t))`` over the row's valid keys, ``p = exp2(t - M)`` (in
``(0, 1]``, the largest above 1/2) and its codes ``e4m3(448 p)`` (ties to even); ``o = (sum p_codes
v_codes) * v_scale / (448 sum p)``. The integer ``M`` makes the codes the same whatever running maximum
a flash kernel subtracts first (rescaling by a power of two moves no e4m3 rounding boundary, down to
its subnormals).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import quantize_fp8_torch

QK_FORMATS = {"int8": (torch.int8, 127.0), "fp8": (torch.float8_e4m3fn, 448.0)}
LOG2E = 1.4426950408889634
KEY_BLOCK = 64  # keys per k scale; every kernel's key tile divides it


def key_blocks(sk: int) -> int:
    """Scales per (sample, head) of a k with ``sk`` keys."""
    return -(-sk // KEY_BLOCK)


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


_MEAN_CHUNK = 8192  # keys per masked partial sum of key_mean (a temporary of this many keys in k's dtype)


def key_mean(k: torch.Tensor, kv_lens: torch.Tensor | None) -> torch.Tensor:
    """fp32 ``[B, 1, Hk, Dh]``: the mean of each sample's valid keys (all keys without ``kv_lens``), summed in
    fp32 by the reductions themselves, without an fp32 copy of k (with ``kv_lens``: masked partial sums of
    8192 keys at a time)."""
    S = k.shape[1]
    if kv_lens is None:
        return k.sum(dim=1, keepdim=True, dtype=torch.float32) / max(S, 1)
    valid = torch.arange(S, device=k.device)[None, :] < kv_lens.to(k.device)[:, None]
    total = None
    for s0 in range(0, S, _MEAN_CHUNK):
        part = (k[:, s0:s0 + _MEAN_CHUNK] * valid[:, s0:s0 + _MEAN_CHUNK, None, None]).sum(
            dim=1, keepdim=True, dtype=torch.float32)
        total = part if total is None else total + part
    if total is None:  # no keys
        total = torch.zeros((k.shape[0], 1, *k.shape[2:]), dtype=torch.float32, device=k.device)
    return total / kv_lens.to(torch.float32).clamp_min(1)[:, None, None, None]


def _key_blocks(k: torch.Tensor, kv_lens: torch.Tensor | None, fmt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Codes shaped like k (contiguous) and fp32 scales ``[B, H, key_blocks(S)]``: one per ``KEY_BLOCK`` keys
    of a (sample, head), over its keys with those past ``kv_lens`` zeroed (their codes 0)."""
    dtype, top = QK_FORMATS[fmt]
    B, S, H, Dh = k.shape
    kf = k.float()
    if kv_lens is not None:
        valid = torch.arange(S, device=k.device)[None, :] < kv_lens.to(k.device)[:, None]
        kf = kf.masked_fill(~valid[:, :, None, None], 0.0)
    n = key_blocks(S)
    padded = torch.nn.functional.pad(kf.abs(), (0, 0, 0, 0, 0, n * KEY_BLOCK - S))
    amax = padded.view(B, n, KEY_BLOCK, H, Dh).amax(dim=(2, 4)) if S else kf.new_zeros((B, 0, H))
    scale = (amax.clamp_min(1e-12) / amax.new_full((), top)).transpose(1, 2).contiguous()  # [B, H, n]
    x = kf / key_scales_per_key(scale, S)[..., None]  # IEEE division (a tensor divisor)
    codes = torch.round(x).clamp(-top, top) if fmt == "int8" else x.clamp(-top, top)
    return codes.to(dtype).contiguous(), scale


def key_scales_per_key(ks: torch.Tensor, sk: int) -> torch.Tensor:
    """The ``[B, H, key_blocks(sk)]`` block scales of k as one per key, ``[B, sk, H]``."""
    return ks.repeat_interleave(KEY_BLOCK, dim=2)[:, :, :sk].transpose(1, 2)


def quantize_qk(q: torch.Tensor, k: torch.Tensor, kv_lens: torch.Tensor | None, qk: str,
                smooth_k: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(q_codes, q_scale, k_codes, k_scale)``: codes shaped like q / k (contiguous), q's scales
    ``[B, Sq, H]`` (per row), k's ``[B, Hk, key_blocks(Sk)]`` (per block of keys)."""
    if smooth_k:
        k = k.float() - key_mean(k, kv_lens)
    q8, qs = _rows(q, qk)
    k8, ks = _key_blocks(k, kv_lens, qk)
    return q8, qs, k8, ks


def channel_scales(v: torch.Tensor) -> torch.Tensor:
    """v's e4m3 scales of ``pv="fp8"``, fp32 ``[B, Hk, Dh]``: ``max(amax, 1e-12) / 448`` per (sample, head,
    channel) over its ``Sk`` keys (IEEE division), from two reductions in v's dtype (no fp32 copy of v)."""
    amax = torch.maximum(v.amax(dim=1), v.amin(dim=1).neg()).float()
    return (amax.clamp_min(1e-12) / 448.0).contiguous()


def quantize_v(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes, scale)``: v in e4m3 per (sample, head, channel) with :func:`channel_scales`; codes shaped like
    v (contiguous), saturated to ``+-448``, ties to even."""
    scale = channel_scales(v)
    codes = (v.float() / scale[:, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return codes.contiguous(), scale


def fp8_pv(s: torch.Tensor, v8: torch.Tensor, vs: torch.Tensor, group: int) -> torch.Tensor:
    """``p @ v`` of ``pv="fp8"`` (module docstring) for scores ``s`` ``[B, Hq, Sq, Sk]`` (natural-log units,
    masked keys -inf), v codes ``[B, Sk, Hk, Dh]`` and scales ``[B, Hk, Dh]``: fp32 ``[B, Hq, Sq, Dh]``."""
    t = s * LOG2E
    top = torch.ceil(t.amax(dim=-1, keepdim=True))
    p = torch.exp2(t - top)
    p8 = (p * 448.0).to(torch.float8_e4m3fn).float()
    vd = v8.float().transpose(1, 2).repeat_interleave(group, dim=1)  # codes [B, Hq, Sk, Dh]
    vs = vs.repeat_interleave(group, dim=1)[:, :, None, :]  # [B, Hq, 1, Dh]
    return (p8 @ vd) * vs / (448.0 * p.sum(dim=-1, keepdim=True))


def attention_on_codes(q8, qs, k8, ks, v, kv_lens, scale: float, return_lse: bool, out_dtype: torch.dtype,
                       pv: str = "bf16"):
    """fp32 attention of the dequantized operands (bshd), one rounding to ``out_dtype``."""
    B, Sq, Hq, Dh = q8.shape
    Hk = k8.shape[2]
    group = Hq // Hk
    qd = (q8.float() * qs[..., None]).transpose(1, 2)  # [B, Hq, Sq, Dh]
    kd = (k8.float() * key_scales_per_key(ks, k8.shape[1])[..., None]).transpose(1, 2).repeat_interleave(group, dim=1)
    s = (qd @ kd.transpose(-1, -2)) * scale
    if kv_lens is not None:
        valid = torch.arange(k8.shape[1], device=q8.device)[None, :] < kv_lens.to(q8.device)[:, None]
        s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    if pv == "fp8":
        o = fp8_pv(s, *quantize_v(v), group)
    else:
        o = torch.softmax(s, dim=-1) @ v.float().transpose(1, 2).repeat_interleave(group, dim=1)
    o = o.transpose(1, 2).to(out_dtype).contiguous()
    return (o, lse.contiguous()) if return_lse else o


def quantized_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, kv_lens: torch.Tensor | None = None,
                        qk: str = "int8", pv: str = "bf16", smooth_k: bool = True, scale: float | None = None,
                        return_lse: bool = False, **_: object):
    """The definition (bshd; see the module docstring)."""
    q8, qs, k8, ks = quantize_qk(q, k, kv_lens, qk, smooth_k)
    sc = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return attention_on_codes(q8, qs, k8, ks, v, kv_lens, sc, return_lse, q.dtype, pv)


def prepare(geom, q, k, v, kv_lens):
    """The ``torch`` backend's runner ``(q, k, v, kv_lens) -> out | (out, lse)``."""
    qk, pv, smooth, scale, lse = geom.qk, geom.pv, geom.smooth_k, geom.scale, geom.return_lse

    def run(q, k, v, kv_lens, *_):
        q8, qs, k8, ks = quantize_qk(q, k, kv_lens, qk, smooth)
        return attention_on_codes(q8, qs, k8, ks, v, kv_lens, scale, lse, q.dtype, pv)

    return run
