"""Op plumbing: the eager index check."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import IndexOutOfRangeError, UnsupportedInputError, check_index_range


def _check(index, lo, hi):
    check_index_range(index, lo, hi, "demo.op", name="idx", bound="N", meaning="rows of x")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_check_index_range_accepts_the_range_and_empty(dtype):
    _check(torch.tensor([0, 4, 2], dtype=dtype), 0, 5)
    _check(torch.tensor([-1, 3, -1], dtype=dtype), -1, 4)  # a sentinel below 0 where the op allows one
    _check(torch.empty(0, dtype=dtype), 0, 0)  # nothing to check, nothing to sync


@pytest.mark.parametrize(("values", "lo", "found", "why"), [
    ([0, 5, 2], 0, "[0, 5]", "max 5 >= N=5"),
    ([-3, 1], 0, "[-3, 1]", "min -3 < 0"),
    ([-2, 9], -1, "[-2, 9]", "min -2 < -1, max 9 >= N=5"),
])
def test_check_index_range_names_the_range_found(values, lo, found, why):
    with pytest.raises(IndexOutOfRangeError) as info:
        _check(torch.tensor(values), lo, 5)
    assert str(info.value) == (f"demo.op: idx values must lie in [{lo}, 5) (N = rows of x); "
                               f"got values in {found} ({why})")
    # catchable as the op protocol's error, as a ValueError and as an IndexError
    assert isinstance(info.value, UnsupportedInputError) and isinstance(info.value, IndexError)
