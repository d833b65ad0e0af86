"""``bench.sweep``: one row per configuration that runs (failures reported and skipped), the
check's note kept, the first configuration marked the default; ``sweep_summary`` names the best."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from sgl_diffusion_core import bench


@dataclass(frozen=True)
class Cfg:
    block: int


def test_sweep_rows_failures_and_summary():
    x = torch.randn(64)
    seen = []

    def run_for(cfg):
        if cfg.block == 3:
            raise RuntimeError("the compiler rejects it")
        return lambda: x * cfg.block

    rows = bench.sweep("case", [Cfg(1), Cfg(2), Cfg(3)], run_for, 2 * x.numel() * 4, torch.device("cpu"),
                       check=lambda out: None if torch.equal(out, x) else "differs", progress=seen.append)
    assert [(r["block"], r["default"], r["note"]) for r in rows] == [(1, True, None), (2, False, "differs")]
    assert all(r["median_us"] > 0 and r["frac_of_copy"] > 0 for r in rows)
    assert any("failed RuntimeError" in line for line in seen)
    (line,) = bench.sweep_summary(rows)
    assert line.startswith("case: default ") and "'block':" in line


def test_sweep_configs_take_turns():
    """``rounds``: the configurations that built are timed in turn in every round; one that fails while
    timed is reported and left out, the others keep their rows."""
    x = torch.randn(64)
    order, seen = [], []

    def run_for(cfg):
        def run():
            order.append(cfg.block)
            if cfg.block == 2 and order.count(2) > 6:  # its check and first round pass, a later call fails
                raise RuntimeError("illegal memory access")
            return x
        return run

    rows = bench.sweep("case", [Cfg(1), Cfg(2), Cfg(3)], run_for, 2 * x.numel() * 4, torch.device("cpu"),
                       rep=90, rounds=3, progress=seen.append)
    timed = order[3:]  # after each configuration's checked first call
    turns = [b for i, b in enumerate(timed) if i == 0 or timed[i - 1] != b]
    assert turns[:4] == [1, 2, 3, 1] and turns.count(1) == 3 == turns.count(3)
    assert [r["block"] for r in rows] == [1, 3]
    assert any("failed RuntimeError: illegal memory access" in line for line in seen)


def test_sweep_labels_plain_dict_configs():
    """Build-choice dicts are named ``k=v,..`` in rows and progress lines, the empty one ``default``; a
    string names itself, anything else its ``repr``."""
    x = torch.randn(64)
    seen = []
    rows = bench.sweep("case", [{}, {"ROWS": 2, "UNROLL": 4}], lambda cfg: (lambda: x * 2), 2 * x.numel() * 4,
                       torch.device("cpu"), progress=seen.append)
    assert [r["config"] for r in rows] == ["default", "ROWS=2,UNROLL=4"]
    assert seen[0].startswith("case default default:") and seen[1].startswith("case ROWS=2,UNROLL=4:")
    assert bench.config_label(("tiles", 1024)) == "('tiles', 1024)"
    assert bench.config_label("torch.compile") == "torch.compile"


def test_flush_mode_is_checked_and_recorded(monkeypatch):
    """``bench.FLUSH`` (how ``time_gpu`` flushes L2: reading or writing a buffer) is recorded in every
    record's environment, and a mode it does not know is refused on any device."""
    assert bench.environment(torch.device("cpu"))["l2_flush"] == bench.FLUSH == "read"
    monkeypatch.setattr(bench, "FLUSH", "zero")
    assert bench.environment(torch.device("cpu"))["l2_flush"] == "zero"
    monkeypatch.setattr(bench, "FLUSH", "evict")
    with pytest.raises(ValueError, match="FLUSH"):
        bench.time_gpu(lambda: None, torch.device("cpu"))


def test_sleep_ahead_is_bounded():
    """The sleep enqueued ahead of timed calls: cycles for the host loop's time, never negative, at most 2 s."""
    assert bench._sleep_cycles(0) == 0
    assert bench._sleep_cycles(-5.0) == 0
    assert bench._sleep_cycles(1000.0) == 1000 * bench._CYCLES_PER_US
    assert bench._sleep_cycles(1e12) == int(2e6 * bench._CYCLES_PER_US)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_time_gpu_does_not_count_the_host():
    """A call whose host side (300 us of Python) outlasts its GPU work (one small add) is timed at its
    GPU time: the queue is kept ahead of the host, so the call's kernel follows its start event."""
    import time

    dev = torch.device("cuda")
    x = torch.randn(1 << 16, device=dev)

    def slow_host():
        t = time.perf_counter()
        while time.perf_counter() - t < 300e-6:
            pass
        return x + 1

    fast = bench.time_gpu(lambda: x + 1, dev, rep=30)
    slow = bench.time_gpu(slow_host, dev, rep=30)
    assert slow.median_ms < max(4 * fast.median_ms, 0.05), (slow, fast)
