"""The eager chains of the rope family (the definition of the exact contracts); also the ``torch`` backend.

``apply_rope``, ``apply_rope_qk``, ``rope_3d`` and ``qk_norm_rope`` here are the ops'
references (``<op>_reference``), with the ops' own arguments; :func:`prepare` is the
backend. All four run one chain, :func:`rope`:

* norm (``qk_norm_rope``): RMS as diffusers' ``RMSNorm`` computes it — variance of the
  fp32 values, ``x * rsqrt(var + eps)`` (fp32), cast to the weight's dtype when the weight
  is bf16/fp16, then ``* weight`` (no weight: cast back to x's dtype); LayerNorm is
  ``F.layer_norm(x, (Dh,), weight.to(x.dtype), None, eps)``.
* rotation with a real table: ``(x * cos + rotate(x) * sin).to(x.dtype)`` on the first r
  dims, where a ``[.., r/2]`` table is expanded to ``[.., r]`` (``cat([t, t])`` for
  rotate-half, ``repeat_interleave(t, 2)`` for interleaved) and ``rotate`` is
  ``cat(-x2, x1)`` (halves) or ``stack(-x_odd, x_even)`` (pairs); each op runs in the
  promoted dtype of x and the table, as eager PyTorch does.
* complex ``freqs_cis``: ``view_as_real(view_as_complex(x.float() pairs) * freqs).to(x.dtype)``.
* ``rope_3d``: the table is built in fp64 from the positions (``pos * theta**(-2j/d)`` per
  axis, as diffusers' ``get_1d_rotary_pos_embed`` with ``freqs_dtype=float64``), cast to
  fp32, then the real-table chain.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._geometry import checked_geometry, describe_rope, runner, union


def _norm(x: torch.Tensor, w: torch.Tensor | None, norm: int, eps: float) -> torch.Tensor:
    if norm == 1:
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        y = x * torch.rsqrt(var + eps)
        if w is None:
            return y.to(x.dtype)
        if w.dtype in (torch.float16, torch.bfloat16):
            y = y.to(w.dtype)
        return y * w
    if norm == 2:  # F.layer_norm needs the weight in x's dtype (CUDA refuses a mix)
        return F.layer_norm(x, (x.shape[-1],), None if w is None else w.to(x.dtype), None, eps)
    return x


def _table_view(t: torch.Tensor, layout: str) -> torch.Tensor:
    t3 = t if t.dim() == 3 else t.unsqueeze(0)  # [B', S, W]
    return t3.unsqueeze(2) if layout == "bshd" else t3.unsqueeze(1)


def _expand(t: torch.Tensor, interleaved: bool, full: bool) -> torch.Tensor:
    if full:
        return t
    return torch.repeat_interleave(t, 2, dim=-1) if interleaved else torch.cat([t, t], dim=-1)


def _rotate(x: torch.Tensor, interleaved: bool) -> torch.Tensor:
    if interleaved:
        return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def angle_table(geom, pos: torch.Tensor | None, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin ``[B', S, r/2]`` fp32 from grid or position ids, computed in fp64."""
    if geom.angles == 1:
        gh, gw = geom.grid_hw
        s = torch.arange(geom.S, device=device, dtype=torch.int64)
        p = torch.stack((s // (gh * gw), (s // gw) % gh, s % gw), dim=-1).to(torch.float64)[None]
    else:
        p = pos.to(torch.float64)
        p = p if p.dim() == 3 else p[None]
    f = torch.tensor(geom.inv_freq, dtype=torch.float64, device=device)
    a0, a1 = geom.axis_bounds
    axis = torch.zeros(len(geom.inv_freq), dtype=torch.int64, device=device)
    axis[a0:a1] = 1
    axis[a1:] = 2
    ang = p[..., axis] * f  # [B', S, r/2]
    return ang.cos().float(), ang.sin().float()


def _rotary(x: torch.Tensor, cos, sin, geom) -> torch.Tensor:
    r = geom.r
    xr = x[..., :r]
    if geom.complex_table:
        xc = torch.view_as_complex(xr.float().reshape(*xr.shape[:-1], r // 2, 2).contiguous())
        return torch.view_as_real(xc * _table_view(cos, geom.layout)).flatten(-2)
    c = _expand(_table_view(cos, geom.layout), geom.interleaved, geom.full_table)
    s = _expand(_table_view(sin, geom.layout), geom.interleaved, geom.full_table)
    return xr * c + _rotate(xr, geom.interleaved) * s


def _one(x, w, cos, sin, eps, geom, out_heads):
    y = _norm(x, w, geom.norm, eps)
    rot = _rotary(y, cos, sin, geom).to(geom.out)
    if geom.inplace:
        x[..., : geom.r].copy_(rot)
        if geom.norm and geom.r < geom.Dh:
            x[..., geom.r :].copy_(y[..., geom.r :])
        return x
    out = torch.cat([rot, y[..., geom.r :].to(geom.out)], dim=-1) if geom.r < geom.Dh else rot
    if geom.out_layout != geom.layout:
        out = out.transpose(1, 2)
    return out.contiguous()


def rope(q, k, cos, sin, pos, q_weight, k_weight, eps, *, geom):
    """The chain on the rope family's whole argument set; ``(q_out, k_out)`` (k_out None without k)."""
    if geom.angles != 0:
        cos, sin = angle_table(geom, pos, q.device)
    qo = _one(q, q_weight, cos, sin, eps, geom, geom.q_out)
    ko = None if k is None else _one(k, k_weight, cos, sin, eps, geom, geom.k_out)
    return qo, ko


def prepare(geom, *tensors):
    """The ``torch`` backend's runner: the eager chain itself, with the op's own arguments."""

    def run(q, k, cos, sin, pos, q_weight, k_weight, eps):
        return rope(q, k, cos, sin, pos, q_weight, k_weight, eps, geom=geom)

    return runner(geom.op, run)


def _reference(op: str, tensors: tuple, eps: float, **options):
    geom = checked_geometry(f"rope.{op}", describe_rope(*union(op, tensors), op=op, **options))
    return rope(*union(op, tensors), eps, geom=geom)


def apply_rope(x, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd"):
    """``apply_rope``'s eager chain (its reference)."""
    return _reference("apply_rope", (x, cos, sin), 0.0, interleaved=interleaved, rotary_dim=rotary_dim,
                      inplace=bool(inplace), layout=layout)[0]


def apply_rope_qk(q, k, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False, layout="bshd"):
    """``apply_rope_qk``'s eager chain (its reference)."""
    return _reference("apply_rope_qk", (q, k, cos, sin), 0.0, interleaved=interleaved, rotary_dim=rotary_dim,
                      inplace=bool(inplace), layout=layout)


def rope_3d(x, grid_thw=None, axes_dim=(44, 42, 42), *, theta=10000.0, pos_ids=None, interleaved=True,
            rotary_dim=None, inplace=False, layout="bshd"):
    """The chain diffusers runs for ``rope_3d`` (fp64 angle table cast to fp32, then the real-table chain)."""
    return _reference("rope_3d", (x, pos_ids), 0.0, interleaved=interleaved, rotary_dim=rotary_dim,
                      inplace=bool(inplace), layout=layout, grid_thw=grid_thw, axes_dim=axes_dim,
                      theta=float(theta), angles="grid" if pos_ids is None else "pos")[0]


def qk_norm_rope(q, k, q_weight, k_weight, cos, sin=None, *, norm="rms", eps=1e-6, interleaved=None,
                 rotary_dim=None, inplace=None, layout="bshd", out_layout=None):
    """``qk_norm_rope``'s eager chain (its reference): diffusers' RMSNorm / F.layer_norm, then RoPE."""
    if inplace is None:
        inplace = out_layout is None or out_layout == layout
    return _reference("qk_norm_rope", (q, k, q_weight, k_weight, cos, sin), float(eps), interleaved=interleaved,
                      rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout, out_layout=out_layout, norm=norm)
