"""The benches' L2 flush, writing (``zero``, the default) against reading (``read``) its buffer (GPU).

Session 12: the same-run copy of FLUX-sized bytes (2 x 28.3 MB) measured 21.2-21.3 us with the
rms_modulate FLUX case's tensors allocated and 18.9 us after they were freed
(copy_reference_probe_s12_bench_h200.json). A zero-filled flush leaves L2 full of dirty lines that
the timed call then writes back, and where the buffers sit may decide how much of that lands in
the call. This times the copy reference, the exact kernel and the close kernel at FLUX under both
flushes, with the case allocated, then the copy alone after freeing it.
Usage: ``python3 tools/gpu/flush_mode_probe.py OUT.json``.
"""

from __future__ import annotations

import json
import sys

import torch

from sgl_diffusion_core import bench, resolve_target

rms_modulate_cases = resolve_target("sgl_diffusion_norm.row_norm_bench:rms_modulate_cases")


def main(path: str) -> None:
    device = torch.device("cuda")
    rows = []
    (case,) = rms_modulate_cases(device, names=["flux"])
    case.check()
    nbytes = case.bytes
    for rnd in range(2):
        for mode in ("zero", "read"):
            bench.FLUSH = mode
            copy, gbps = bench.copy_bandwidth(nbytes, device)
            row = {"round": rnd, "flush": mode, "state": "case allocated", "copy_us": copy.median_ms * 1e3}
            for prov in ("sgl_diffusion(exact kernel)", "sgl_diffusion(close)", "sgl_diffusion"):
                t = bench.time_gpu(case.providers[prov], device)
                row[prov] = {"median_us": t.median_ms * 1e3, "frac_of_copy": copy.median_ms / t.median_ms}
            rows.append(row)
            print(f"round {rnd} flush={mode}: copy {row['copy_us']:.2f} us; "
                  + ", ".join(f"{p} {row[p]['median_us']:.2f} us ({100 * row[p]['frac_of_copy']:.1f}%)"
                              for p in ("sgl_diffusion(exact kernel)", "sgl_diffusion(close)", "sgl_diffusion")))
    del case
    torch.cuda.empty_cache()
    for rnd in range(2):
        for mode in ("zero", "read"):
            bench.FLUSH = mode
            copy, _ = bench.copy_bandwidth(nbytes, device)
            rows.append({"round": rnd, "flush": mode, "state": "case freed", "copy_us": copy.median_ms * 1e3})
            print(f"case freed, round {rnd} flush={mode}: copy {copy.median_ms * 1e3:.2f} us")
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
