"""PreparedLaunch: the lean launch path gives the regular path's results, re-specializes a
misaligned pointer, and honours Triton's launch hooks when one is installed."""

import pytest
import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch


@triton.jit
def _axpb_kernel(X, Y, n, a, b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * a + b, mask=mask)


def _launch(n, device):
    return PreparedLaunch(_axpb_kernel, (triton.cdiv(n, 64),), {"BLOCK": 64}, n_ptrs=2,
                          options={"num_warps": 1}, device=device)


def _check(launch, n, device, offset=0):
    x = torch.randn(n + offset, device=device)[offset:]
    y = torch.empty_like(x)
    launch(x, y, n, 2.0, 0.5)
    assert torch.equal(y, x * 2.0 + 0.5)


def test_results_on_the_interpreter_or_device():
    device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
    launch = _launch(200, device)
    for _ in range(3):  # first launch (JIT), then the direct path
        _check(launch, 200, device)
    _check(launch, 200, device, offset=1)  # a 4-byte-aligned view: the regular path


def test_constexprs_must_be_the_trailing_parameters():
    with pytest.raises(ValueError, match="trailing parameters"):
        PreparedLaunch(_axpb_kernel, (1,), {"n": 3}, n_ptrs=2, options={})


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_launch_hooks_are_honoured():
    from triton import knobs

    device = torch.device("cuda")
    launch = _launch(300, device)
    _check(launch, 300, device)
    _check(launch, 300, device)  # the direct path, no hook
    seen = []

    def hook(metadata):
        seen.append(metadata)

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        _check(launch, 300, device)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert len(seen) == 1
    _check(launch, 300, device)
    assert len(seen) == 1
