"""The NCCL path of ``ulysses_all_to_all``, checked once on a machine with 2+ GPUs (one process per GPU).

Every rank builds the same full q, k, v (Wan2.1-14B 720p: ``[1, 75600, 40, 128]`` bf16, and a
small ragged-free shape) from one seed on its GPU, keeps its sequence shard, exchanges through
NCCL and checks ``torch.equal`` against the heads of the full tensors (the single-GPU result);
the attention output then goes back and must equal the rank's token shard. It also times the
exchange with our pack/unpack kernels and with the torch chains (``backend="torch"``), CUDA
events, median of 20, and writes one JSON record.

NVLink multicast stays off (``NCCL_NVLS_ENABLE=0``), as the machine's rules ask.
Usage: ``python3 tools/gpu/nccl_ulysses_check.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SHAPES = {"small": (2, 64, 8, 64), "wan": (1, 75600, 40, 128)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _time(fn, reps: int = 20) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def _timings(local: list[torch.Tensor], o_mine: torch.Tensor, world: int) -> dict[str, float]:
    """Exchange times (us): ours, the torch chains around the same collective, the collective alone."""
    import sgl_diffusion_layout as lay

    buf = lay.ulysses_pack_qkv(*local, world)
    recv = torch.empty_like(buf)
    return {
        "qkv_us": _time(lambda: lay.ulysses_all_to_all(*local)),
        "qkv_torch_chain_us": _time(lambda: lay.ulysses_all_to_all(*local, backend="torch")),
        "out_us": _time(lambda: lay.ulysses_all_to_all_out(o_mine)),
        "out_torch_chain_us": _time(lambda: lay.ulysses_all_to_all_out(o_mine, backend="torch")),
        "a2a_alone_us": _time(lambda: dist.all_to_all_single(recv, buf)),
    }


def _rank(rank: int, world: int, port: int, queue) -> None:
    import sgl_diffusion_layout as lay

    torch.cuda.set_device(rank)
    dist.init_process_group(
        "nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, device_id=torch.device("cuda", rank)
    )
    out = {}
    try:
        for name, (B, S, H, Dh) in SHAPES.items():
            g = torch.Generator(device="cuda").manual_seed(7)
            full = [torch.randn(B, S, H, Dh, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3)]
            Sl, hl = S // world, H // world
            local = [t[:, rank * Sl : (rank + 1) * Sl] for t in full]
            got = lay.ulysses_all_to_all(*local)
            equal_fwd = all(torch.equal(x, t[:, :, rank * hl : (rank + 1) * hl]) for x, t in zip(got, full))
            o_full = torch.randn(B, S, H, Dh, device="cuda", dtype=torch.bfloat16, generator=g)
            o_mine = o_full[:, :, rank * hl : (rank + 1) * hl].contiguous()
            back = lay.ulysses_all_to_all_out(o_mine)
            equal_back = torch.equal(back, o_full[:, rank * Sl : (rank + 1) * Sl])
            row = {"shape": [B, S, H, Dh], "world": world, "equal_qkv": equal_fwd, "equal_out": equal_back}
            if name == "wan":
                row.update(_timings([t.contiguous() for t in local], o_mine, world))
            out[name] = row
            del full, local, got, o_full, back
            torch.cuda.empty_cache()
        queue.put((rank, out, None))
    except Exception as exc:  # reported to the parent
        queue.put((rank, out, f"{type(exc).__name__}: {exc}"))
    finally:
        dist.destroy_process_group()


def main(path: str) -> int:
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    world = torch.cuda.device_count()
    if world < 2:
        print(f"nccl_ulysses_check: {world} GPU(s); needs 2 or more, nothing run")
        return 0
    world = 2
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, world, port, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    record = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "world": world,
        "git_sha": os.environ.get("SGL_DIFFUSION_GIT_SHA", "unknown"),
        "ranks": {r: {"results": res, "error": err} for r, res, err in sorted(results, key=lambda t: t[0])},
    }
    with open(path, "w") as f:
        json.dump(record, f, indent=2)
    ok = all(err is None and all(v["equal_qkv"] and v["equal_out"] for v in res.values()) for _, res, err in results)
    print(json.dumps(record, indent=1))
    print("nccl_ulysses_check:", "PASSED (torch.equal on every rank)" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "nccl_ulysses_check.json"))
