"""Op plumbing: the eager index check, the Dispatcher's plans."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import (
    Capabilities,
    Contract,
    Dispatcher,
    IndexOutOfRangeError,
    InputDesc,
    KernelSpec,
    OpDef,
    UnsupportedInputError,
    check_index_range,
    dtype_name,
    forget_index_checks,
    index_check_mode,
    register,
    register_op,
)


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


# --- the remembered index checks: one sync per index tensor and version -----------------------------


@pytest.fixture
def reductions(monkeypatch):
    """Counts the device reductions check_index_range runs (each is one host sync on a GPU)."""
    calls = []
    real = torch.aminmax

    def counting(t, *args, **kwargs):
        calls.append(tuple(t.shape))
        return real(t, *args, **kwargs)

    monkeypatch.setattr(torch, "aminmax", counting)
    forget_index_checks()
    yield calls
    forget_index_checks()


def test_an_unmodified_index_is_checked_once(reductions):
    index = torch.tensor([[0, 1, 1, 0]])
    for _ in range(5):
        _check(index, 0, 2)
    assert len(reductions) == 1
    # the remembered range is compared with each call's bound on the host: a smaller bound
    # still raises, naming the range found at the first check, with no second reduction
    with pytest.raises(IndexOutOfRangeError, match=r"got values in \[0, 1\] \(max 1 >= N=1\)"):
        _check(index, 0, 1)
    assert len(reductions) == 1


@pytest.mark.parametrize("write", [
    lambda t: t.__setitem__((0, 2), 7),        # indexing assignment
    lambda t: t.copy_(torch.full_like(t, 7)),  # copy_, how a static input is refilled
    lambda t: t[:, 1:].add_(6),                # through a view: views share the version counter
    lambda t: t.detach().fill_(7),             # detach() shares it too
])
def test_an_index_written_in_place_is_checked_again(reductions, write):
    index = torch.tensor([[0, 1, 1, 0]])
    _check(index, 0, 2)
    with torch.no_grad():  # the version counter moves under no_grad as well
        write(index)
    with pytest.raises(IndexOutOfRangeError, match="max 7 >= N=2"):
        _check(index, 0, 2)
    assert len(reductions) == 2


def test_an_out_of_range_index_is_not_remembered(reductions):
    index = torch.tensor([0, 3])
    for _ in range(2):
        with pytest.raises(IndexOutOfRangeError):
            _check(index, 0, 2)
    assert len(reductions) == 2
    _check(index, 0, 4)  # a bound it satisfies: checked (a third reduction), then remembered
    _check(index, 0, 4)
    assert len(reductions) == 3


def test_always_inference_tensors_and_forget_check_every_time(reductions):
    index = torch.tensor([0, 1])
    _check(index, 0, 2)
    check_index_range(index, 0, 2, "demo.op", name="idx", bound="N", meaning="rows of x", cache=False)
    assert len(reductions) == 2  # cache=False (check_index="always") reduces although remembered
    forget_index_checks()
    _check(index, 0, 2)
    assert len(reductions) == 3
    with torch.inference_mode():
        frozen = torch.tensor([0, 1])  # no version counter: an in-place write could not be seen
    _check(frozen, 0, 2)
    _check(frozen, 0, 2)
    assert len(reductions) == 5


def test_a_new_tensor_at_a_freed_ones_address_is_checked(reductions):
    import gc

    _check(torch.tensor([0, 1]), 0, 2)  # freed at once; its entry goes with it
    gc.collect()
    from sgl_diffusion_core import ops

    assert len(ops._checked_indices) == 0
    for _ in range(3):  # each new tensor may reuse the id and the memory of the last
        with pytest.raises(IndexOutOfRangeError):
            _check(torch.tensor([0, 9]), 0, 2)
    assert len(reductions) == 4


def test_the_remembered_checks_are_bounded():
    from sgl_diffusion_core.ops import _CheckedIndices

    cache = _CheckedIndices(limit=4)
    live = [torch.tensor([i]) for i in range(6)]
    for t in live:
        cache.remember(t, 0, 0)
    assert len(cache) <= 4 and cache.lookup(live[-1]) == (0, 0)


def test_the_remembered_checks_under_threads():
    """Threads remembering and freeing tensors past the bound at once: no error, and every live
    tensor that is found is found with its own range."""
    import threading

    from sgl_diffusion_core.ops import _CheckedIndices

    cache = _CheckedIndices(limit=8)
    errors = []

    def work(seed):
        try:
            for i in range(300):
                t = torch.tensor([seed, i])
                cache.remember(t, seed, i)
                found = cache.lookup(t)
                assert found in (None, (seed, i)), found
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(cache) <= 8


@pytest.mark.parametrize(("value", "mode"), [(True, "cached"), (False, None), ("always", "always")])
def test_index_check_mode(value, mode):
    assert index_check_mode(value, "demo.op") == mode


@pytest.mark.parametrize("value", [1, 0, "yes", None, "cached"])
def test_index_check_mode_refuses_other_values(value):
    with pytest.raises(ValueError, match=r"demo.op: check_index must be True, False or 'always'; got"):
        index_check_mode(value, "demo.op")


# --- Dispatcher: a private op with one backend (no kernels needed) ---------------------------------

OP = "test.dispatch"
MOD = __name__
DESCRIBED: list[tuple] = []


def describe_demo(x, *, factor=2):
    DESCRIBED.append((tuple(x.shape), factor))
    desc = InputDesc(platform="cpu", dtypes=(dtype_name(x.dtype),), problems=[] if x.dim() else ["x must be 1-D+"])
    desc.info = {"geom": factor, "empty": x.numel() == 0}
    return desc


def impl_demo(x, factor=2, *, geom):
    return x * geom


register_op(OpDef(op=OP, distribution="sgl-diffusion-core", describe=f"{MOD}:describe_demo", public=f"{MOD}:impl_demo"))
register(KernelSpec(op=OP, backend="ref", target=f"{MOD}:impl_demo", capabilities=Capabilities(platforms=("cpu",)),
                    contract=Contract.exact()))


def _bind(fn, geom):
    return lambda x, factor=2: fn(x, factor, geom=geom)


def _empty_runner(geom):
    return lambda x, factor=2: "empty runner"


def test_dispatcher_caches_per_signature_and_option():
    d = Dispatcher(OP, describe_demo, bind=_bind, empty=_empty_runner)
    x = torch.ones(3)
    DESCRIBED.clear()
    for _ in range(2):
        assert d.plan((x,), options=(("factor", 3),))(x, 3).tolist() == [3.0] * 3
        assert d.plan((x,))(x).tolist() == [2.0] * 3
    assert DESCRIBED == [((3,), 3), ((3,), 2)]  # described once per (signature, options)


def test_dispatcher_empty_runner_is_optional():
    x = torch.ones(0)
    assert Dispatcher(OP, describe_demo, bind=_bind, empty=_empty_runner).plan((x,))(x) == "empty runner"
    # empty=None: the backend serves empty inputs too (its own result, not a runner's)
    out = Dispatcher(OP, describe_demo, bind=_bind, empty=None).plan((x,))(x)
    assert isinstance(out, torch.Tensor) and out.shape == (0,)


def test_dispatcher_checked_returns_the_description_or_raises():
    d = Dispatcher(OP, describe_demo, bind=_bind, empty=None)
    assert d.checked(torch.ones(2), options=(("factor", 5),)).info["geom"] == 5
    with pytest.raises(UnsupportedInputError, match=r"test.dispatch: unsupported input:\n  - x must be 1-D\+"):
        d.checked(torch.tensor(1.0))
    with pytest.raises(UnsupportedInputError, match="x must be 1-D"):
        d.validate(torch.tensor(1.0))


def test_dispatcher_per_call_check_runs_on_cached_plans():
    """What the plan key cannot see (addresses) is checked on every call, cached plan or not."""
    seen = []

    def per_call(x, **options):
        seen.append(options)
        return "x is poisoned" if bool(x[0] < 0) else None

    d = Dispatcher(OP, describe_demo, bind=_bind, empty=None, per_call=per_call)
    x = torch.ones(3)
    DESCRIBED.clear()
    assert d.plan((x,), options=(("factor", 3),))(x, 3).tolist() == [3.0] * 3
    with pytest.raises(UnsupportedInputError, match=r"test.dispatch: unsupported input:\n  - x is poisoned"):
        d.plan((-x,), options=(("factor", 3),))  # same signature: the cached plan, still checked
    assert len(DESCRIBED) == 1 and seen == [{"factor": 3}, {"factor": 3}]
