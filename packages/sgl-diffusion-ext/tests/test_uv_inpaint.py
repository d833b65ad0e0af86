"""uv_inpaint: every backend against the reference, the push-pull rules on small cases, bad input."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_ext as ext
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "ext.uv_inpaint"


def holes(B, H, W, C, frac, seed):
    g = torch.Generator().manual_seed(seed)
    tex = torch.rand(B, H, W, C, generator=g)
    mask = torch.rand(B, H, W, generator=g) > frac
    return tex, mask


# 37 x 50: odd sides at several levels (padding of the 2x2 push); 64 x 64 at 56 % holes (the case)
@pytest.mark.parametrize("shape, frac", [((2, 37, 50, 3), 0.56), ((1, 64, 64, 4), 0.56), ((1, 5, 1, 1), 0.5)])
@pytest.mark.parametrize("method", ["pushpull", "diffuse"])
def test_backend_matches_reference(backend, device, shape, frac, method):
    tex, mask = holes(*shape, frac, seed=shape[1])
    out = ext.uv_inpaint(tex.to(device), mask.to(device), method=method, iterations=5, backend=backend).cpu()
    ref = ext.uv_inpaint_reference(tex, mask, method=method, iterations=5)
    testing.assert_close(out, ref, atol=1e-6, rtol=1e-6)
    assert torch.equal(out[mask], tex[mask])  # known texels unchanged
    assert bool(out.isfinite().all())


def test_rules_on_small_cases(backend, device):
    tex = torch.zeros(4, 4, 1)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    tex[0, 0], mask[0, 0] = 2.0, True
    out = ext.uv_inpaint(tex.to(device), mask.to(device), backend=backend).cpu()
    assert bool((out == 2.0).all())  # one known texel fills everything
    tex[3, 3], mask[3, 3] = 4.0, True
    out = ext.uv_inpaint(tex.to(device), mask.to(device), backend=backend).cpu()
    assert out[0, 1] < out[2, 3] and 2.0 <= float(out.min()) and float(out.max()) <= 4.0
    none = ext.uv_inpaint(torch.full((3, 3, 2), 7.0, device=device), torch.zeros(3, 3, dtype=torch.bool,
                          device=device), backend=backend)
    assert int(none.count_nonzero()) == 0
    strided = torch.rand(6, 4, 3).transpose(0, 1)
    m = torch.rand(4, 6) > 0.5
    testing.assert_close(ext.uv_inpaint(strided.to(device), m.to(device), backend=backend).cpu(),
                         ext.uv_inpaint_reference(strided.contiguous(), m), atol=1e-6, rtol=1e-6)


def test_bad_input():
    tex, mask = torch.zeros(4, 4, 3), torch.zeros(4, 4, dtype=torch.bool)
    with pytest.raises(UnsupportedInputError, match="method must be"):
        ext.uv_inpaint(tex, mask, method="telea")
    with pytest.raises(UnsupportedInputError, match="mask must have shape"):
        ext.uv_inpaint(tex, mask[:2])
    with pytest.raises(UnsupportedInputError, match="mask must be bool or uint8"):
        ext.uv_inpaint(tex, mask.float())
    with pytest.raises(UnsupportedInputError, match="channels"):
        ext.uv_inpaint(torch.zeros(4, 4, 17), mask)
