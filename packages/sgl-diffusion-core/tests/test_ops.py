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
