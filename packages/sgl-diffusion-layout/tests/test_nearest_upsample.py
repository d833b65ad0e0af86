"""nearest_upsample is torch.equal to F.interpolate(x, scale_factor=f, mode=...) on every backend.

Grid: 4-D and 5-D; factor 2 everywhere, per-dim tuples with 1 (time kept) and 3 (not a
power of two: a real division in the kernel); contiguous, channels_last(_3d) (the output
follows x's format like eager) and a strided view; W=13, C=5 for masked tiles.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, explain, testing

OP = "layout.nearest_upsample"


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


FMT = {4: torch.channels_last, 5: torch.channels_last_3d}


@pytest.mark.parametrize("dim,sf", [(4, 2), (4, (3, 2)), (5, 2), (5, (1, 2, 2)), (5, (2, 3, 1))])
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_matches_interpolate(backend, device, dim, sf, fmt, mode):
    torch.manual_seed(dim)
    shape = (2, 5, 6, 13) if dim == 4 else (1, 5, 3, 4, 13)
    x = rnd(*shape, device=device)
    if fmt == "channels_last":
        x = x.contiguous(memory_format=FMT[dim])
    out = lay.nearest_upsample(x, sf, mode=mode, backend=backend)
    want = F.interpolate(x, scale_factor=sf, mode=mode)
    testing.assert_exact(out, want)
    assert out.stride() == want.stride(), (out.stride(), want.stride())


def test_strided_view_and_float_factor(backend, device):
    x = rnd(2, 6, 8, 10, dtype=torch.float32, device=device)[:, 1:4, :, 2:9]
    testing.assert_exact(lay.nearest_upsample(x, 2.0, backend=backend), F.interpolate(x, scale_factor=2.0))
    testing.assert_exact(lay.nearest_upsample_reference(x, 2), F.interpolate(x, scale_factor=2))


def test_empty(backend, device):
    x = rnd(0, 3, 4, 4, device=device)
    assert lay.nearest_upsample(x, 2, backend=backend).shape == (0, 3, 8, 8)


def test_bad_inputs(backend, device):
    x = rnd(1, 2, 4, 4, device=device)
    with pytest.raises(UnsupportedInputError, match="positive integer"):
        lay.nearest_upsample(x, 1.5, backend=backend)
    with pytest.raises(UnsupportedInputError, match="2 spatial dims"):
        lay.nearest_upsample(x, (2, 2, 2), backend=backend)
    with pytest.raises(UnsupportedInputError, match="mode must be one of"):
        lay.nearest_upsample(x, 2, mode="bilinear", backend=backend)
    with pytest.raises(UnsupportedInputError, match=r"\[N, C, H, W\]"):
        lay.nearest_upsample(x[0], 2, backend=backend)
    assert not lay.can_use_nearest_upsample(x, 0, backend=backend)


def test_float_index_guard():
    """Where eager's float index departs from i // f, the triton backend declines (torch serves)."""
    from sgl_diffusion_layout.nearest_upsample import _index_is_integer_division

    assert _index_is_integer_division(4096, 2, "nearest") and _index_is_integer_division(1000, 3, "nearest-exact")
    assert _index_is_integer_division(10000, 5, "nearest") and _index_is_integer_division(20000, 3, "nearest-exact")
    n = (1 << 16) // 7 + 1  # more outputs than the host check covers: the triton backend declines
    assert not _index_is_integer_division(n, 7, "nearest")
    x = torch.empty(1, 1, 1, n)
    exp = explain("layout.nearest_upsample", x, (1, 7))
    assert not exp.verdicts[0].ok and "float-index-differs" in "; ".join(exp.verdicts[0].reasons)
    assert exp.chosen == "torch"


def test_compile_fullgraph(backend, device):
    x = rnd(1, 3, 2, 4, 5, device=device).contiguous(memory_format=torch.channels_last_3d)
    f = torch.compile(lambda x: lay.nearest_upsample(x, (1, 2, 2), backend=backend), fullgraph=True,
                      backend="aot_eager")
    testing.assert_exact(f(x), F.interpolate(x, scale_factor=(1, 2, 2)))


@pytest.mark.parametrize("dim,sf", [(4, 2), (5, 2), (5, (2, 3, 1))])
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last"])
def test_launch_choices(backend, device, dim, sf, fmt):
    """The Triton backend's kernel (replicating input tiles) at its rule's tile and at tiles that
    leave partial tiles in both dims."""
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    from sgl_diffusion_core import describe
    K = testing.backend_module("layout.nearest_upsample", "triton")

    torch.manual_seed(dim)
    x = rnd(*((2, 5, 7, 13) if dim == 4 else (1, 5, 3, 5, 13)), device=device)
    if fmt == "channels_last":
        x = x.contiguous(memory_format=FMT[dim])
    want = F.interpolate(x, scale_factor=sf, mode="nearest")
    geom = describe(OP, x, sf, "nearest").info["geom"]
    for c in (None, K.UpsampleConfig(ba=2, bn=8, num_warps=1), K.UpsampleConfig(ba=4, bn=16, num_warps=2)):
        testing.assert_exact(K.prepare(geom, x, c)(x, sf, "nearest"), want)
