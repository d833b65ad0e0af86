"""``Op(chooser=...)``: the hook a measured selection plugs into (``backend=None`` only)."""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Capabilities, Contract, InputDesc, Op, dtype_name, eligible, explain
from sgl_diffusion_core.registry import REGISTRY

MOD = __name__
OP = "test.chooser"
RAN: list[str] = []


def describe_twice(x):
    desc = InputDesc(platform="cpu", dtypes=(dtype_name(x.dtype),), problems=[] if x.dim() else ["x must be 1-D+"])
    desc.info = {"geom": None, "empty": x.numel() == 0}
    return desc


def _runner(name):
    def prepare(geom, x):
        def run(x):
            RAN.append(name)
            return x * 2
        return run
    return prepare


prepare_fast, prepare_slow = _runner("fast"), _runner("slow")


class PickLowest:
    """Chooses the lowest-priority eligible backend; ``settled`` says whether the plan may be cached."""

    def __init__(self):
        self.settled = True
        self.calls = 0

    def choose(self, op_id, desc, tensors, exact):
        self.calls += 1
        return eligible(op_id, desc, exact=exact)[-1], self.settled

    def explain(self, op_id, desc, exact, explanation):
        import dataclasses

        return dataclasses.replace(explanation, chosen="slow", notes=("measured: slow wins",))


CHOOSER = PickLowest()
CAPS = Capabilities(platforms=("cpu",))
TWICE = Op(OP, distribution="sgl-diffusion-core", summary="x * 2", describe=describe_twice, n_tensors=1,
           reference=f"{MOD}:describe_twice", chooser=CHOOSER,
           backends=[Backend("slow", f"{MOD}:prepare_slow", CAPS, Contract.exact()),
                     Backend("fast", f"{MOD}:prepare_fast", CAPS, Contract.exact(), priority=10)])


def test_eligible_lists_what_select_impl_accepts_in_priority_order():
    desc = describe_twice(torch.ones(2))
    assert [s.backend for s in eligible(OP, desc)] == ["fast", "slow"]
    assert [s.backend for s in eligible(OP, describe_twice(torch.tensor(1.0)))] == []
    assert REGISTRY.specs(OP)[0].backend == "fast"  # the static priority the chooser overrides


def test_the_chooser_picks_for_backend_none_only_and_settled_plans_are_cached():
    TWICE.clear()
    RAN.clear()
    CHOOSER.calls, CHOOSER.settled = 0, True
    x = torch.ones(3)
    for _ in range(2):
        assert TWICE.plan((x,))(x).tolist() == [2.0] * 3
    assert RAN == ["slow", "slow"] and CHOOSER.calls == 1  # built once, then the cached plan
    RAN.clear()
    TWICE.plan((x,), backend="fast")(x)
    assert RAN == ["fast"] and CHOOSER.calls == 1  # an explicit backend never asks the chooser


def test_an_unsettled_choice_is_not_cached():
    TWICE.clear()
    CHOOSER.calls, CHOOSER.settled = 0, False
    x = torch.ones(4)
    TWICE.plan((x,))(x)
    TWICE.plan((x,))(x)
    assert CHOOSER.calls == 2
    CHOOSER.settled = True
    TWICE.plan((x,))(x)
    TWICE.plan((x,))(x)
    assert CHOOSER.calls == 3


def test_explain_reports_the_choosers_pick_and_notes():
    ex = explain(OP, torch.ones(2))
    assert ex.chosen == "slow" and ex.notes == ("measured: slow wins",)
    assert str(ex).endswith("  measured: slow wins")
    narrowed = explain(OP, torch.ones(2), backend="fast")  # an explicit backend: the chooser is not consulted
    assert narrowed.chosen == "fast" and narrowed.notes == ()
