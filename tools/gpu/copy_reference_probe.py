"""How steady is the benches' same-run copy at FLUX's size (GPU)?

Session 12's op-overhead probe timed a copy of x's bytes interleaved with the exact RMSNorm op at FLUX
([1, 4608, 3072] bf16) at 18.4-19.1 us, where the rms_modulate bench's own copy reference
(``bench.copy_bandwidth``, timed once per case before the providers) measured 20.8-21.2 us: 10-15%
apart, which moves every "% of copy" at this size. This times ``bench.copy_bandwidth`` of the FLUX
case's bytes five times in a row, then after 2 s of other GPU work, then once more after 1 s of GPU
idle; each line is one ``time_gpu`` median (100 calls, L2 flush before each). Session 12's run 6:
18.53-19.10 us throughout. ``bench`` mode (the next step): the same copy measured as the
rms_modulate bench measures it, after allocating that case's tensors and running its check (ours,
the close kernel, eager), at FLUX and at Wan, then again after freeing them.
Usage: ``python3 tools/gpu/copy_reference_probe.py OUT.json [bench]``.
"""

from __future__ import annotations

import json
import sys
import time

import torch

from sgl_diffusion_core import bench


def main(path: str) -> None:
    device = torch.device("cuda")
    nbytes = 2 * 4608 * 3072 * 2  # x read + out written, bf16
    rows = []

    def probe(label: str) -> None:  # at the current nbytes
        t, gbps = bench.copy_bandwidth(nbytes, device)
        rows.append({"when": label, "median_us": t.median_ms * 1e3, "p20_us": t.p20_ms * 1e3,
                     "p80_us": t.p80_ms * 1e3, "gbps": gbps})
        print(f"{label:28s} copy {t.median_ms * 1e3:6.2f} us (p20 {t.p20_ms * 1e3:6.2f}, p80 {t.p80_ms * 1e3:6.2f})")

    if len(sys.argv) > 2 and sys.argv[2] == "bench":
        from sgl_diffusion_core import resolve_target

        cases = resolve_target("sgl_diffusion_norm.row_norm_bench:rms_modulate_cases")
        for case in cases(device, names=["flux", "wan"]):
            nbytes = case.bytes
            probe(f"{case.name}: fresh, before check")
            case.check()
            probe(f"{case.name}: after the check")
            for fn in case.providers.values():
                fn()
            torch.cuda.synchronize()
            probe(f"{case.name}: after one call of each provider")
        del case
        torch.cuda.empty_cache()
        nbytes = 2 * 4608 * 3072 * 2
        probe("flux bytes, cases freed")
    for i in range(5):
        probe(f"back to back #{i + 1}")
    a = torch.randn(8192, 8192, device=device)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 2.0:
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
    probe("after 2 s of matmuls")
    time.sleep(1.0)
    probe("after 1 s idle")
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
