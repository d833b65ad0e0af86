"""core's in-place write checks (``rows_disjoint``, ``writable_problem``, ``same_memory``), which
every op with ``inplace=`` / ``out=`` uses to refuse a view that would write an element twice."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from sgl_diffusion_core import rows_disjoint, same_memory, writable_problem


def test_rows_disjoint():
    assert rows_disjoint((2, 3), (12, 4), 4)  # contiguous [2, 3, 4]
    assert rows_disjoint((2, 3), (4, 8), 4)  # a permuted (tokens-major) layout
    assert rows_disjoint((2, 3), (36, 12), 4)  # q of a fused qkv: rows with gaps between them
    assert rows_disjoint((1, 5), (0, 4), 4)  # a size-1 dim's stride does not matter
    assert not rows_disjoint((2, 3), (12, 0), 4)  # expanded
    assert not rows_disjoint((2, 3), (12, 2), 4)  # rows half overlapping
    assert not rows_disjoint((2, 3), (8, 4), 4)  # the second sample starts inside the first


def test_writable_problem_and_same_memory():
    x = torch.randn(2, 3, 4)
    assert writable_problem("x", x) is None and writable_problem("x", x[:, :, :2]) is None
    assert "expanded or overlapping" in writable_problem("x", x[:, :1].expand(2, 3, 4))
    assert writable_problem("x", torch.empty(0, 3, 4).expand(0, 3, 4)) is None
    assert same_memory(x, x) and same_memory(x, x.view(6, 4)) and not same_memory(x, x[1:])
    with FakeTensorMode():  # no addresses while tracing: only identity counts
        f = torch.randn(2, 3, 4)
        g = torch.randn(2, 3, 4)
        assert same_memory(f, f) and not same_memory(f, g)
