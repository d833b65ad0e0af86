"""PreparedLaunch: the lean launch path gives the regular path's results, re-specializes a
misaligned pointer, and honours Triton's launch hooks when one is installed; on the CPU, with the
compiled kernel stood in for, the direct call's exact arguments and when it is left."""

import pytest
import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, triton_launch


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


class _Chain:
    def __init__(self):
        self.calls = []


class _Hooks:
    def __init__(self):
        self.launch_enter_hook, self.launch_exit_hook = _Chain(), _Chain()


def _direct_launch(monkeypatch):
    """A PreparedLaunch whose compiled kernel is stood in for: the direct call's arguments are recorded."""
    launch = _launch(200, None)
    seen = {"run": [], "runner": [], "jit": 0}
    hooks = _Hooks()
    launch._runner = lambda *a, stream: seen["runner"].append((a, stream))
    launch._raw = (lambda *a: seen["run"].append(a), *launch.grid, "function", "meta", hooks, lambda: 0,
                   lambda index: 1000 + index, launch._const_tail)

    class _Jit:
        def __getitem__(self, grid):
            def compile_and_run(*a, **kw):
                seen["jit"] += 1
            return compile_and_run

    monkeypatch.setattr(launch, "kernel", _Jit())
    # the runner path reads the current device and its stream (a CPU build of torch has no CUDA calls)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    monkeypatch.setattr(triton_launch, "_raw_stream", lambda index: 1000 + index)
    return launch, seen, hooks


def test_direct_call_passes_grid_stream_pointers_scalars_and_constexprs(monkeypatch):
    launch, seen, _ = _direct_launch(monkeypatch)
    x, y = torch.zeros(64), torch.zeros(64)
    launch(x, y, 200, 2.0, 0.5)
    grid = tuple(launch.grid)
    assert seen["run"] == [(*grid, 1000, "function", "meta", None, None, None, x.data_ptr(), y.data_ptr(), 200, 2.0,
                            0.5, 64)]
    assert not seen["runner"] and seen["jit"] == 0


def test_misaligned_pointer_or_hook_leaves_the_direct_call(monkeypatch):
    launch, seen, hooks = _direct_launch(monkeypatch)
    x, y = torch.zeros(65), torch.zeros(64)
    launch(x[1:], y, 64, 2.0, 0.5)  # 4-byte aligned: Triton's regular path, which re-specializes
    assert seen["jit"] == 1 and not seen["run"] and not seen["runner"]
    hooks.launch_enter_hook.calls.append(print)  # a profiler's hook: Triton's runner, hooks included
    launch(x[:64], y, 64, 2.0, 0.5)
    assert len(seen["runner"]) == 1 and not seen["run"]
    assert seen["runner"] == [((x.data_ptr(), y.data_ptr(), 64, 2.0, 0.5, 64), 1000)]
