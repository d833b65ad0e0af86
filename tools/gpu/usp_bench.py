"""Sequence-parallel attention on several GPUs (NCCL), against one GPU: ``usp_attention`` and a
``parallelize``d stack of Wan2.1-14B blocks, with the communication measured on its own.

Run with torchrun, one process per GPU (PYTHONPATH holding packages/*/src, e.g. after
``source tools/gpu/device_env.sh``)::

    torchrun --standalone --nproc_per_node=2 tools/gpu/usp_bench.py --out usp_bench_h200.json

What it measures (bf16; times are the median over ``--reps`` calls of the slowest rank, CUDA events):

* layer: a Wan2.1-14B self-attention at 720p (B 1, 75600 tokens, 40 heads of 128): ``attention`` on
  one GPU (rank 0, the others idle), then ``usp_attention`` for every Ulysses x ring factorization of
  the world (2 GPUs: Ulysses 2, ring 2). For each: the compute alone (the local attention calls at the
  per-rank shapes, and the ring's merges), the communication alone (the all-to-alls of q, k, v and the
  output; the ring's batched P2P rounds of k / v), and from them the exposed communication
  (``total - compute``), the communication hidden under compute (``compute + communication - total``,
  and its fraction of the communication) and what is neither (``total - compute - communication``:
  copies around the collectives, the cross-rank check). Bandwidths: bytes leaving one rank over the
  time alone.
  Accuracy: the largest error of each rank's output against its rows of the one-GPU output.
* blocks: ``WanTransformer3DModel`` with the Wan2.1-T2V-14B config, ``--blocks`` blocks, random
  weights, a 720p latent (``[1, 16, 21, 90, 160]``: 75600 tokens) and 512 text tokens, end to end on
  one GPU, then ``sgl_diffusion_sites.parallelize`` with each factorization.

The issue's bars on 2 x H200: layer >= 1.8x one GPU with Ulysses, >= 1.6x with ring; blocks >= 1.7x
(the record holds the ratios; the reader judges). ``--profile DIR`` also writes one Chrome trace
per mesh and rank of one layer call (the timeline of the collectives against the kernels). ``--quick``
runs tiny shapes (a smoke run);
``--device cpu`` runs over gloo on the CPU (timings meaningless, the code paths the same). NVLink
multicast stays off (``NCCL_NVLS_ENABLE=0``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import sgl_diffusion_attention as A
import sgl_diffusion_core as core

LAYER = (1, 75600, 40, 128)  # Wan2.1-14B, 720p, 81 frames: 21 x 45 x 80 tokens
LAYER_QUICK = (1, 1000, 6, 64)
LATENT = (1, 16, 21, 90, 160)
LATENT_QUICK = (1, 4, 3, 10, 10)


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _time(fn, dev: torch.device, reps: int, warmup: int = 2) -> float:
    """Median ms of ``fn`` on this rank, each call started together on every rank (barrier)."""
    for _ in range(warmup):
        fn()
    _sync(dev)
    times = []
    for _ in range(reps):
        dist.barrier()
        _sync(dev)
        if dev.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize(dev)
            times.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _slowest(ms: float, dev: torch.device) -> float:
    """The largest of every rank's value."""
    t = torch.tensor([ms], dtype=torch.float64, device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _timed(fn, dev, reps) -> float:
    return round(_slowest(_time(fn, dev, reps), dev), 3)


def _factorizations(world: int) -> list[tuple[int, int]]:
    return [(u, world // u) for u in range(world, 0, -1) if world % u == 0]


def _full_inputs(shape, dev, dtype):
    g = torch.Generator(device=dev).manual_seed(0)
    return [torch.randn(shape, generator=g, device=dev).to(dtype) for _ in range(3)]


def _comm_alone(mesh, shard_shape, dev, dtype, reps) -> dict[str, float]:
    """The collectives of one ``usp_attention`` call without the attention: ms and GB/s per rank."""
    B, Sl, H, Dh = shard_shape
    U, R = mesh.ulysses, mesh.ring
    out: dict[str, float] = {}
    if U > 1:
        n = B * Sl * H * Dh
        send = torch.empty(n, dtype=dtype, device=dev)
        recv = torch.empty_like(send)

        def a2a():
            for _ in range(4):  # q, k, v in, the output back
                dist.all_to_all_single(recv, send, group=mesh.ulysses_group)

        ms = _timed(a2a, dev, reps)
        leaving = 4 * n * send.element_size() * (U - 1) / U
        out.update(all_to_all_ms=ms, all_to_all_gbps=round(leaving / ms / 1e6, 1))
    if R > 1:
        blk = torch.empty(B, Sl * U, -(-H // U), Dh, dtype=dtype, device=dev)
        nk, nv = torch.empty_like(blk), torch.empty_like(blk)
        ring = mesh.ring_group
        nxt = dist.get_global_rank(ring, (mesh.ring_rank + 1) % R)
        prv = dist.get_global_rank(ring, (mesh.ring_rank - 1) % R)

        def p2p():
            for _ in range(R - 1):
                ops = [
                    dist.P2POp(dist.isend, blk, nxt, ring),
                    dist.P2POp(dist.isend, blk, nxt, ring),
                    dist.P2POp(dist.irecv, nk, prv, ring),
                    dist.P2POp(dist.irecv, nv, prv, ring),
                ]
                for req in dist.batch_isend_irecv(ops):
                    req.wait()

        ms = _timed(p2p, dev, reps)
        out.update(p2p_ms=ms, p2p_gbps=round(2 * blk.numel() * blk.element_size() * (R - 1) / ms / 1e6, 1))
    return out


def _compute_alone(mesh, full_shape, dev, dtype, reps, backend) -> float:
    """The local attention calls (and the ring's merges) of one call, at the per-rank shapes."""
    B, S, H, Dh = full_shape
    U, R = mesh.ulysses, mesh.ring
    hl = -(-H // U)
    rows = -(-S // R)
    q, k, v = (t.contiguous() for t in _full_inputs((B, rows, hl, Dh), dev, dtype))

    def run():
        acc = None
        for _ in range(R):
            if R == 1:
                A.attention(q, k, v, backend=backend)
                continue
            o, lse = A.attention(q, k, v, return_lse=True, backend=backend)
            acc = (o.float(), lse) if acc is None else A.merge_attention_states(acc[0], acc[1], o.float(), lse)

    return _timed(run, dev, reps)


def _trace(fn, name: str, folder: str, dev: torch.device) -> str:
    """One call under ``torch.profiler`` (the collectives' and kernels' timeline), a Chrome trace per rank."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"usp_{name}_rank{dist.get_rank()}.json")
    dist.barrier()
    with profile(activities=acts) as prof:
        fn()
        _sync(dev)
    prof.export_chrome_trace(path)
    return path


def bench_layer(args, dev, dtype) -> dict:
    shape = LAYER_QUICK if args.quick else LAYER
    full = _full_inputs(shape, dev, dtype)
    rank = dist.get_rank()
    want = A.attention(*full, backend=args.backend)
    one = _timed(lambda: A.attention(*full, backend=args.backend) if rank == 0 else None, dev, args.reps)
    rec = {"shape": list(shape), "dtype": str(dtype), "one_gpu_ms": one, "meshes": {}}
    for U, R in _factorizations(dist.get_world_size()):
        mesh = A.init_usp(ulysses=U, ring=R)
        shards = [A.usp_shard(t, mesh).contiguous() for t in full]

        def call(shards=shards, mesh=mesh):
            return A.usp_attention(*shards, **mesh.groups(), backend=args.backend)

        got = call()
        err = float((got.float() - A.usp_shard(want, mesh).float()).abs().max())
        total = _timed(call, dev, args.reps)
        compute = _compute_alone(mesh, shape, dev, dtype, args.reps, args.backend)
        comm = _comm_alone(mesh, tuple(shards[0].shape), dev, dtype, args.reps)
        comm_ms = comm.get("all_to_all_ms", 0.0) + comm.get("p2p_ms", 0.0)
        hidden = max(compute + comm_ms - total, 0.0)
        row = {
            "total_ms": total,
            "speedup": round(one / total, 3),
            "compute_ms": compute,
            **comm,
            "exposed_comm_ms": round(max(total - compute, 0.0), 3),
            "hidden_comm_ms": round(hidden, 3),
            "comm_hidden_fraction": round(hidden / comm_ms, 3) if comm_ms else None,
            "other_ms": round(max(total - compute - comm_ms, 0.0), 3),
            "max_abs_err_vs_one_gpu": _slowest(err, dev),
        }
        if R > 1:
            local = [t[:, : shards[0].shape[1]] for t in full]
            row["ring_local_backend"] = core.explain(A.attention, *local, return_lse=True).chosen
        if args.profile:
            row["trace"] = _trace(call, f"ulysses{U}_ring{R}", args.profile, dev)
        rec["meshes"][f"ulysses{U}_ring{R}"] = row
        del shards, got
    return rec


def _wan(args, dev, dtype):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _e2e_models import build, wan_spec

    spec = wan_spec(args.quick, min(args.blocks, 2) if args.quick else args.blocks)
    torch.manual_seed(0)  # the same weights on every rank
    model, info = build(spec, dev, dtype, cast_all=False)
    latent = LATENT_QUICK if args.quick else LATENT
    g = torch.Generator(device=dev).manual_seed(1)
    kw = {
        "hidden_states": torch.randn(latent, generator=g, device=dev).to(dtype),
        "timestep": torch.tensor([500], device=dev),
        "encoder_hidden_states": torch.randn(
            1, 16 if args.quick else 512, spec.config["text_dim"], generator=g, device=dev
        ).to(dtype),
        "return_dict": False,
    }
    p_t, p_h, p_w = spec.config["patch_size"]
    tokens = (latent[2] // p_t) * (latent[3] // p_h) * (latent[4] // p_w)
    return model, kw, {**info, "blocks": spec.config["num_layers"], "latent": list(latent), "tokens": tokens}


def bench_blocks(args, dev, dtype) -> dict:
    import sgl_diffusion_sites as sites

    model, kw, info = _wan(args, dev, dtype)
    rank = dist.get_rank()
    reps = max(1, args.reps // 3)
    with torch.no_grad():
        want = model(**kw)[0]
        one = _timed(lambda: model(**kw) if rank == 0 else None, dev, reps)
        rec = {**info, "one_gpu_ms": one, "meshes": {}}
        for U, R in _factorizations(dist.get_world_size()):
            sites.parallelize(model, ulysses=U, ring=R, backend=args.backend)
            got = model(**kw)[0]
            err = float((got.float() - want.float()).abs().max())
            total = _timed(lambda: model(**kw), dev, reps)
            sites.unparallelize(model)
            rec["meshes"][f"ulysses{U}_ring{R}"] = {
                "total_ms": total,
                "speedup": round(one / total, 3),
                "max_abs_err_vs_one_gpu": _slowest(err, dev),
            }
    return rec


def _env(dev) -> dict:
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if dev.type == "cuda" else []
    nccl = None
    if dev.type == "cuda":
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return {
        "world": dist.get_world_size(),
        "backend": str(dist.get_backend()),
        "gpus": names,
        "torch": torch.__version__,
        "nccl": nccl,
        "git_sha": os.environ.get("SGL_DIFFUSION_GIT_SHA", "unknown"),
        "NCCL_NVLS_ENABLE": os.environ.get("NCCL_NVLS_ENABLE"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the JSON record (written by rank 0)")
    p.add_argument("--blocks", type=int, default=4, help="Wan2.1-14B blocks in the end-to-end stack")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--backend", default=None, help="the local attention's backend (default: attention's choice)")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--quick", action="store_true", help="tiny shapes: a smoke run of every path")
    p.add_argument("--skip-blocks", action="store_true")
    p.add_argument("--profile", default=None, help="a folder for one Chrome trace per mesh and rank (torch.profiler)")
    args = p.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    dtype = torch.bfloat16
    record = {"env": _env(dev), "quick": args.quick, "backend": args.backend}
    try:
        record["layer"] = bench_layer(args, dev, dtype)
        if not args.skip_blocks:
            record["blocks"] = bench_blocks(args, dev, dtype)
    finally:
        if dist.get_rank() == 0:
            with open(args.out, "w") as f:
                json.dump(record, f, indent=2)
            print(json.dumps(record, indent=1))
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
