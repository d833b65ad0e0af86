"""The definition of ``attention`` (its ``torch`` backend and the reference every other backend is held to).

Explicit math in fp32: ``scores = (q @ k^T) * scale``, keys past a sample's ``kv_lens`` set to
-inf, ``softmax`` and ``logsumexp`` over the keys, ``@ v``, one rounding to q's dtype. Queries
are processed in chunks so that a chunk's scores stay near ``CHUNK_ELEMENTS`` fp32 values (the
production shapes fit a GPU's memory). A varlen batch is one dense call per segment (its
offsets are read on the host). On a CUDA device ``torch.matmul`` in fp32 follows torch's
matmul precision setting (``torch.backends.cuda.matmul.allow_tf32``; off by default).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sgl_diffusion_core import UnsupportedInputError

from ._geometry import segments_problem

CHUNK_ELEMENTS = 1 << 28  # fp32 scores per query chunk (1 GiB)


def _dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, kv_lens: torch.Tensor | None,
           keep_rows: Callable[[int, int], torch.Tensor] | None = None):
    """``(o, lse)`` in fp32 of ``[B, H, S, Dh]`` operands (k / v may have fewer heads: GQA).

    ``keep_rows(s0, s1)``: a boolean mask of the keys queries ``s0 .. s1 - 1`` attend to (broadcast to
    ``[B, H, s1 - s0, Sk]``); a query with no key gets output 0 and lse -inf."""
    B, Hq, Sq, Dh = q.shape
    Hk, Sk = k.shape[1], k.shape[2]
    kf, vf = k.float(), v.float()
    if Hk != Hq:
        kf, vf = kf.repeat_interleave(Hq // Hk, dim=1), vf.repeat_interleave(Hq // Hk, dim=1)
    keep = bad = None
    if kv_lens is not None:
        lens = kv_lens.to(device=q.device, dtype=torch.int64)
        keep = (torch.arange(Sk, device=q.device) < lens[:, None])[:, None, None, :]  # [B, 1, 1, Sk]
        bad = ((lens < 1) | (lens > Sk))[:, None, None]  # [B, 1, 1]: a value out of range poisons its sample
    o = torch.empty(B, Hq, Sq, vf.shape[-1], dtype=torch.float32, device=q.device)
    lse = torch.empty(B, Hq, Sq, dtype=torch.float32, device=q.device)
    rows = max(1, CHUNK_ELEMENTS // max(1, B * Hq * Sk))
    kt = kf.transpose(-1, -2)
    for s0 in range(0, Sq, rows):
        scores = torch.matmul(q[:, :, s0:s0 + rows].float(), kt) * scale
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        if keep_rows is not None:
            scores = scores.masked_fill(~keep_rows(s0, min(s0 + rows, Sq)), float("-inf"))
        chunk_lse = torch.logsumexp(scores, dim=-1)
        p = torch.softmax(scores, dim=-1)
        if keep_rows is not None:  # a row with no key: softmax gives NaN, the definition 0
            p = torch.where((chunk_lse == float("-inf"))[..., None], 0.0, p)
        lse[:, :, s0:s0 + rows] = chunk_lse
        o[:, :, s0:s0 + rows] = torch.matmul(p, vf)
    if bad is not None:
        o = torch.where(bad[..., None], float("nan"), o)
        lse = torch.where(bad, float("nan"), lse)
    return o, lse


def _varlen(q, k, v, cu_q: torch.Tensor, cu_k: torch.Tensor, scale: float):
    """``(o [total_q, H, Dh], lse [H, total_q])`` in fp32: one dense attention per segment."""
    cq, ck = cu_q.tolist(), cu_k.tolist()
    total_q, total_k = q.shape[0], k.shape[0]
    for name, c, total in (("cu_seqlens_q", cq, total_q), ("cu_seqlens_k", ck, total_k)):
        why = segments_problem(name, c, total)
        if why:
            raise UnsupportedInputError(f"attention.attention: unsupported input:\n  - {why}")
    Hq = q.shape[1]
    o = torch.zeros(total_q, Hq, v.shape[-1], dtype=torch.float32, device=q.device)
    lse = torch.full((Hq, total_q), float("-inf"), dtype=torch.float32, device=q.device)
    for b in range(len(cq) - 1):
        qs, qe, ks, ke = cq[b], cq[b + 1], ck[b], ck[b + 1]
        if qe == qs or ke == ks:  # no query, or an empty key set: output 0, lse -inf
            continue
        seg = [t[a:e].transpose(0, 1).unsqueeze(0) for t, a, e in ((q, qs, qe), (k, ks, ke), (v, ks, ke))]
        ob, lb = _dense(*seg, scale, None)
        o[qs:qe] = ob[0].transpose(0, 1)
        lse[:, qs:qe] = lb[0]
    return o, lse


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = "bshd",
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    out: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    if cu_seqlens_q is not None:
        o, lse = _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, scale)
    else:
        bhsd = [t if layout == "bhsd" else t.transpose(1, 2) for t in (q, k, v)]
        o, lse = _dense(*bhsd, scale, kv_lens)
        if layout != "bhsd":
            o = o.transpose(1, 2)
    if out is not None:
        o = out.copy_(o)
    else:
        o = o.to(q.dtype).contiguous()
    return (o, lse) if return_lse else o


def prepare(geom, q, k, v, kv_lens, cu_q, cu_k, out):
    """The ``torch`` backend's runner: the definition itself."""
    layout, scale, lse = geom.layout, geom.scale, geom.return_lse

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        return attention(q, k, v, layout=layout, scale=scale, kv_lens=kv_lens, cu_seqlens_q=cu_q,
                         cu_seqlens_k=cu_k, return_lse=lse, out=out)

    return run
