"""The docs site's generated pages (tools/gen_docs.py) are committed up to date, and their links hold."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import gen_docs
import workspace

REPO = workspace.ROOT
PACKAGES = workspace.discover()


def test_generated_docs_are_up_to_date() -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_package_and_op_has_its_page() -> None:
    pages = gen_docs.pages()
    for pkg in PACKAGES.values():
        assert f"packages/{pkg.dir.name}.md" in pages
    matrix = (REPO / "docs" / "selection-matrix.md").read_text()
    bench = (REPO / "docs" / "benchmarks" / "index.md").read_text()
    for png in (REPO / "docs" / "benchmarks").glob("*.png"):
        assert f"]({png.name})" in bench, f"{png.name} is not embedded in the benchmarks page"
    assert "| backend | priority | contract |" in matrix and "compiled only" in matrix


def test_package_pages_are_titled_by_distribution_and_the_umbrella_lists_its_dependencies() -> None:
    pages = gen_docs.pages()
    for pkg in PACKAGES.values():  # the site's navigation shows the title, not "Sgl diffusion rope"
        assert pages[f"packages/{pkg.dir.name}.md"]().startswith(f"---\ntitle: {pkg.dist}\n---\n"), pkg.dist
    umbrella = next(p for p in PACKAGES.values() if p.is_umbrella)
    readme = umbrella.readme.read_text()  # committed as generated: test_generated_docs_are_up_to_date
    for dep in umbrella.deps:
        if dep.extra is None:
            assert f"| `{dep.name}` | `{PACKAGES[dep.name].import_name}` |" in readme, dep.name


def test_nothing_points_outside_the_repository() -> None:
    """The design document lives in docs/design.md; no file refers to one beside the repository."""
    paths = ["README.md", "docs", "packages", "tools", "noxfile.py"]
    grep = ["git", "grep", "--untracked", "-n", "-I", "-F", "-e", "../shared", "--", *paths]
    hits = subprocess.run(grep, cwd=REPO, capture_output=True, text=True)
    assert hits.stdout == "", hits.stdout
    assert (REPO / "docs" / "design.md").is_file()


def test_link_rewriting() -> None:
    norm_like = next(p for p in PACKAGES.values() if not p.is_core and not p.is_umbrella)
    src = f"packages/{norm_like.dir.name}/README.md"
    text = (
        "See [the family](../../README.md#install), [bench](../../docs/benchmarks/README.md),\n"
        "[web](https://example.com/x.md) and [here](#usage); `[not](a/link.md)`.\n"
        "```\n[in a fence](nowhere.md)\n```\n"
    )
    out = gen_docs.rewrite_links(text, src, f"packages/{norm_like.dir.name}.md", PACKAGES)
    assert "[the family](../index.md#install)" in out
    assert "[bench](../benchmarks/index.md)" in out
    assert "[web](https://example.com/x.md)" in out and "[here](#usage)" in out
    assert "`[not](a/link.md)`" in out and "[in a fence](nowhere.md)" in out
    root = gen_docs.rewrite_links("[core](packages/sgl-diffusion-core/README.md)", "README.md", "index.md", PACKAGES)
    assert root == "[core](packages/sgl-diffusion-core.md)"


@pytest.mark.parametrize("link", ["src/secret.py", "../../../outside.md", "CHANGELOG.md"])
def test_a_link_outside_the_site_fails(link: str) -> None:
    src = "packages/sgl-diffusion-core/README.md"
    with pytest.raises(gen_docs.LinkError, match="sgl-diffusion-core/README.md"):
        gen_docs.rewrite_links(f"[x]({link})", src, "packages/sgl-diffusion-core.md", PACKAGES)


def test_check_reports_stale_pages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check on a copy of the tree: an edited README, a package page without a package; then regenerate."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for part in ("packages", "docs"):
        shutil.copytree(REPO / part, tmp_path / part, ignore=ignore)
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    assert gen_docs.main(["--check", "--root", str(tmp_path)]) == 0
    pkg = next(iter(workspace.discover(tmp_path).values()))
    pkg.readme.write_text(pkg.readme.read_text() + "\nA new paragraph.\n")
    (tmp_path / "docs" / "packages" / "sgl-diffusion-gone.md").write_text("# gone\n")
    capsys.readouterr()
    assert gen_docs.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"docs/packages/{pkg.dir.name}.md" in err and "docs/packages/sgl-diffusion-gone.md (no source" in err
    assert gen_docs.main(["--root", str(tmp_path)]) == 0
    assert "A new paragraph." in (tmp_path / "docs" / "packages" / f"{pkg.dir.name}.md").read_text()
    assert not (tmp_path / "docs" / "packages" / "sgl-diffusion-gone.md").exists()
    assert gen_docs.main(["--check", "--root", str(tmp_path)]) == 0


def test_width_sweep_renders_as_a_matrix(tmp_path: Path) -> None:
    """An ``<op>_widths`` record (``sgl-diffusion bench --cases widths``) renders as one matrix per provider of
    ours, a row per width and a column per (batch, tokens), and names the cells where ours is slower than a
    baseline; the summary counts it as DiT widths."""
    import json

    import bench_table

    rows = []
    for D, ours_us in ((1152, 10.0), (2240, 30.0)):
        for B in (1, 2):
            case = f"d{D}-b{B}-s4096"
            for prov, us in (("sgl_diffusion", ours_us), ("eager", 20.0), ("torch.compile", 15.0)):
                rows.append(
                    {
                        "case": case,
                        "shape": f"[{B}, 4096, {D}]",
                        "dtype": "bfloat16",
                        "provider": prov,
                        "median_us": us,
                        "frac_of_copy": 8.0 / us,
                        "copy_us": 8.0,
                    }
                )
    record = {
        "op": "norm.ln_modulate",
        "env": {"gpu": "GPU", "git_sha": "abc1234", "torch": "2", "triton": "3"},
        "rows": rows,
    }
    (tmp_path / "ln_modulate_widths_h100.json").write_text(json.dumps(record))
    page = bench_table.readme(tmp_path, lambda op, prov: "exact")
    assert "### ln_modulate at every DiT width (norm, h100)" in page
    assert "| D | B=1, 4096 tokens | B=2, 4096 tokens |" in page
    assert "| 1152 | 80.0% · 2.00x · 1.50x | 80.0% · 2.00x · 1.50x |" in page
    assert "| 2240 | 26.7% · 0.67x · 0.50x | 26.7% · 0.67x · 0.50x |" in page
    assert "Lowest: 26.7% of copy (D=2240, B=1, 4096 tokens)" in page
    assert "Slower than eager or `torch.compile` at 2: D=2240, B=1, 4096 tokens; D=2240, B=2, 4096 tokens." in page
    assert "| `ln_modulate` | norm | H100 | 4 DiT widths |" in bench_table.summary(tmp_path)
    assert "Measured before" not in page
    record["note"] = "Measured before a rule changed."  # a record's note is shown under its environment line
    (tmp_path / "ln_modulate_widths_h100.json").write_text(json.dumps(record))
    page = bench_table.readme(tmp_path, lambda op, prov: "exact")
    assert "\n\nMeasured before a rule changed.\n\n" in page


def test_a_domain_readme_shows_its_own_records(tmp_path: Path) -> None:
    """A domain package's README carries its domain's rows of the benchmark summary, read from the
    records (no other domain's), and one without the markers is refused by name."""
    import json

    import bench_table

    def record(op: str, us: float) -> dict:
        times = (("sgl_diffusion", us), ("torch.compile", 2 * us))
        rows = [
            {
                "case": "c",
                "shape": "[1]",
                "dtype": "bfloat16",
                "provider": p,
                "median_us": t,
                "frac_of_copy": 8.0 / t,
                "copy_us": 8.0,
            }
            for p, t in times
        ]
        return {"op": op, "env": {"gpu": "GPU", "git_sha": "abc1234", "torch": "2", "triton": "3"}, "rows": rows}

    (tmp_path / "rms_norm_bench_h200.json").write_text(json.dumps(record("norm.rms_norm", 10.0)))
    (tmp_path / "silu_bench_h200.json").write_text(json.dumps(record("activation.silu", 16.0)))
    norm = bench_table.summary(tmp_path, lambda op, prov: "exact", domain="norm")
    assert "| `rms_norm` | norm | H200 | 1 | 80.0% | 2.00x | exact |" in norm
    assert "silu" not in norm and "TFLOP/s" not in norm
    both = bench_table.summary(tmp_path, lambda op, prov: "exact")
    assert "`rms_norm`" in both and "| `silu` | activation | H200 | 1 | 50.0% | 2.00x | exact |" in both
    pkg = PACKAGES["sgl-diffusion-norm"]
    assert pkg.short in gen_docs.benchmarked_domains(REPO)
    readme = pkg.readme.read_text()
    assert gen_docs.BENCH_BEGIN in readme and "| `ln_modulate` | norm |" in readme
    bare = tmp_path / "pkg"
    shutil.copytree(pkg.dir, bare, ignore=shutil.ignore_patterns("src", "tests", "benchmarks"))
    (bare / "README.md").write_text("# sgl-diffusion-norm\n")
    moved = workspace.Package(pkg.dist, bare, pkg.import_name, pkg.version, pkg.deps)
    with pytest.raises(gen_docs.MarkerError, match="README.md: expected one"):
        gen_docs.package_readme_text(moved, tmp_path)
