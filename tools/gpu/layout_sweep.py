"""Old vs new launches of the layout ops changed on branch layout-perf, at the bench shapes (GPU).

joint_qkv_cat and joint_split (``layout_bench.JOINT``: FLUX, SD3.5 Large, Qwen-Image) and
nearest_upsample (``layout_bench.UPSAMPLE``, contiguous and channels_last):

- ``old``: the previous default (joint: the permutation copy, one launch per part, views
  sliced per call; upsample: one program per output row tile);
- ``new``: the current default (joint: one launch of the contiguous-rows kernel; upsample:
  input tiles replicated by one program), then a few tiles around it.

Each row is a full call of the backend (allocation and host work included, as the op runs
in eager mode), timed with CUDA events after an L2 flush, as % of a same-run copy of the
same bytes; every output is compared with the eager chain (``torch.equal``) before timing.
joint_qkv_cat also runs with image q, k, v as views of a fused projection (the rows kernel
by rows rather than flat). A host time per call is printed for the old and new default
(the bench's timing loop includes host gaps once a call costs more host time than the
flush hides). Budget: well under 120 s on an H200.

Usage: ``python3 tools/gpu/layout_sweep.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import torch

from sgl_diffusion_core import bench, describe, resolve_target

_PKG = "sgl_diffusion_layout"
CopyConfig = resolve_target(f"{_PKG}.copy_triton:CopyConfig")
RowsConfig = resolve_target(f"{_PKG}.copy_triton:RowsConfig")
UpsampleConfig = resolve_target(f"{_PKG}.upsample_triton:UpsampleConfig")
cat = resolve_target(f"{_PKG}.joint_triton:joint_qkv_cat")
split = resolve_target(f"{_PKG}.joint_triton:joint_split")
upsample = resolve_target(f"{_PKG}.upsample_triton:nearest_upsample")
JOINT = resolve_target(f"{_PKG}.layout_bench:JOINT")
UPSAMPLE = resolve_target(f"{_PKG}.layout_bench:UPSAMPLE")
cat_ref = resolve_target(f"{_PKG}.joint_api:joint_qkv_cat_reference")
split_ref = resolve_target(f"{_PKG}.joint_api:joint_split_reference")


def _old_copy(M: int, N: int, R2: int) -> object:
    return CopyConfig.for_permute(R2, M, N, 2, "cuda")


def _rows_variants(K: int, flat: bool) -> list:
    """A few tiles of the rows kernel around its default: 8 and 32 KB, a half-size unit, 4 warps."""
    base = RowsConfig.from_heuristic(K, flat, 2, "cuda")
    out = [
        RowsConfig(br=max(1, base.br // 2), bk=base.bk, num_warps=base.num_warps),
        RowsConfig(br=base.br * 2, bk=base.bk, num_warps=base.num_warps),
        RowsConfig(br=base.br, bk=base.bk, num_warps=4),
    ]
    if base.bk >= 32:
        out.append(RowsConfig(br=base.br * 2, bk=base.bk // 2, num_warps=base.num_warps))
    return out


def _check(want):
    def check(got):
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            if not torch.equal(g, w):
                return "MISMATCH with the eager chain"
        return None

    return check


def _host_us(fn, calls: int = 200) -> float:
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e7))  # the GPU stays busy: only host time is measured
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def _rand(shape, device, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, device=device, dtype=torch.bfloat16, generator=g)


def _joint_cases(device: torch.device) -> list[dict]:
    rows = []
    for name, (B, Si, St, H, Dh, _) in JOINT.items():
        K = H * Dh
        txt = [_rand((B, St, H, Dh), device, s) for s in range(3)]
        for img_view in (False, True):
            if img_view:
                proj = _rand((B, Si, 3, H, Dh), device, 7)
                img = [proj[:, :, j] for j in range(3)]
            else:
                img = [_rand((B, Si, H, Dh), device, 3 + s) for s in range(3)]
            args = (*img, *txt, True)
            geom = describe("layout.joint_qkv_cat", *args).info["geom"]
            nbytes = 2 * bench.tensor_bytes(*img, *txt)
            configs = [_old_copy(H, Dh, Si), None, *_rows_variants(K, not img_view)]
            case = f"joint_qkv_cat/{name}" + ("/img-view" if img_view else "")

            def run_for(cfg, args=args, geom=geom):
                return lambda: cat(*args, geom=geom, config=cfg)

            rows += _sweep(case, configs, run_for, nbytes, device, _check(cat_ref(*img, *txt)))
        out = _rand((B, St + Si, H, Dh), device, 9)
        sargs = (out, St, Si, True, True)
        sgeom = describe("layout.joint_split", *sargs).info["geom"]
        configs = [_old_copy(H, Dh, Si), None, *_rows_variants(K, True)]

        def run_split(cfg, sargs=sargs, sgeom=sgeom):
            return lambda: split(*sargs, geom=sgeom, config=cfg)

        rows += _sweep(
            f"joint_split/{name}",
            configs,
            run_split,
            2 * bench.tensor_bytes(out),
            device,
            _check(split_ref(out, St, Si, copy=True)),
        )
    return rows


def _upsample_cases(device: torch.device) -> list[dict]:
    rows = []
    for name, (shape, sf) in UPSAMPLE.items():
        for fmt in ("contiguous", "channels_last"):
            mf = (
                {4: torch.channels_last, 5: torch.channels_last_3d}[len(shape)]
                if fmt == "channels_last"
                else torch.contiguous_format
            )
            x = _rand(shape, device).contiguous(memory_format=mf)
            geom = describe("layout.nearest_upsample", x, sf, "nearest-exact").info["geom"]
            _, _, sizes, _, factors = geom
            A, N = sizes[3], sizes[4]
            new = UpsampleConfig.from_heuristic(A, N, factors, 2, "cuda")
            old = UpsampleConfig.from_heuristic(A, N, factors, 2, "cuda", replicate=False)
            configs = [
                old,
                None,
                UpsampleConfig(ba=max(1, new.ba // 2), bn=new.bn, num_warps=new.num_warps),
                UpsampleConfig(ba=new.ba * 2, bn=new.bn, num_warps=new.num_warps),
                UpsampleConfig(ba=new.ba, bn=new.bn, num_warps=4 if new.num_warps == 8 else 8),
            ]
            want = torch.nn.functional.interpolate(x, scale_factor=sf, mode="nearest-exact")
            n_out = want.numel()

            def run_for(cfg, x=x, sf=sf, geom=geom):
                return lambda: upsample(x, sf, "nearest-exact", geom=geom, config=cfg)

            rows += _sweep(
                f"nearest_upsample/{name}-{fmt}", configs, run_for, (x.numel() + n_out) * 2, device, _check(want)
            )
            del want
    return rows


def _sweep(case, configs, run_for, nbytes, device, check) -> list[dict]:
    """``bench.sweep`` with configs[0] the old default and ``None`` the new one (shown as "new"),
    plus the host time of both defaults."""
    labelled = [_Label("old", configs[0]), _Label("new", None), *(_Label("tile", c) for c in configs[2:])]
    rows = bench.sweep(case, labelled, lambda lab: run_for(lab.config), nbytes, device, check=check, rep=30)
    for r in rows:
        r["default"] = r.get("variant") == "new"
    for lab in labelled[:2]:
        h = _host_us(run_for(lab.config))
        print(f"{case} {lab.variant}: host {h:.1f} us/call", flush=True)
        for r in rows:
            if r.get("variant") == lab.variant:
                r["host_us_per_call"] = h
    return rows


@dataclass(frozen=True)
class _Label:
    """A configuration with its role ("old", "new" default, "tile"); ``bench.sweep`` records both."""

    variant: str
    config: Any

    def __repr__(self) -> str:
        return f"{self.variant}:{self.config!r}"


def main(path: str) -> None:
    device = torch.device("cuda")
    t0 = time.perf_counter()
    rows = _joint_cases(device)
    print(f"joint ops done in {time.perf_counter() - t0:.0f} s", flush=True)
    rows += _upsample_cases(device)
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)
    print("\n".join(bench.sweep_summary(rows)))
    for case in dict.fromkeys(r["case"] for r in rows):
        by = {r.get("variant"): r for r in rows if r["case"] == case}
        if "old" in by and "new" in by:
            print(
                f"{case}: old {100 * by['old']['frac_of_copy']:.1f}% -> new {100 * by['new']['frac_of_copy']:.1f}% "
                f"of copy"
            )
    print(f"total {time.perf_counter() - t0:.0f} s -> {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "layout_sweep.json")
