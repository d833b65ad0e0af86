"""gated_residual / gated_residual_ are torch.equal to residual + gate * update / residual.add_(gate * update)."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "modulate.gated_residual"
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


rnd = testing.log_uniform


def check(backend, r, u, g=None):
    out = mod.gated_residual(r, u, g, backend=backend)
    ref = mod.gated_residual_reference(r, u, g)
    assert out.is_contiguous()
    testing.assert_exact(out, ref)
    r_ours, r_ref = r.clone(), r.clone()
    ret = mod.gated_residual_(r_ours, u, g, backend=backend)
    assert ret is r_ours
    mod.gated_residual_reference(r_ref, u, g, inplace=True)
    testing.assert_exact(r_ours, r_ref)
    return out


@pytest.mark.parametrize("D", [1, 7, 96, 3072, 5000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_per_sample_gate(backend, device, D, dtype):
    torch.manual_seed(D)
    r, u = rnd(2, 3, D, dtype=dtype, device=device), rnd(2, 3, D, dtype=dtype, device=device)
    check(backend, r, u, rnd(2, 6, D, dtype=dtype, device=device)[:, 2:3])


@pytest.mark.parametrize("layout", ["none", "channel", "sample2d", "token-strided", "frame", "frame-b1"])
def test_gate_layouts(backend, device, layout):
    torch.manual_seed(5)
    B, S, D = 2, 6, 130
    dt = torch.bfloat16
    r, u = rnd(B, S, D, dtype=dt, device=device), rnd(B, S, D, dtype=dt, device=device)
    gate = {
        "none": lambda: None,
        "channel": lambda: rnd(D, dtype=dt, device=device),
        "sample2d": lambda: rnd(B, D, dtype=dt, device=device),
        "token-strided": lambda: rnd(B, S, 3 * D, dtype=dt, device=device)[..., D:2 * D],
        "frame": lambda: rnd(B, 3, 1, D, dtype=dt, device=device),
        "frame-b1": lambda: rnd(1, 2, 1, D, dtype=dt, device=device),
    }[layout]()
    check(backend, r, u, gate)


@pytest.mark.parametrize(
    "rdt,udt,gdt",
    [(torch.bfloat16, torch.bfloat16, torch.float32), (torch.float32, torch.bfloat16, torch.bfloat16),
     (torch.bfloat16, torch.float16, torch.bfloat16), (torch.float16, torch.float16, None)],
)
def test_type_promotion(backend, device, rdt, udt, gdt):
    """Wan keeps the gate in fp32 over a bf16 stream: out of place the result is fp32, in place bf16."""
    torch.manual_seed(6)
    r, u = rnd(1, 4, 200, dtype=rdt, device=device), rnd(1, 4, 200, dtype=udt, device=device)
    g = None if gdt is None else rnd(1, 1, 200, dtype=gdt, device=device)
    out = check(backend, r, u, g)
    t1 = udt if g is None else torch.promote_types(gdt, udt)
    assert out.dtype == torch.promote_types(rdt, t1)


def test_inplace_through_strided_view(backend, device):
    """In place into a strided view: only the viewed elements change, bit-exactly."""
    D = 64
    big = rnd(2, 10, 2 * D, dtype=torch.bfloat16, device=device)
    before = big.clone()
    view = big[:, 2:7, D // 2:D // 2 + D]
    u = rnd(2, 5, D, dtype=torch.bfloat16, device=device)
    g = rnd(2, 1, D, dtype=torch.bfloat16, device=device)
    ref = mod.gated_residual_reference(view.clone(), u, g)
    mod.gated_residual_(view, u, g, backend=backend)
    testing.assert_exact(view, ref)
    untouched = torch.ones_like(big, dtype=torch.bool)
    untouched[:, 2:7, D // 2:D // 2 + D] = False
    testing.assert_exact(big[untouched], before[untouched])


def test_2d_and_update_strides(backend, device):
    r = rnd(9, 40, dtype=torch.float16, device=device)
    u = rnd(9, 80, dtype=torch.float16, device=device)[:, 40:]
    check(backend, r, u, rnd(40, dtype=torch.float16, device=device))
    check(backend, r, u, rnd(9, 40, dtype=torch.float16, device=device))


@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64)])
def test_empty(backend, device, shape):
    r = torch.randn(shape, device=device)
    assert mod.gated_residual(r, r.clone(), backend=backend).shape == r.shape
    assert mod.gated_residual_(r, r.clone(), backend=backend) is r


def test_unsupported(device):
    r = torch.randn(2, 4, 32, device=device)
    with pytest.raises(UnsupportedInputError, match="must have x's shape|must have"):
        mod.gated_residual(r, torch.randn(2, 5, 32, device=device))
    with pytest.raises(UnsupportedInputError, match="does not broadcast"):
        mod.gated_residual(r, r, torch.randn(3, 32, device=device))
    with pytest.raises(UnsupportedInputError, match="dtype torch.int32"):
        mod.gated_residual(r, r.int())
    with pytest.raises(UnsupportedInputError, match="share memory"):
        mod.gated_residual_(torch.randn(1, 1, 32, device=device).expand(2, 4, 32), r)
    with pytest.raises(UnsupportedInputError, match="share memory"):
        mod.gated_residual_(torch.randn(2, 40, device=device).as_strided((2, 4, 32), (40, 2, 1)), r)
    # tokens-major memory ([S, B, D] storage seen as [B, S, D]) is fine
    sbd = torch.randn(4, 2, 32, device=device).transpose(0, 1)
    assert mod.can_use_gated_residual(sbd, r, inplace=True)
    assert not mod.can_use_gated_residual(r, r[:, :3])
    assert mod.can_use_gated_residual(r, r, inplace=True)


def test_opcheck_and_compile(backend, device):
    import torch._dynamo

    r = rnd(2, 3, 40, dtype=torch.bfloat16, device=device)
    u = rnd(2, 3, 40, dtype=torch.bfloat16, device=device)
    g = rnd(2, 1, 40, dtype=torch.float32, device=device)
    torch.library.opcheck(torch.ops.sgl_diffusion.gated_residual.default, (r, u, g, backend))
    torch.library.opcheck(torch.ops.sgl_diffusion.gated_residual_.default, (r.clone(), u, g, backend))

    def block(r, u, g):
        h = mod.gated_residual(r, u, g, backend=backend)
        mod.gated_residual_(h, u, None, backend=backend)
        return h * 2

    torch._dynamo.reset()
    assert torch._dynamo.explain(block)(r, u, g).graph_break_count == 0
    testing.assert_exact(torch.compile(block, fullgraph=True, backend="aot_eager")(r, u, g), block(r, u, g))
