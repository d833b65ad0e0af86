"""``Op.can_use`` keeps its verdict per call signature (``verdict_key``): validation runs once per
signature, and never where the verdict may depend on what the key does not hold."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import Backend, Capabilities, Contract, InputDesc, KernelSpec, Op, dtype_name
from sgl_diffusion_core.op import INDEX_VALUES_KEYED, verdict_key
from sgl_diffusion_core.registry import REGISTRY

MOD = __name__
OP = "test.can_use_cache"
DESCRIBED: list[tuple] = []


def describe_pair(x, y, lens=None, *, mode="plain"):
    """Refuses x and y at one address, lens values past x's length, mode 'bad'; counts its calls."""
    DESCRIBED.append((tuple(x.shape), mode))
    problems = []
    if x.data_ptr() == y.data_ptr():
        problems.append("x and y share memory")
    if lens is not None and int(lens.max()) > x.shape[0]:
        problems.append("lens past x")
    if mode == "bad":
        problems.append("mode 'bad'")
    desc = InputDesc(platform="cpu", dtypes=(dtype_name(x.dtype),), problems=problems)
    desc.info = {"geom": None, "empty": False}
    return desc


def prepare(geom, x, y, lens):
    return lambda x, y, lens: x + y


CAPS = Capabilities(platforms=("cpu",))
PAIR = Op(OP, distribution="sgl-diffusion-core", summary="x + y", describe=describe_pair, n_tensors=3,
          reference=f"{MOD}:prepare", backends=[Backend("torch", f"{MOD}:prepare", CAPS, Contract.exact())])


@pytest.fixture(autouse=True)
def fresh():
    PAIR.clear()
    DESCRIBED.clear()


def test_a_verdict_per_signature():
    x, y = torch.ones(4), torch.ones(4)
    assert PAIR.can_use(x, y) and PAIR.can_use(x, y) and PAIR.can_use(torch.zeros(4), torch.zeros(4))
    assert len(DESCRIBED) == 1 and PAIR.verdicts_cached() == 1
    assert PAIR.can_use(torch.ones(5), torch.ones(5))  # another shape: asked again
    assert not PAIR.can_use(x, y, mode="bad") and not PAIR.can_use(x, y, mode="bad")
    assert PAIR.can_use(x, y, backend="torch") and PAIR.can_use(x, y, exact=True)
    assert len(DESCRIBED) == 5 and PAIR.verdicts_cached() == 5


def test_shared_memory_is_part_of_the_signature():
    x = torch.ones(4)
    assert PAIR.can_use(x, torch.ones(4))
    assert not PAIR.can_use(x, x)  # same shapes, one address: another signature, refused
    assert PAIR.can_use(x, torch.ones(4))
    assert verdict_key((x, x), {}) != verdict_key((x, torch.ones(4)), {})
    # overlapping views of one buffer (an ``out`` over an input): the key holds how far apart they start
    a, b = torch.zeros(8), torch.zeros(8)
    assert verdict_key((a[0:4], a[2:6]), {}) == verdict_key((b[0:4], b[2:6]), {})
    assert verdict_key((a[0:4], a[2:6]), {}) != verdict_key((a[0:4], a[4:8]), {})
    assert verdict_key((a[0:4], a[2:6]), {}) != verdict_key((torch.zeros(4), torch.zeros(4)), {})
    assert verdict_key((a[1:5], a[3:7]), {}) != verdict_key((a[0:4], a[2:6]), {})  # another 16-byte alignment


def test_index_values_on_the_cpu_are_part_of_the_signature():
    x, y = torch.ones(4), torch.ones(4)
    assert PAIR.can_use(x, y, torch.tensor([3]))
    assert not PAIR.can_use(x, y, torch.tensor([9]))  # same signature, values past x: refused
    assert PAIR.can_use(x, y, torch.tensor([3])) and not PAIR.can_use(x, y, torch.tensor([9]))  # kept per values
    assert len(DESCRIBED) == 2 and PAIR.verdicts_cached() == 2
    assert verdict_key((x, y, torch.tensor([3])), {}) != verdict_key((x, y, torch.tensor([4])), {})
    assert verdict_key((x, y, torch.tensor([[1, 2]])), {}) != verdict_key((x, y, torch.tensor([[1], [2]])), {})
    many = torch.zeros(INDEX_VALUES_KEYED + 1, dtype=torch.int32)
    assert verdict_key((x, y, many), {}) is None  # too many values to key on: decided afresh
    assert PAIR.can_use(x, y, many) and PAIR.can_use(x, y, many)
    assert len(DESCRIBED) == 4 and PAIR.verdicts_cached() == 2
    assert verdict_key((x, y, [torch.tensor([1])]), {}) is None  # tensors inside a sequence


def test_unhashable_arguments_decide_afresh():
    x, y = torch.ones(4), torch.ones(4)
    assert PAIR.can_use(x, y, mode=["plain"]) and PAIR.can_use(x, y, mode=["plain"])
    assert len(DESCRIBED) == 2 and PAIR.verdicts_cached() == 0


def test_a_registration_makes_the_verdicts_stale():
    x, y = torch.ones(4), torch.ones(4)
    assert not PAIR.can_use(x, y, backend="late")
    assert not PAIR.can_use(x, y, backend="late") and len(DESCRIBED) == 1
    REGISTRY.register(KernelSpec(op=OP, backend="late", target=f"{MOD}:prepare", capabilities=CAPS,
                                 contract=Contract.exact()))
    assert PAIR.can_use(x, y, backend="late")  # the new backend serves: not the stale False
    assert len(DESCRIBED) == 2


def test_the_interpreter_flag_is_part_of_the_signature(monkeypatch):
    x, y = torch.ones(4), torch.ones(4)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    PAIR.can_use(x, y)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    PAIR.can_use(x, y)
    assert len(DESCRIBED) == 2



def prepare_first(geom, x, y, lens):
    return lambda x, y, lens: x - y


LATE = Op("test.plan_cache", distribution="sgl-diffusion-core", summary="x + y", describe=describe_pair, n_tensors=3,
          reference=f"{MOD}:prepare", backends=[Backend("torch", f"{MOD}:prepare", CAPS, Contract.exact())])


def test_a_registration_makes_the_plans_stale():
    x, y = torch.ones(4), torch.ones(4)
    assert torch.equal(LATE.plan((x, y, None))(x, y, None), x + y)
    assert torch.equal(LATE.plan((x, y, None))(x, y, None), x + y) and len(DESCRIBED) == 1  # cached
    REGISTRY.register(KernelSpec(op="test.plan_cache", backend="first", target=f"{MOD}:prepare_first",
                                 capabilities=CAPS, contract=Contract.exact(), priority=100))
    # the new backend comes first: the plan built before it registered is not served again
    assert torch.equal(LATE.plan((x, y, None))(x, y, None), x - y)
