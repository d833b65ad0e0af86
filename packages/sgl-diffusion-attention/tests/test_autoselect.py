"""Measured selection of ``attention(backend=None)``, run on the CPU with a fake device and timer.

The chooser measures on GPU platforms only; these tests declare the CPU one of them, stand in
a timer that returns set times, and add fake backends (wrapping the ``torch`` definition, or
deviating, or raising) to the candidates ``select_impl`` would accept.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_attention import _autoselect as A
from sgl_diffusion_attention import _specs as S
from sgl_diffusion_attention.attention import ATTENTION
from sgl_diffusion_core import REGISTRY, BackendRejectedWarning, eligible, explain

OP = "attention.attention"
RUNS: Counter = Counter()
TORCH = next(s for s in REGISTRY.specs(OP) if s.backend == "torch")  # the definition
definition = attn.attention_reference


def _torch_run(name: str, change=None):
    def prepare(geom, *tensors):
        inner = TORCH.load()(geom, *tensors)

        def run(*args):
            RUNS[name] += 1
            if change == "raise":
                raise RuntimeError(f"{name} cannot launch")
            res = inner(*args)
            if change == "off":
                return (res[0] + 0.5, res[1]) if isinstance(res, tuple) else res + 0.5
            return res

        return run

    return prepare


@dataclass
class FakeSpec:
    backend: str
    prepare: Any
    contract: Any = S.ATTENTION_CLOSE

    def load(self):
        return self.prepare


FAKES = {
    "fast": FakeSpec("fast", _torch_run("fast")),
    "slow": FakeSpec("slow", _torch_run("slow")),
    "off": FakeSpec("off", _torch_run("off", "off")),
    "boom": FakeSpec("boom", _torch_run("boom", "raise")),
}


@pytest.fixture
def sel(monkeypatch):
    """The chooser with the CPU as a measured platform, set times and the fakes named in ``sel.fakes``."""
    s = A.AUTOSELECT
    monkeypatch.setattr(s, "platforms", ("cpu",))
    monkeypatch.setattr(s, "_path", None)
    monkeypatch.setattr(s, "_path_set", True)
    monkeypatch.setattr(s, "_disk", {})
    monkeypatch.delenv(A.ENV, raising=False)
    s.times, s.timed, s.fakes = {}, [], ["slow", "fast"]

    def timer(name, fn):
        fn()
        s.timed.append((name, torch.compiler.is_compiling()))
        return s.times[name]

    monkeypatch.setattr(s, "timer", timer)
    monkeypatch.setattr(s, "candidates", lambda op_id, desc, exact=None: [
        *(FAKES[n] for n in s.fakes), *eligible(op_id, desc, exact=exact)])
    s.reset()
    ATTENTION.clear()
    RUNS.clear()
    yield s
    s.reset()
    ATTENTION.clear()


def qkv(S=20, Sk=None, B=1, H=2, Dh=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, S, H, Dh, generator=g)
    k = torch.randn(B, Sk or S, H, Dh, generator=g)
    v = torch.randn(B, Sk or S, H, Dh, generator=g)
    return q, k, v


def chosen(sel) -> str:
    (m,) = sel.buckets.values()
    return m.choice


@pytest.mark.parametrize("fast,slow", [("fast", "slow"), ("slow", "fast")])
def test_the_fastest_correct_backend_wins_and_serves_the_bucket(sel, fast, slow):
    sel.times = {fast: 1e-3, slow: 2e-3, "torch": 5e-3}
    q, k, v = qkv()
    o = attn.attention(q, k, v)
    torch.testing.assert_close(o, definition(q, k, v), atol=1e-3, rtol=0)
    assert sorted(n for n, _ in sel.timed) == ["fast", "slow", "torch"]
    assert chosen(sel) == fast
    RUNS.clear()
    attn.attention(q, k, v)  # the cached plan
    q2, k2, v2 = qkv(S=24, seed=1)  # another signature of the same bucket (Sq, Sk <= 32): no new measurement
    attn.attention(q2, k2, v2)
    assert RUNS == {fast: 2} and len(sel.timed) == 3


def test_a_new_bucket_is_measured_again(sel):
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    attn.attention(*qkv(S=20))
    attn.attention(*qkv(S=40))  # Sq, Sk -> 64: another bucket
    assert len(sel.buckets) == 2 and len(sel.timed) == 6


@pytest.mark.parametrize("bad", ["off", "boom"])
def test_a_deviating_or_raising_backend_is_rejected_once(sel, bad):
    sel.fakes = [bad, "slow", "fast"]
    sel.times = {bad: 1e-4, "fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    q, k, v = qkv()
    with pytest.warns(BackendRejectedWarning) as record:
        o = attn.attention(q, k, v)
    assert len(record) == 1 and repr(bad) in str(record[0].message)
    assert ("differs from the reference" if bad == "off" else "RuntimeError") in str(record[0].message)
    torch.testing.assert_close(o, definition(q, k, v), atol=1e-3, rtol=0)
    (m,) = sel.buckets.values()
    assert m.choice == "fast" and bad in m.rejected and bad not in m.times
    RUNS.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for s in (20, 24, 30):  # same bucket, new signatures: no warning, never the rejected backend
            attn.attention(*qkv(S=s))
    assert RUNS == {"fast": 3}


def test_no_measurement_while_tracing_and_the_static_choice_is_not_frozen(sel, monkeypatch):
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    q, k, v = qkv()
    monkeypatch.setattr(A, "is_compiling", lambda: True)
    attn.attention(q, k, v)
    assert sel.timed == [] and sel.buckets == {} and RUNS == {"slow": 1}  # the static priority: the first
    monkeypatch.setattr(A, "is_compiling", lambda: False)
    RUNS.clear()
    attn.attention(q, k, v)  # same signature: the plan was not cached, so this eager call measures
    assert chosen(sel) == "fast" and len(sel.timed) == 3


def test_under_torch_compile_tracing_never_measures(sel):
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    q, k, v = qkv()
    compiled = torch.compile(lambda q, k, v: attn.attention(q, k, v) * 1.0, backend="aot_eager", fullgraph=True)
    torch._dynamo.reset()
    o = compiled(q, k, v)
    torch.testing.assert_close(o, definition(q, k, v), atol=1e-3, rtol=0)
    # tracing used the fake implementation; the compiled graph's run called the op eagerly, which measured
    assert sel.timed and not any(tracing for _, tracing in sel.timed)
    assert chosen(sel) == "fast"


def test_the_cpu_keeps_the_static_choice_without_timing(sel, monkeypatch):
    monkeypatch.setattr(sel, "platforms", ("cuda", "hip"))
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    attn.attention(*qkv())
    assert sel.timed == [] and sel.buckets == {} and RUNS == {}  # the registered torch backend served it


def test_the_disk_cache_round_trips(sel, tmp_path, monkeypatch):
    path = tmp_path / "attention.json"
    monkeypatch.setenv(A.ENV, str(path))
    monkeypatch.setattr(sel, "_path_set", False)  # read the environment on first use
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    attn.attention(*qkv())
    data = json.loads(path.read_text())
    (key, entry), = data["entries"].items()
    assert key.startswith("cpu|torch ") and entry["choice"] == "fast"
    assert set(entry["times"]) == {"fast", "slow", "torch"}
    sel.reset()
    ATTENTION.clear()
    A.attention_autotune_cache(path)
    sel.times = {"fast": 9.0, "slow": 1e-4, "torch": 5e-3}  # would change the choice if measured again
    RUNS.clear()
    attn.attention(*qkv())
    assert len(sel.timed) == 3 and RUNS == {"fast": 1} and chosen(sel) == "fast"  # read from the file, not timed
    sel.reset()
    ATTENTION.clear()
    monkeypatch.setattr(sel, "device_name", lambda device: "another device")  # keyed by device name
    attn.attention(*qkv())
    assert len(sel.timed) == 6 and chosen(sel) == "slow"
    assert len(json.loads(path.read_text())["entries"]) == 2


@pytest.mark.parametrize("text", ["{not json", '{"format": 1, "entries": {"k": {"times": {}}}}', "[]"])
def test_a_corrupt_cache_file_is_ignored_with_a_warning(sel, tmp_path, text):
    path = tmp_path / "attention.json"
    path.write_text(text)
    with pytest.warns(UserWarning, match="ignored"):
        A.attention_autotune_cache(path)
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    attn.attention(*qkv())
    assert chosen(sel) == "fast" and len(sel.timed) == 3
    assert [e["choice"] for e in json.loads(path.read_text())["entries"].values()] == ["fast"]


def test_explain_shows_the_candidates_times_and_verdicts(sel):
    sel.fakes = ["off", "slow", "fast"]
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    q, k, v = qkv()
    before = explain(attn.attention, q, k, v)
    assert before.chosen == "torch" and "not measured yet" in str(before)
    with pytest.warns(BackendRejectedWarning):
        attn.attention(q, k, v)
    ex = explain(attn.attention, q, k, v)
    text = str(ex)
    assert ex.chosen == "fast"
    assert "  fast: 1 ms, chosen" in text and "  slow: 2 ms, slower" in text and "  torch: 5 ms, slower" in text
    assert "  off: rejected: output differs from the reference" in text
    assert "[ok] torch" in text and "[no] triton" in text  # the per-backend capability verdicts stay


@pytest.mark.parametrize("case", ["bshd", "bhsd", "kv_lens", "varlen", "gqa_lse"])
def test_the_reference_on_sliced_rows_matches_the_full_one(case):
    g = torch.Generator().manual_seed(3)
    B, S_, H, Dh = 2, 40, 2, 32
    kw: dict = {}
    layout = "bhsd" if case == "bhsd" else "bshd"
    shape = (B, H, S_, Dh) if layout == "bhsd" else (B, S_, H, Dh)
    q, k, v = (torch.randn(shape, generator=g) for _ in range(3))
    if case == "gqa_lse":
        k, v = k[:, :, :1], v[:, :, :1]
        kw["return_lse"] = True
    if case == "kv_lens":
        kw["kv_lens"] = torch.tensor([33, 12])
    if case == "varlen":
        q, k, v = (t.reshape(B * S_, H, Dh) for t in (q, k, v))
        cu = torch.tensor([0, 30, 80], dtype=torch.int32)
        kw.update(layout="thd", cu_seqlens_q=cu, cu_seqlens_k=cu, return_lse=True)
    kw.setdefault("layout", layout)
    tensors = (q, k, v, kw.get("kv_lens"), kw.get("cu_seqlens_q"), kw.get("cu_seqlens_k"), None)
    desc = ATTENTION.describe(q, k, v, kw.get("kv_lens"), kw.get("cu_seqlens_q"), kw.get("cu_seqlens_k"),
                              layout=kw["layout"], return_lse=kw.get("return_lse", False))
    geom = desc.info["geom"]
    ref = A.reference(geom, tensors, rows=4, limit=0)
    assert not ref.full and ref.o.numel() > 0
    res = definition(q, k, v, **kw)
    o, lse = res if geom.return_lse else (res, None)
    torch.testing.assert_close(ref.o, ref.pick_o(o), atol=1e-5, rtol=1e-5)
    if lse is not None:
        torch.testing.assert_close(ref.lse, ref.pick_lse(lse), atol=1e-5, rtol=1e-5)
    rows = ref.pick_o(o).shape[0 if case == "varlen" else (2 if layout == "bhsd" else 1)]
    assert rows == 8  # the first and last 4 query rows
    assert A.deviation(FAKES["off"], geom, ref, (o + 0.5, lse) if lse is not None else o + 0.5) is not None


def test_a_large_input_times_the_torch_backend_only_when_nothing_else_is_correct(sel, monkeypatch):
    monkeypatch.setattr(A, "FULL_REFERENCE_SCORES", 0)
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-4}
    attn.attention(*qkv())
    (m,) = sel.buckets.values()
    assert m.choice == "fast" and "torch" not in m.times and "not timed" in m.skipped["torch"]
    sel.reset()
    ATTENTION.clear()
    sel.fakes = ["off"]
    with pytest.warns(BackendRejectedWarning):
        attn.attention(*qkv())
    (m,) = sel.buckets.values()
    assert m.choice == "torch" and "torch" in m.times


def test_a_reference_that_raises_keeps_the_static_choice_without_warnings(sel, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("offsets the definition refuses")

    monkeypatch.setattr(A, "reference", broken)
    sel.times = {"fast": 1e-3, "slow": 2e-3, "torch": 5e-3}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        attn.attention(*qkv())
    (m,) = sel.buckets.values()
    assert m.choice == "slow" and sel.timed == [] and RUNS == {"slow": 1}
    assert "the reference raised ValueError" in m.skipped["fast"]
