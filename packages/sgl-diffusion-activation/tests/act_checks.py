"""Checks shared by the activation and GLU tests: a result against the eager chain within the
backend's declared contract (exact: ``torch.equal``; close: the registry's tolerance) and, for
the close backend, against the fp64 oracle of ``act_oracle.py``."""

from __future__ import annotations

import torch
from act_oracle import check_fp64

import sgl_diffusion_activation as act
from sgl_diffusion_core import REGISTRY, testing

DTYPES = [torch.bfloat16, torch.float16, torch.float32]
UNARY = ["silu", "gelu_tanh", "gelu"]
rnd = testing.log_uniform


def spec(op: str, backend: str):
    return next(s for s in REGISTRY.specs(f"activation.{op}") if s.backend == backend)

def contract_check(op: str, backend: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    c = spec(op, backend).contract
    if c.kind == "exact":
        testing.assert_exact(out, ref)
    else:
        atol, rtol = c.tolerance(ref.dtype)
        testing.assert_close(out, ref, atol=atol, rtol=rtol)

def unary(name, backend, x, bias=None, **kw):
    out = getattr(act, name)(x, bias=bias, backend=backend, **kw)
    ref = getattr(act, f"{name}_reference")(x, bias=bias)
    assert out.shape == x.shape and out.dtype == ref.dtype
    contract_check(name, backend, out, ref)
    if spec(name, backend).contract.kind == "close":
        s = x.double() if bias is None else x.double() + bias.double()
        check_fp64(out, name, s)
    return out

def packed(name, backend, x, bias=None, **kw):
    op = f"{name}_and_mul"
    out = getattr(act, op)(x, bias=bias, backend=backend, **kw)
    ref = getattr(act, f"{op}_reference")(x, bias=bias)
    D = x.shape[-1] // 2
    assert out.shape == (*x.shape[:-1], D) and out.dtype == ref.dtype
    contract_check(op, backend, out, ref)
    if spec(op, backend).contract.kind == "close":
        h = x.double() if bias is None else x.double() + bias.double()
        check_fp64(out, name, h[..., :D], h[..., D:])
    return out

def split(name, backend, a, b, **kw):
    op = f"{name}_mul"
    out = getattr(act, op)(a, b, backend=backend, **kw)
    ref = getattr(act, f"{op}_reference")(a, b)
    assert out.shape == a.shape and out.dtype == ref.dtype
    contract_check(op, backend, out, ref)
    if spec(op, backend).contract.kind == "close":
        check_fp64(out, name, a, b)
    return out
