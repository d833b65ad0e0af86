"""The fp64 oracle of the activation tests: the true function of the stored inputs, rounded once.

Not the eager chain (that is the torch backend, ``*_reference``): this is what a kernel with
fp32 math and one final rounding should produce, up to the conditioning of fp32 itself. The
bound for one element, with ``s`` the pre-activation, ``b`` the gate (1 for unary ops) and
``f = act``:

    |kernel - f(s) * b| <= ulp_out(f(s) * b) + C * 2**-24 * (|f(s) * b| + |s * f'(s) * b|)
                           + 2**-147 * (1 + |s|) * |b|

``ulp_out``: the output dtype's spacing at the value (one final rounding lands within it);
the second term: a few fp32 roundings of the result, and of ``s`` itself amplified by the
function's condition number (``s * f'(s)``; large in gelu's negative tail, where any fp32
formula of ``s`` loses that much); the last: a few units of fp32's subnormal spacing in the
sigmoid / erfc factor (which underflows for ``|s|`` above ~100), scaled by what multiplies it.
A sloppy formula (eager's ``1 + tanh(u)`` or ``1 + erf(z)`` in the negative tail, bf16
intermediates, truncated rounding, approximate constants) misses this bound by orders of
magnitude on the tail inputs the tests use.
"""

from __future__ import annotations

import math

import torch

C = 8
_MANT = {torch.bfloat16: (8, -126), torch.float16: (11, -14), torch.float32: (24, -126)}


def act64(name: str, s: torch.Tensor) -> torch.Tensor:
    if name == "silu":
        return s * torch.sigmoid(s)
    if name == "gelu_tanh":
        return s * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (s + 0.044715 * s**3))
    if name == "gelu":
        return 0.5 * s * torch.special.erfc(-s / math.sqrt(2))
    raise ValueError(name)


def ulp(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    p, emin = _MANT[dtype]
    _, e = torch.frexp(v.abs())
    e = torch.clamp(e - 1, min=emin)
    return torch.ldexp(torch.ones_like(v), e - (p - 1))


def check_fp64(out: torch.Tensor, act: str, s: torch.Tensor, b: torch.Tensor | None = None, *, worst: int = 5):
    """``out`` (any float dtype) against the oracle; ``s``/``b`` are the inputs (widened exactly to fp64)."""
    s = s.detach().cpu().double().requires_grad_(True)
    f = act64(act, s)
    (df,) = torch.autograd.grad(f.sum(), s)
    s = s.detach()
    f = f.detach()
    g = torch.ones_like(s) if b is None else b.detach().cpu().double()
    ref = f * g
    cond = (s * df).nan_to_num(0.0).abs() * g.abs()
    got = out.detach().cpu().double()
    ref_stored = ref.to(out.dtype).double()
    nonfinite = ~ref_stored.isfinite()
    floor = (2.0**-147 * (1 + s.abs()) * g.abs()).nan_to_num(0.0, posinf=0.0)
    tol = ulp(ref.nan_to_num(0.0), out.dtype) + C * 2.0**-24 * (ref.abs() + cond).nan_to_num(0.0) + floor
    err = (got - ref).abs()
    ok = torch.where(nonfinite, (got == ref_stored) | (got.isnan() & ref_stored.isnan()), err <= tol)
    if bool(ok.all()):
        return
    bad = (~ok).nonzero()[:worst]
    lines = [f"{int((~ok).sum())} of {ok.numel()} elements off the fp64 oracle ({act}, {out.dtype})"]
    for idx in bad.tolist():
        i = tuple(idx)
        lines.append(f"  at {i}: s={s[i].item()!r} b={g[i].item()!r}: got {got[i].item()!r}, "
                     f"fp64 {ref[i].item()!r}, err {err[i].item():.3g} > tol {tol[i].item():.3g}")
    raise AssertionError("\n".join(lines))


def tail_values(dtype: torch.dtype, device) -> torch.Tensor:
    """Inputs where eager's formulas cancel or overflow (gelu's negative tail, sigmoid's ends),
    around zero, and the special values."""
    ramp = torch.linspace(-40, 40, 641)
    fine = torch.linspace(-12, 3, 301)
    special = torch.tensor([0.0, -0.0, 1e-30, -1e-30, 1e-6, -1e-6, 88.0, -88.0, 90.0, -90.0, 104.0, -104.0,
                            1e4, -1e4, 1e30, -1e30, float("inf"), float("-inf"), float("nan")])
    return torch.cat([ramp, fine, special]).to(dtype).to(device)


def every_value(dtype: torch.dtype, device) -> torch.Tensor:
    """Every finite value of a 16-bit dtype (65536 bit patterns less inf / nan), as one row."""
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    v = bits.view(dtype)
    return v[v.isfinite()].reshape(1, -1).to(device)
