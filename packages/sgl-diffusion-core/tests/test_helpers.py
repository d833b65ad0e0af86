"""Test helpers, bench helpers, platform, plan cache, launch heuristics."""

from __future__ import annotations

import json

import pytest
import torch

from sgl_diffusion_core import (
    PlanCache,
    RowConfig,
    TileConfig,
    UnsupportedInputError,
    bench,
    machine,
    next_pow2,
    register_custom_op,
    tensor_platform,
    testing,
    warps_for,
)


def test_assert_exact_reports_worst_coordinates():
    a = torch.zeros(3, 4)
    b = a.clone()
    b[1, 2] = 5.0
    b[2, 3] = 1.0
    with pytest.raises(AssertionError) as info:
        testing.assert_exact(a, b)
    msg = str(info.value)
    assert "2 of 12 elements differ" in msg and "at (1, 2)" in msg
    assert msg.index("(1, 2)") < msg.index("(2, 3)")  # worst first
    testing.assert_exact(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    with pytest.raises(AssertionError, match="dtype mismatch"):
        testing.assert_exact(a, a.double())
    with pytest.raises(AssertionError, match="shape mismatch"):
        testing.assert_exact(a, a[:2])


def test_assert_close_uses_the_table():
    e = torch.tensor([1.0, 2.0, 100.0], dtype=torch.bfloat16)
    testing.assert_close(e, e)
    atol, rtol = testing.TOLERANCES["bfloat16"]
    bump = torch.tensor([0.0, 0.0, 100.0 * rtol * 4], dtype=torch.float32)
    with pytest.raises(AssertionError, match="at \\(2,\\)"):
        testing.assert_close((e.float() + bump).to(torch.bfloat16), e)
    with pytest.raises(AssertionError, match="not close"):
        testing.assert_close(torch.tensor([float("nan")]), torch.tensor([1.0]))
    testing.assert_close(torch.tensor([1.0 + 1e-7]), torch.tensor([1.0]))


def test_platform():
    assert tensor_platform(torch.device("cpu")) == "cpu"
    m = machine()
    assert m is machine()  # cached
    assert m.platform in ("cuda", "hip", "cpu", "mps", "xpu")
    assert m.torch_version == torch.__version__ and isinstance(m.describe(), str)


def test_plan_cache_bounded():
    c = PlanCache(limit=2)
    c.put(("a",), len)
    c.put(("b",), len)
    assert c.get(("a",)) is len
    c.put(("c",), len)
    assert len(c) == 1 and c.get(("a",)) is None


@pytest.mark.parametrize("D", [1, 7, 1000, 3072, 5120, 16384])
@pytest.mark.parametrize("elem", [2, 4])
@pytest.mark.parametrize("plat", ["cuda", "hip"])
def test_row_config_covers_the_row(D, elem, plat):
    for rows in (1, 4608, 75600):
        cfg = RowConfig.from_heuristic(D, elem, plat, n_rows=rows)
        assert cfg.block == next_pow2(cfg.block) and cfg.block * cfg.chunks >= D
        assert cfg.block * (cfg.chunks - 1) < D  # no empty chunk
        assert 1 <= cfg.num_warps <= 16


def test_tile_grid_counts_tiles_and_refuses_past_the_launch_limit():
    cfg = TileConfig(block=2048, num_warps=2)
    assert cfg.grid(75600, 5120) == ((75600 * 3,), 3)  # the last tile partly masked
    assert cfg.grid(4608, 2048) == ((4608,), 1)
    assert cfg.grid(0, 5120) == ((0,), 3)
    assert cfg.grid(2**31 - 1, 16) == ((2**31 - 1,), 1)  # int32 program ids: the last one fits
    with pytest.raises(UnsupportedInputError, match=r"1073741824 rows x 3 column tiles exceed the launch grid"):
        cfg.grid(2**30, 5120)


def test_bench_helpers_on_cpu(tmp_path):
    x = torch.ones(4, 8, dtype=torch.bfloat16)
    assert bench.tensor_bytes(x, None, x) == 2 * 64
    t = bench.time_host(lambda: x + 1, rep=5)
    assert 0 < t.p20_ms <= t.median_ms <= t.p80_ms
    case = bench.BenchCase(name="tiny", shape="[4, 8]", dtype="bfloat16", bytes=128,
                           providers={"sgl_diffusion": lambda: x * 2, "eager": lambda: x * 2},
                           check=lambda: None)
    rec = bench.run_cases("test.tiny", [case], torch.device("cpu"), progress=lambda s: None, rep=10)
    path = rec.write(tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert {"gpu", "torch", "triton", "git_sha", "date"} <= set(data["env"])
    assert [r["provider"] for r in data["rows"]] == ["sgl_diffusion", "eager"]
    assert all("frac_of_copy" in r and r["check"] == "passed" for r in data["rows"])


def test_bench_providers_take_turns():
    """``rounds``: each provider is timed in every round, one after another (a, b, a, b, ...), a row's
    figures are over all its calls and say how many rounds; a provider that fails in a later round is
    reported as failed, the others keep their rows; fewer than one round is refused."""
    x = torch.ones(4, 8)
    order = []

    def provider(name, fail_on=None):
        def fn():
            order.append(name)
            if fail_on is not None and order.count(name) >= fail_on:
                raise RuntimeError("out of memory")
            return x * 2
        return fn

    case = bench.BenchCase(name="tiny", shape="[4, 8]", dtype="float32", bytes=128,
                           providers={"sgl_diffusion": provider("a"), "eager": provider("b"),
                                      "torch.compile": provider("c", fail_on=8)})
    rec = bench.run_cases("test.tiny", [case], torch.device("cpu"), progress=lambda s: None, rep=30, rounds=3)
    turns = [n for i, n in enumerate(order) if i == 0 or order[i - 1] != n]
    assert turns[:5] == ["a", "b", "c", "a", "b"] and turns.count("a") == 3 == turns.count("b")
    rows = {r["provider"]: r for r in rec.rows}
    assert rows["sgl_diffusion"]["rounds"] == 3 == rows["eager"]["rounds"] and "median_us" in rows["eager"]
    assert "out of memory" in rows["torch.compile"]["error"] and "median_us" not in rows["torch.compile"]
    with pytest.raises(ValueError, match="rounds"):
        bench.run_cases("test.tiny", [case], torch.device("cpu"), progress=lambda s: None, rounds=0)


def test_bench_record_written_after_each_case(tmp_path):
    """``on_case`` sees the record after every case, so a run cut short (a time limit) keeps what it finished."""
    x = torch.ones(4, 8)

    def cases():
        for name in ("a", "b"):
            yield bench.BenchCase(name=name, shape="[4, 8]", dtype="float32", bytes=128,
                                  providers={"sgl_diffusion": lambda: x * 2})
        raise KeyboardInterrupt  # the run is stopped before a third case

    out = tmp_path / "partial.json"
    seen = []

    def write(rec):
        seen.append([r["case"] for r in rec.rows])
        rec.write(out)

    with pytest.raises(KeyboardInterrupt):
        bench.run_cases("test.tiny", cases(), torch.device("cpu"), progress=lambda s: None, rep=3, on_case=write)
    assert seen == [["a"], ["a", "b"]]
    assert [r["case"] for r in json.loads(out.read_text())["rows"]] == ["a", "b"]


def test_register_custom_op_with_fake_compiles():
    def impl(x: torch.Tensor) -> torch.Tensor:
        return x * 3

    def fake(x):
        return torch.empty_like(x)

    op = register_custom_op("test_triple", impl, fake, schema="(Tensor x) -> Tensor")
    assert register_custom_op("test_triple", impl, fake, schema="(Tensor x) -> Tensor") is op
    torch.library.opcheck(torch.ops.sgl_diffusion.test_triple.default, (torch.randn(3),))
    f = torch.compile(lambda x: torch.ops.sgl_diffusion.test_triple(x) + 1, fullgraph=True, backend="aot_eager")
    testing.assert_exact(f(torch.ones(2)), torch.full((2,), 4.0))


def test_warps_for_clamps_to_one_and_max():
    """The warp count of a tile: work over (per-thread work x warp size), between 1 and max_warps."""
    assert warps_for(8192, 16 * 4, 32) == 4  # 8 KB, four 16-byte accesses per thread
    assert warps_for(8192, 16 * 4, 64) == 2  # ROCm's 64-thread warps
    assert warps_for(64, 16, 32) == 1  # less than a warp of work: one warp
    assert warps_for(1 << 20, 16, 32) == 8 and warps_for(1 << 20, 16, 32, max_warps=16) == 16
