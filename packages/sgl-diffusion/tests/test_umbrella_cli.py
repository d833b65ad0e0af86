"""The ``sgl-diffusion`` command: doctor (subprocess) and bench (in process, on a fake op)."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch

from sgl_diffusion import _exports, cli
from sgl_diffusion_core import (
    REGISTRY,
    Capabilities,
    Contract,
    InputDesc,
    KernelSpec,
    OpDef,
    bench,
    register,
    register_op,
)

BenchCase, tensor_bytes = bench.BenchCase, bench.tensor_bytes

FAKE_OP = "umbrellatest.fake_scale"
NO_BENCH_OP = "umbrellatest.no_bench"
FAKE_SHAPES = {"tiny": (4, 64), "small": (16, 256)}


def _describe(x: torch.Tensor) -> InputDesc:
    return InputDesc(platform=x.device.type, dtypes=(str(x.dtype).removeprefix("torch."),))


def fake_scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


# a group of cases, as a bench file names them (row_norm_bench's ``widths``)
GROUPS = {"both": ("tiny", "small")}


def fake_bench_cases(device: torch.device, dtype: torch.dtype, names: list[str] | None):
    names = [case for n in names for case in GROUPS.get(n, (n,))] if names else None
    for name in names or FAKE_SHAPES:
        if name not in FAKE_SHAPES:
            raise ValueError(f"unknown case {name!r}; known: {', '.join(FAKE_SHAPES)}")
        x = torch.randn(FAKE_SHAPES[name], device=device).to(dtype)
        out = fake_scale(x)

        def check(x=x, out=out):
            torch.testing.assert_close(fake_scale(x), x + x)

        yield BenchCase(
            name=name,
            shape=str(list(x.shape)),
            dtype=str(dtype).removeprefix("torch."),
            bytes=tensor_bytes(x, out),
            providers={"sgl_diffusion": lambda x=x: fake_scale(x), "eager": lambda x=x: x + x},
            check=check,
        )


@pytest.fixture(scope="module")
def fake_ops():
    """Register two test ops (one with a bench target, one without); remove them afterwards."""
    here = __name__
    caps = Capabilities(platforms=("cpu", "cuda", "hip"))
    for op, bench_target in ((FAKE_OP, f"{here}:fake_bench_cases"), (NO_BENCH_OP, None)):
        register_op(OpDef(op=op, distribution="sgl-diffusion", describe=f"{here}:_describe",
                          public=f"{here}:fake_scale", summary="x * 2 (umbrella test op)", bench=bench_target))
        register(KernelSpec(op=op, backend="torch", target=f"{here}:fake_scale", capabilities=caps,
                            contract=Contract.exact()))
    yield
    for op in (FAKE_OP, NO_BENCH_OP):  # the registry has no public unregister; keep it clean for other tests
        REGISTRY._ops.pop(op, None)
        REGISTRY._specs.pop(op, None)


def test_help_and_no_command(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    assert "doctor" in capsys.readouterr().out
    assert cli.main([]) == 2


def test_doctor_text(run_python):
    proc = run_python("-m", "sgl_diffusion", "doctor")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "platform" in out and "TRITON_INTERPRET" in out
    for dist in _exports.DISTRIBUTIONS:
        assert dist in out
    assert "norm.ln_modulate" in out
    assert "would choose:" in out


def test_doctor_json(run_python):
    proc = run_python("-m", "sgl_diffusion", "doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"sgl_diffusion", "python", "platform", "triton", "distributions", "ops"} <= set(report)
    assert report["platform"]["describe"]
    assert set(report["triton"]) >= {"available", "version", "interpret"}
    fly = report["flydsl"]
    assert "norm.ln_modulate/flydsl" in fly["backends"] and "not yet executed" in fly["status"]
    assert fly["available"] == (importlib.util.find_spec("flydsl") is not None)
    dists = {d["distribution"]: d for d in report["distributions"]}
    assert set(dists) == set(_exports.DISTRIBUTIONS)
    for d in dists.values():
        assert d["installed"] and d["version"] and d["error"] is None, d
    ops = {o["op"]: o for o in report["ops"]}
    ln = ops["norm.ln_modulate"]
    names = [b["backend"] for b in ln["backends"]]
    assert {"triton", "torch"} <= set(names)
    assert ln["would_choose"] in names
    assert [b["backend"] for b in ln["backends"] if b["would_choose"]] == [ln["would_choose"]]
    for b in ln["backends"]:
        assert {"priority", "contract", "platforms", "available", "reasons"} <= set(b)
    if report["platform"]["default_platform"] == "cpu":
        assert ln["would_choose"] == "torch"


def test_doctor_in_process_sees_registered_ops(fake_ops):
    report = cli.collect_doctor()
    ops = {o["op"]: o for o in report["ops"]}
    assert ops[FAKE_OP]["would_choose"] == "torch"
    assert FAKE_OP in cli.format_doctor(report)


def test_bench_fake_op(fake_ops, tmp_path, capsys):
    out = tmp_path / "bench" / "fake.json"
    rc = cli.main(["bench", "--op", "fake_scale", "--dtype", "fp32", "--cases", "tiny,small", "--rep", "3",
                   "--device", "cpu", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0
    assert f"[{FAKE_OP}] tiny" in stdout and "checking" in stdout and "timing sgl_diffusion" in stdout
    assert "speedup of ours" in stdout  # the summary table
    record = json.loads(out.read_text())
    assert record["op"] == FAKE_OP
    assert {"gpu", "device", "torch", "triton", "git_sha", "date"} <= set(record["env"])
    assert {(r["case"], r["provider"]) for r in record["rows"]} == {
        (c, p) for c in ("tiny", "small") for p in ("sgl_diffusion", "eager")
    }
    for row in record["rows"]:
        assert {"shape", "dtype", "bytes", "median_us", "gbps", "copy_gbps", "frac_of_copy", "host_us_per_call",
                "speedup_of_ours", "check"} <= set(row)
        assert row["dtype"] == "float32" and row["check"] == "passed"


def test_bench_resume(fake_ops, tmp_path, capsys):
    """``--resume`` skips the cases the record at ``--out`` holds and adds the others to it; a record of
    another op or environment is refused, and ``--resume`` needs ``--out``."""
    out = tmp_path / "fake.json"
    args = ["bench", "--op", FAKE_OP, "--dtype", "fp32", "--rep", "3", "--device", "cpu", "--out", str(out)]
    assert cli.main([*args, "--cases", "tiny"]) == 0
    first = json.loads(out.read_text())
    capsys.readouterr()
    assert cli.main([*args, "--cases", "tiny,small", "--resume"]) == 0
    assert "tiny: in the record already, skipped" in capsys.readouterr().out
    record = json.loads(out.read_text())
    assert record["rows"][:2] == first["rows"]  # the earlier rows as they were
    assert [r["case"] for r in record["rows"]] == ["tiny", "tiny", "small", "small"]
    record["env"]["git_sha"] = "0000000"
    out.write_text(json.dumps(record))
    assert cli.main([*args, "--resume"]) == 2
    assert "measured with another git_sha (0000000 there" in capsys.readouterr().err
    assert cli.main(["bench", "--op", FAKE_OP, "--resume", "--device", "cpu"]) == 2
    assert "--resume needs --out" in capsys.readouterr().err


def test_bench_case_group(fake_ops, capsys):
    """A group the bench file names (``GROUPS``) runs its cases and is no unknown case."""
    assert cli.main(["bench", "--op", FAKE_OP, "--cases", "both", "--rep", "3", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert f"[{FAKE_OP}] tiny" in out and f"[{FAKE_OP}] small" in out


def test_bench_full_op_id_and_all_cases(fake_ops, capsys):
    assert cli.main(["bench", "--op", FAKE_OP, "--rep", "3", "--device", "cpu"]) == 0
    stdout = capsys.readouterr().out
    assert "tiny" in stdout and "small" in stdout


def test_bench_usage_errors(fake_ops, capsys):
    assert cli.main(["bench", "--op", "no_such_op"]) == 2
    assert "unknown op 'no_such_op'" in capsys.readouterr().err
    assert cli.main(["bench", "--op", NO_BENCH_OP]) == 2
    assert "has no benchmark" in capsys.readouterr().err
    assert cli.main(["bench", "--op", FAKE_OP, "--cases", "nope", "--rep", "3", "--device", "cpu"]) == 2
    assert "unknown case 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", "--op", FAKE_OP, "--dtype", "int8"])
    assert info.value.code == 2


def test_resolve_op():
    ops = ["a.foo", "b.foo", "a.bar"]
    assert cli.resolve_op("a.foo", ops) == "a.foo"
    assert cli.resolve_op("bar", ops) == "a.bar"
    with pytest.raises(cli.UsageError, match="ambiguous"):
        cli.resolve_op("foo", ops)
    with pytest.raises(cli.UsageError, match="unknown op"):
        cli.resolve_op("baz", ops)


def test_summary_reports_failed_baselines():
    rows = [
        {"case": "flux", "provider": "sgl_diffusion", "median_us": 20.5, "gbps": 3000.0, "frac_of_copy": 0.8,
         "host_us_per_call": 9.1, "speedup_of_ours": 1.0},
        {"case": "flux", "provider": "torch.compile", "error": "RuntimeError: boom"},
    ]
    lines = cli.format_bench_summary(rows).splitlines()
    assert lines[0].split()[:3] == ["case", "provider", "us"]
    assert "80.0" in lines[2] and "1.00x" in lines[2]
    assert lines[3].endswith("failed: RuntimeError: boom")


def test_doctor_model_sites(capsys):
    pytest.importorskip("diffusers")
    rc = cli.main(["doctor", "--json", "--model", "SD3Transformer2DModel"])
    assert rc == 0
    report = json.loads(capsys.readouterr().out)
    sites = report["model_sites"]
    assert sites["model"] == "SD3Transformer2DModel" and sites["mounted"] > 0
    assert {s["kind"] for s in sites["sites"]} >= {"adaln_zero", "adaln_continuous"}


def test_doctor_unknown_model_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["doctor", "--model", "NotAModel"]) == 2
    err = capsys.readouterr().err
    assert "--model 'NotAModel': not a supported model" in err and "FluxTransformer2DModel" in err
    config = tmp_path / "config.json"
    config.write_text('{"_class_name": "UNet2DModel"}')
    assert cli.main(["doctor", "--model", str(tmp_path)]) == 2
    assert "names 'UNet2DModel', not a supported model" in capsys.readouterr().err


def test_bench_device_errors_are_usage_errors(fake_ops, capsys):
    """A device name torch does not know, or one this machine does not have: a message, exit 2, no traceback."""
    assert cli.main(["bench", "--op", FAKE_OP, "--device", "banana"]) == 2
    err = capsys.readouterr().err
    assert "--device 'banana' is not a torch device" in err and "Traceback" not in err
    for device in ["cuda:99"] + ([] if torch.cuda.is_available() else ["cuda"]):
        assert cli.main(["bench", "--op", FAKE_OP, "--device", device]) == 2
        err = capsys.readouterr().err
        assert f"--device {device}: " in err and "leave --device out" in err and "Traceback" not in err


def test_unknown_op_lists_close_matches(fake_ops, capsys):
    assert cli.main(["bench", "--op", "fake_scal"]) == 2
    close = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("close matches:"))
    assert FAKE_OP in close
