"""``attention`` on an installed flash-attn: the ``flash_attn`` backend (FlashAttention-2, the ``flash-attn``
package, extra ``[flash_attn]``). It is not a requirement: the backend is eligible only when the module is
importable (nothing is installed or downloaded at run time), and ``backend=None`` times it against the others
on the real inputs, so a version whose results or signature differ from what this module expects is rejected
for the bucket with one warning, never chosen. The runner also takes a FlashAttention-3 style function that
returns ``(out, lse)`` without a ``return_attn_probs`` parameter.

It takes bshd ``[B, S, H, Dh]`` directly (a bhsd input is passed as its transposed view, no copy), k / v
with fewer heads (GQA), and varlen as ``[total, H, Dh]`` with int32 ``cu_seqlens``; not ``kv_lens``. The
call: ``softmax_scale=scale, causal=False`` and, where the function has the parameter, ``return_attn_probs``
for the log-sum-exp, which must come back as ``[B, H, S]`` (varlen ``[H, total]``) or the call raises
``UnsupportedInputError`` naming the shape it got. A varlen call without ``max_seqlen_q`` passes the packed
lengths as the bounds (always correct).
"""

from __future__ import annotations

import importlib
import inspect

import torch

from sgl_diffusion_core import UnsupportedInputError

MODULE, DENSE, VARLEN = "flash_attn", "flash_attn_func", "flash_attn_varlen_func"


def _keywords(fn, scale: float, want_lse: bool) -> dict:
    kw: dict = {"softmax_scale": scale, "causal": False}
    if "return_attn_probs" in inspect.signature(fn).parameters:
        kw["return_attn_probs"] = want_lse
    return kw


def _split(result, name: str, want_lse: bool, lse_shape: tuple[int, ...]):
    """``(out, lse)`` from a flash function's result (an output, or a tuple led by the output and the lse)."""
    out = result[0] if isinstance(result, (tuple, list)) else result
    if not want_lse:
        return out, None
    lse = result[1] if isinstance(result, (tuple, list)) and len(result) > 1 else None
    if not isinstance(lse, torch.Tensor) or tuple(lse.shape) != tuple(lse_shape):
        got = "none" if not isinstance(lse, torch.Tensor) else f"shape {list(lse.shape)}"
        raise UnsupportedInputError(f"attention: {name} returned a log-sum-exp of {got}; expected {list(lse_shape)}")
    return out, lse.float()


def prepare_flash_attn(geom, *tensors):
    """The ``flash_attn`` backend's runner (see the module docstring)."""
    fn = getattr(importlib.import_module(MODULE), VARLEN if geom.varlen else DENSE)
    name = f"{MODULE}.{fn.__name__}"
    kw = _keywords(fn, geom.scale, geom.return_lse)
    want_lse, lse_shape, bhsd = geom.return_lse, geom.lse_shape, geom.layout == "bhsd"
    bounds = (geom.max_seqlen_q or geom.Sq, geom.Sk)

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        if geom.varlen:
            result = fn(q, k, v, cu_q, cu_k, *bounds, **kw)  # int32 offsets (describe checks)
        elif bhsd:
            result = fn(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **kw)
        else:
            result = fn(q, k, v, **kw)
        o, lse = _split(result, name, want_lse, lse_shape)
        if bhsd:
            o = o.transpose(1, 2)
        o = out.copy_(o) if out is not None else o.contiguous()
        return (o, lse) if want_lse else o

    return run
