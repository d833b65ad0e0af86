"""The VAE norms' launch rules (the default, v1, stream and variants) at their bench shapes (GPU, < 330 s).

``channel_rms_norm`` (bytes: read x + write y) at the cases of ``channel_rms_norm_bench`` and
``group_norm_silu`` (bytes: the two-pass bound, 3 * x) at the cases of ``group_norm_silu_bench``,
bf16, contiguous and channels_last_3d. Per case: the v1 rule (the session-3 kernels), the stream
rule (the default) and a few stream variants around it (one tile ahead instead of two, half the
tile, twice the programs); time with CUDA events and an L2 flush, % of a same-run copy of the
same bytes (``sgl_diffusion_core.bench.sweep``). Every variant's output is checked against the
fp32 reference chain (the ``torch`` backend) with the triton spec's declared tolerance; a
mismatch is recorded in the row's ``note``, listed at the end, and makes the exit status 1.
Configurations left when the time budget (290 s) runs out are skipped and listed.

Usage: ``python3 tools/gpu/vae_norm_sweep.py OUT.json [CASES]`` (PYTHONPATH holding packages/*/src;
CASES: a comma-separated subset such as ``channel_rms_norm/c96,group_norm_silu/c96-cl``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time

import torch

from sgl_diffusion_core import REGISTRY, bench, describe, resolve_target

# backend internals, loaded like the registry loads targets
_CH = "sgl_diffusion_norm.channel_rms_norm_triton"
_GN = "sgl_diffusion_norm.group_norm_silu_triton"
BUDGET_S = 290.0
T0 = time.perf_counter()
SKIPPED: list[str] = []
FAILED: list[str] = []


def _elapsed() -> float:
    return time.perf_counter() - T0


def _tolerance(op: str, dtype: torch.dtype) -> tuple[float, float]:
    spec = next(s for s in REGISTRY.specs(op) if s.backend == "triton")
    return spec.contract.tolerance(dtype)


def _checker(case: str, ref: torch.Tensor, op: str):
    """``|out - ref| <= atol + rtol * |ref|`` on the GPU (``testing.assert_close`` copies to the
    host in fp64: seconds per check at these sizes), NaN / inf counted as failures."""
    atol, rtol = _tolerance(op, ref.dtype)
    ref32 = ref.float()

    def check(out: torch.Tensor) -> str | None:
        problems = []
        if out.stride() != ref.stride():
            problems.append(f"strides {out.stride()} != reference {ref.stride()}")
        err = (out.float() - ref32).abs()
        bad = ~(err <= atol + rtol * ref32.abs())
        n_bad = int(bad.sum())
        if n_bad:
            i = int(torch.where(bad, err.nan_to_num(float("inf")), 0.0).flatten().argmax())
            problems.append(
                f"{n_bad} of {out.numel()} elements not within atol={atol:g} rtol={rtol:g} of the fp32 "
                f"chain; worst: {out.flatten()[i].item()!r} vs {ref.flatten()[i].item()!r}"
            )
        del err, bad
        if problems:
            note = "FAILED: " + "; ".join(problems)
            FAILED.append(f"{case}: {note}")
            return note
        return None

    return check


def _budgeted(case: str, configs: list, run_for):
    """``run_for`` that refuses (skips) every configuration past the first two (the new and the v1
    rule) once the time budget is spent; ``bench.sweep`` reports the refusal and goes on."""
    keep = configs[:2]

    def run(cfg):
        if cfg not in keep and _elapsed() > BUDGET_S:
            SKIPPED.append(f"{case} {cfg}")
            raise TimeoutError(f"skipped: past the {BUDGET_S:.0f} s budget")
        return run_for(cfg)

    return run


def _channel_targets():
    """channel_rms_norm's config class, kernel launch, bench SHAPES / make_inputs and reference."""
    return (resolve_target(f"{_CH}:ChannelConfig"), resolve_target(f"{_CH}:channel_rms_norm"),
            resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES"),
            resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:make_inputs"),
            resolve_target("sgl_diffusion_norm:channel_rms_norm_reference"))


def channel_rms_norm_rows(device: torch.device, only: set[str] | None = None) -> list[dict]:
    cfg_cls, launch, shapes, make_inputs, reference = _channel_targets()
    rows = []
    for name in ("c96", "c96-cl", "c384", "c384-cl", "c192-cl", "c192"):
        if only is not None and f"channel_rms_norm/{name}" not in only:
            continue
        shape, cl = shapes[name]
        print(f"[{_elapsed():5.1f}s] channel_rms_norm {name} {list(shape)}", flush=True)
        x, gamma, bias = make_inputs(shape, cl, torch.bfloat16, device)
        geom = describe("norm.channel_rms_norm", x, gamma, bias).info["geom"]
        C = shape[1]
        default = cfg_cls.from_heuristic(C, 2, cl, "cuda")  # channels_last: the rows kernel
        v1 = cfg_cls.from_heuristic(C, 2, cl, "cuda", rule="v1")
        stream = cfg_cls.from_heuristic(C, 2, cl, "cuda", rule="stream")
        # the default with SiLU's fast forms (triton_math.silu); contiguous x: v1 tiles with longer
        # per-channel runs; channels_last: the rows kernel at other positions per program x warps
        configs = [default, v1, stream, dataclasses.replace(default, fast=not default.fast)]
        if cl:
            for r in (8, 16, 32, 64):
                for w in (1, 2, 4):
                    configs.append(dataclasses.replace(default, block_p=r, rows=r, num_warps=w))
        else:  # one whole-C register tile; other chunkings
            full = 1 << (C - 1).bit_length()
            tiles = ((32, 128, 8), (64, 64, 8), (128, 32, 8), (full, 4096 // full, 8), (full, 2048 // full, 4))
            for bc, bp, w in tiles:
                configs.append(cfg_cls(block_c=bc, block_p=bp, chunks=-(-C // bc), num_warps=w))
            # session 8 run 3: fewer warps per slab with SiLU's fast forms (C = 96: 64 x 64 x 4 warps
            # 77.3%, adopted as the slab rule; vae_norm_sweep_s8_contig_h200.json). Run 5 swept the
            # chunk loops software-pipelined (46-63%, rejected and reverted:
            # vae_norm_sweep_s8_stages_rejected_h200.json)
            for bc, bp, w in ((32, 128, 4), (32, 128, 2), (64, 64, 4), (64, 64, 2), (128, 32, 4), (32, 64, 2),
                              (16, 128, 2), (32, 256, 4)):
                if bc * bp // (32 * w) > 64 or bc > full:
                    continue
                configs.append(cfg_cls(block_c=bc, block_p=bp, chunks=-(-C // bc), num_warps=w, fast=None))
            # session 9 run 6: the output pass over the chunks last to first (REVERSE) measured 77.3 / 62.6-66.0%
            # against 77.1 / 66.1% at C = 96 / 384 (vae_norm_sweep_s9_reverse_rejected_h200.json): reverted
            # session 10: the output pass prefetching the next chunk; the slab held in registers (2-4 chunks)
            for bc, bp, w in ((128, 32, 8), (64, 64, 8), (128, 32, 4), (64, 64, 4), (32, 128, 4), (64, 32, 4)):
                if bc <= full and bc < C:
                    configs.append(cfg_cls(block_c=bc, block_p=bp, chunks=-(-C // bc), num_warps=w, fast=None,
                                           prefetch=True))
            for bc, bp, w in ((128, 32, 8), (128, 64, 8), (128, 64, 16), (128, 128, 16), (64, 64, 4), (32, 128, 4),
                              (32, 128, 8), (32, 256, 8), (64, 128, 8), (32, 64, 2), (64, 64, 8)):
                if bc <= full and 2 <= -(-C // bc) <= 4:
                    configs.append(cfg_cls(block_c=bc, block_p=bp, chunks=-(-C // bc), num_warps=w, fast=None,
                                           hold=True))
            # session 10 run 5: the defaults under a register cap (maxnreg 80 / 96; C = 384's hold kernel
            # holds 121 registers, two 8-warp programs per SM, 80 fit three) measured 74.8 / 81.7% at
            # C = 384 against 81.9%, 69.3 / 92.4% at C = 96 against 92.2%
            # (vae_norm_sweep_s10e_maxnreg_rejected_h200.json): reverted. Run 6: fewer instructions in
            # the same kernels (row pointers once per program, PTX widening of the held values, PTX's
            # approximate sqrt / reciprocal for the inverse norm; sm_90 1848 -> 1632 per thread at
            # C = 384) measured 90.4 / 81.0% against 92.2 / 81.9% at C = 96 / 384
            # (vae_norm_sweep_s10f_fewer_instr_rejected_h200.json): reverted
            # session 12 run 2: the stream kernel with its tiles held raw (widened by conversion for
            # the statistics, through the bits for the output; sm_90 at C = 384: 64 positions x 16
            # warps one tile ahead 128 registers, 32 x 16 two ahead 112, where the kernel as it is
            # spills) over 64 / 32 positions, one or two programs per SM, measured 43.4-57.1% against
            # the hold rule's 83.1% (vae_norm_sweep_s12_stream_rejected_h200.json): reverted
        configs = list(dict.fromkeys(configs))
        ref = reference(x, gamma, bias, silu=True)

        def run_for(cfg, x=x, gamma=gamma, bias=bias, geom=geom):
            return lambda: launch(x, gamma, bias, silu=True, geom=geom, config=cfg)

        case = f"channel_rms_norm/{name}"
        rows += bench.sweep(
            case,
            configs,
            _budgeted(case, configs, run_for),
            2 * bench.tensor_bytes(x),
            device,
            check=_checker(case, ref, "norm.channel_rms_norm"),
        )
        del x, gamma, bias, ref
        torch.cuda.empty_cache()
    return rows


def channel_case_sweep(path: str, names, configs_for, device: torch.device, dtype: torch.dtype = torch.bfloat16,
                       launch_other=None) -> int:
    """The sweep loop of the channel_rms_norm probes (``channel_cluster_sweep.py``,
    ``channel_cols_probe.py``): at each ``channel_rms_norm_bench`` case in ``names`` (SiLU and bias),
    time ``configs_for(C)`` with ``bench.sweep`` against a same-run copy, each output checked as
    here; a configuration that is not a ``ChannelConfig`` runs ``launch_other(cfg, x, gamma, bias)``.
    Writes the rows as JSON to ``path``, prints the summary and any failure; exit status 1 on one."""
    cfg_cls, launch, shapes, make_inputs, reference = _channel_targets()
    rows = []
    for name in names:
        shape, cl = shapes[name]
        x, gamma, bias = make_inputs(shape, cl, dtype, device)
        geom = describe("norm.channel_rms_norm", x, gamma, bias).info["geom"]
        ref = reference(x, gamma, bias, silu=True)
        configs = configs_for(shape[1])

        def run_for(cfg, x=x, gamma=gamma, bias=bias, geom=geom):
            if not isinstance(cfg, cfg_cls):
                return lambda: launch_other(cfg, x, gamma, bias)
            return lambda: launch(x, gamma, bias, silu=True, geom=geom, config=cfg)

        case = f"channel_rms_norm/{name}"
        rows += bench.sweep(case, configs, _budgeted(case, configs, run_for), 2 * bench.tensor_bytes(x), device,
                            check=_checker(case, ref, "norm.channel_rms_norm"))
        del x, gamma, bias, ref
        torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows, "failed": FAILED, "skipped": SKIPPED}, f,
                  indent=1, default=str)
    print("\n".join(bench.sweep_summary(rows)))
    for line in FAILED:
        print(line)
    return 1 if FAILED else 0


def group_norm_silu_rows(device: torch.device, only: set[str] | None = None) -> list[dict]:
    cfg_cls = resolve_target(f"{_GN}:GroupConfig")
    launch = resolve_target(f"{_GN}:group_norm_silu")
    shapes = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:SHAPES")
    make_inputs = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:make_inputs")
    eps = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:EPS")
    reference = resolve_target("sgl_diffusion_norm:group_norm_silu_reference")
    rows = []
    for name in ("c192-cl", "c192", "c96-cl", "c384-cl", "c384"):
        if only is not None and f"group_norm_silu/{name}" not in only:
            continue
        shape, cl, G = shapes[name]
        print(f"[{_elapsed():5.1f}s] group_norm_silu {name} {list(shape)} G={G}", flush=True)
        x, w, b = make_inputs(shape, cl, torch.bfloat16, device)
        geom = describe("norm.group_norm_silu", x, G, w, b).info["geom"]
        C = shape[1]
        default = cfg_cls.from_heuristic(C, G, 2, cl, "cuda")  # v2: v1's statistics, the flat / rows apply
        stream = cfg_cls.from_heuristic(C, G, 2, cl, "cuda", rule="stream")
        v1 = cfg_cls.from_heuristic(C, G, 2, cl, "cuda", rule="v1")
        # the default with SiLU's fast forms; its apply pass at half / twice the block and other warps
        configs = [default, v1, stream, dataclasses.replace(default, fast=False)]
        rep = dataclasses.replace
        if default.split:
            # channels_last (session 9): the rows kernels' two dense channel tiles against one padded
            # tile; statistics programs and steps; apply steps (positions x warps) per program. Options
            # measured and reverted: rows of two positions at C = 96 (pack=2, runs 7-9,
            # group_norm_pack_probe_*_rejected_h200.json) and the apply's coefficients reloaded at every
            # step (run 10, vae_norm_sweep_s9_reload_rejected_h200.json)
            configs.insert(1, rep(default, split=False))
            ar, aw, sp, sr, sw = (default.apply_rows, default.apply_warps, default.stats_programs,
                                  default.stats_rows, default.num_warps)
            configs += [rep(default, stats_programs=sp * 3 // 4), rep(default, stats_programs=sp * 3 // 2),
                        rep(default, stats_rows=sr * 2, num_warps=min(16, sw * 2)),
                        rep(default, stats_rows=max(1, sr // 2), num_warps=max(1, sw // 2)),
                        rep(default, stats_rows=sr * 2)]
            for n_rows, warps, it in ((ar, aw, 8), (ar, aw, 16), (ar // 2, aw, 8), (ar // 2, aw, 16),
                                      (ar * 2, aw * 2, 4), (ar * 2, aw, 4), (ar * 2, aw, 8)):
                if n_rows >= 1:
                    configs.append(rep(default, apply_rows=n_rows, apply_warps=warps, apply_iters=it))
        else:  # contiguous: the flat apply at half / twice the block and other warps
            n, w0 = default.apply_flat, default.apply_warps
            for size, warps in ((n // 2, w0 // 2), (n, w0 * 2), (n * 2, w0 * 2), (n // 2, w0)):
                if size >= 1 and 1 <= warps <= 16:
                    configs.append(rep(default, apply_flat=size, apply_warps=warps))
        configs = list(dict.fromkeys(configs))
        ref = reference(x, G, w, b, eps=eps)

        def run_for(cfg, x=x, w=w, b=b, G=G, geom=geom):
            return lambda: launch(x, G, w, b, eps=eps, geom=geom, config=cfg)

        case = f"group_norm_silu/{name}"
        rows += bench.sweep(
            case,
            configs,
            _budgeted(case, configs, run_for),
            3 * bench.tensor_bytes(x),
            device,
            check=_checker(case, ref, "norm.group_norm_silu"),
        )
        del x, w, b, ref
        torch.cuda.empty_cache()
    return rows


def main(path: str, device: torch.device | None = None, only: set[str] | None = None) -> int:
    """``device``: CUDA unless given (a CPU run under ``TRITON_INTERPRET=1`` with the bench
    modules' SHAPES shrunk only exercises this script's logic; its times mean nothing)."""
    if device is None:
        if not torch.cuda.is_available():
            print("vae_norm_sweep: no CUDA device; nothing measured", file=sys.stderr)
            return 2
        device = torch.device("cuda")
    rows = channel_rms_norm_rows(device, only) + group_norm_silu_rows(device, only)
    with open(path, "w") as f:
        json.dump(
            {
                "env": bench.environment(device),
                "budget_s": BUDGET_S,
                "elapsed_s": _elapsed(),
                "rows": rows,
                "failed": FAILED,
                "skipped": SKIPPED,
            },
            f,
            indent=1,
            default=str,
        )
    print("\n".join(bench.sweep_summary(rows)))
    print(f"[{_elapsed():5.1f}s] wrote {path}: {len(rows)} rows, {len(FAILED)} failed, {len(SKIPPED)} skipped")
    for line in FAILED:
        print(line)
    return 1 if FAILED else 0


if __name__ == "__main__":
    cases = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None  # e.g. group_norm_silu/c96-cl
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "vae_norm_sweep.json", only=cases))
