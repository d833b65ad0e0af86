"""Varlen metadata, q/k/v packing and scatter are torch.equal to their eager chains on every backend.

Masks: ragged (a sample with no valid token, a fully valid one, holes), all valid, none
valid, B=1, and S=1100 (two 1024-wide chunks of the meta kernel's prefix sum, the second
masked). q/k/v: contiguous, a permuted [B, H, S, Dh] tensor read through its strides, and
q/k/v with different strides.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "layout.varlen_pack_qkv"


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


def masks(device):
    g = torch.Generator().manual_seed(0)
    ragged = torch.rand(4, 9, generator=g) < 0.5
    ragged[1] = False  # a sample with zero valid tokens
    ragged[2] = True  # a fully valid sample
    return {
        "ragged": ragged,
        "full": torch.ones(2, 5, dtype=torch.bool),
        "none": torch.zeros(3, 4, dtype=torch.bool),
        "b1-prefix": torch.arange(7) < 4,
        "long": torch.rand(2, 1100, generator=g) < 0.7,
        "strided": (torch.rand(9, 3, generator=g) < 0.5).t(),
    }


def _mask(name, device):
    m = masks(device)[name]
    return (m[None] if m.dim() == 1 else m).to(device)


@pytest.mark.parametrize("name", ["ragged", "full", "none", "b1-prefix", "long", "strided"])
def test_meta_matches_eager(backend, device, name):
    mask = _mask(name, device)
    idx, cu, mx, inv = lay.build_varlen_meta(mask, backend=backend)
    r_idx, r_cu, r_mx, r_inv = lay.build_varlen_meta_reference(mask)
    assert idx.dtype == torch.int64 and cu.dtype == torch.int32 and inv.dtype == torch.int64
    testing.assert_exact(idx, r_idx)
    testing.assert_exact(cu, r_cu)
    testing.assert_exact(inv, r_inv)
    assert mx == r_mx and isinstance(mx, int)
    # independent facts: nonzero order, counts, inverse of indices
    testing.assert_exact(idx, torch.nonzero(mask.reshape(-1)).flatten())
    assert cu[-1].item() == int(mask.sum()) and mx == (int(mask.sum(1).max()) if mask.shape[0] else 0)


@pytest.mark.parametrize("name", ["ragged", "full", "none", "b1-prefix"])
@pytest.mark.parametrize("layout", ["contiguous", "bhsd-view", "mixed"])
def test_pack_and_scatter(backend, device, name, layout):
    torch.manual_seed(1)
    mask = _mask(name, device)
    B, S = mask.shape
    H, Dh = 3, 24
    if layout == "contiguous":
        q, k, v = (rnd(B, S, H, Dh, device=device) for _ in range(3))
    elif layout == "bhsd-view":
        q, k, v = (rnd(B, H, S, Dh, device=device).transpose(1, 2) for _ in range(3))
    else:
        q = rnd(B, S, H, Dh, device=device)
        k = rnd(B, H, S, Dh, device=device).transpose(1, 2)
        v = rnd(B, S, H, 2 * Dh, device=device)[..., Dh:]
    idx, cu, mx, inv = lay.build_varlen_meta_reference(mask)
    packed = lay.varlen_pack_qkv(q, k, v, idx, backend=backend)
    for got, t in zip(packed, (q, k, v)):
        assert got.is_contiguous()
        testing.assert_exact(got, t.reshape(B * S, H, Dh).index_select(0, idx))
    o = packed[0]
    for key in (inv, idx):
        out = lay.varlen_scatter(o, key, B, S, backend=backend)
        testing.assert_exact(out, lay.varlen_scatter_reference(o, key, B, S))
        testing.assert_exact(out[mask], q[mask])  # valid tokens back in place
        assert not out[~mask].any()  # zeros at padding


def test_scatter_strided_out(backend, device):
    mask = _mask("ragged", device)
    B, S = mask.shape
    idx, _, _, inv = lay.build_varlen_meta_reference(mask)
    o = rnd(idx.numel(), 6, 40, dtype=torch.float32, device=device)[:, ::2, 8:32]  # strided heads, offset
    testing.assert_exact(lay.varlen_scatter(o, inv, B, S, backend=backend), lay.varlen_scatter_reference(o, inv, B, S))


def test_bad_inputs(backend, device):
    q = rnd(2, 4, 2, 8, device=device)
    with pytest.raises(UnsupportedInputError, match="1-D int64"):
        lay.varlen_pack_qkv(q, q, q, torch.arange(3, dtype=torch.int32, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match="expected torch.bool"):
        lay.build_varlen_meta(torch.ones(2, 3, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match=r"\[B, S\]"):
        lay.build_varlen_meta(torch.ones(6, dtype=torch.bool, device=device), backend=backend)
    o = rnd(5, 2, 8, device=device)
    with pytest.raises(UnsupportedInputError, match="has 4 entries"):
        lay.varlen_scatter(o, torch.arange(4, device=device), 2, 4, backend=backend)
    assert not lay.can_use_varlen_scatter(o, torch.arange(4, device=device), 2, 4, backend=backend)
    assert lay.can_use_varlen_scatter(o, torch.arange(5, device=device), 2, 4, backend=backend)


def test_out_of_range_index_never_reads_out_of_bounds(device):
    """The triton gather reads nothing for an index outside [0, B*S): a zero row, no crash."""
    from sgl_diffusion_core import triton_interpret

    if "triton" not in __import__("sgl_diffusion_core").testing.runnable_backends(OP, device) or (
        device.type == "cpu" and not triton_interpret()
    ):
        pytest.skip("the triton backend does not run on this lane")
    q = rnd(1, 4, 2, 8, device=device)
    got = lay.varlen_pack_qkv(q, q, q, torch.tensor([1, 99, -5], device=device), backend="triton")[0]
    testing.assert_exact(got[0], q[0, 1])
    assert not got[1:].any()


def test_compile_fullgraph(backend, device):
    """Data-dependent sizes: the meta op traces with an unbacked size (needs capture_scalar_outputs
    for max_seqlen); pack and scatter then trace as usual."""
    mask = _mask("ragged", device)
    B, S = mask.shape
    q = rnd(B, S, 2, 16, device=device)

    def f(mask, q):
        idx, cu, mx, inv = lay.build_varlen_meta(mask, backend=backend)
        packed = lay.varlen_pack_qkv(q, q, q, idx, backend=backend)
        return lay.varlen_scatter(packed[0], inv, B, S, backend=backend), cu, mx

    with torch._dynamo.config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        out, cu, mx = torch.compile(f, fullgraph=True, backend="aot_eager")(mask, q)
    ref = lay.build_varlen_meta_reference(mask)
    testing.assert_exact(cu, ref[1])
    assert mx == ref[2]
    testing.assert_exact(out, torch.where(mask[:, :, None, None], q, torch.zeros_like(q)))
