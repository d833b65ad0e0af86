"""The main job, end to end: doctor, then ln_modulate on the best device, checked and timed.

On a machine without a GPU the Triton kernel runs in the Triton interpreter on the CPU
(slow, small shape); on a GPU it runs compiled at the FLUX shape.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

import sgl_diffusion as sd  # noqa: E402  (the umbrella: lazy, loads the norm package on first touch)


def main() -> int:
    print("$ sgl-diffusion doctor", flush=True)
    subprocess.run([sys.executable, "-m", "sgl_diffusion", "doctor"], check=True)
    gpu = torch.cuda.is_available()
    dev = torch.device("cuda" if gpu else "cpu")
    B, S, D = (1, 4608, 3072) if gpu else (1, 64, 3072)
    print(
        f"\nln_modulate on {dev} ({'compiled Triton' if gpu else 'Triton interpreter on CPU'}), "
        f"x [{B}, {S}, {D}] bf16, per-sample scale/shift",
        flush=True,
    )
    torch.manual_seed(0)
    x = torch.randn(B, S, D, device=dev, dtype=torch.bfloat16)
    mod = torch.randn(B, 6, D, device=dev, dtype=torch.bfloat16)
    shift, scale = mod[:, 0:1], mod[:, 1:2]
    print(sd.explain("norm.ln_modulate", x, scale, shift, backend="triton"), flush=True)
    out = sd.ln_modulate(x, scale, shift, backend="triton")
    ref = sd.ln_modulate_reference(x, scale, shift)
    err = (out.float() - ref.float()).abs().max().item()
    from sgl_diffusion_core import REGISTRY, testing

    spec = next(s for s in REGISTRY.specs("norm.ln_modulate") if s.backend == "triton")
    atol, rtol = spec.contract.tolerance(x.dtype)  # the triton backend's own (close) contract
    testing.assert_close(out, ref, atol=atol, rtol=rtol)
    print(f"check against the reference: max |error| = {err:.3g} (within the bf16 contract tolerance)")
    reps = 100 if gpu else 3
    if gpu:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        sd.ln_modulate(x, scale, shift, backend="triton")
    if gpu:
        torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / reps
    gbs = 2 * x.numel() * x.element_size() / dt / 1e9
    print(f"time: {dt * 1e6:.1f} us per call ({gbs:.2f} GB/s effective)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
