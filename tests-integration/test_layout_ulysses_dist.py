"""Ulysses exchange across real processes: ``ulysses_all_to_all`` / ``ulysses_all_to_all_out``
over gloo on the CPU, 2 and 4 ranks, against a single-process computation.

Each rank builds the same full q, k, v from one seed, keeps its sequence shard, exchanges,
and checks that it got the full sequence of its heads (``torch.equal``); the attention
output then goes back and must equal the rank's token shard of the full output. Cost: one
spawn of 2 and one of 4 processes (each imports torch): a few seconds on two cores, so it
runs in the import-surface suite.
"""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, errors) -> None:
    import datetime

    import sgl_diffusion_layout as lay

    os.environ.pop("TRITON_INTERPRET", None)  # the torch backend serves CPU tensors
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=30),
        )
        B, Sl, H, Dh = 2, 3, 8, 16
        g = torch.Generator().manual_seed(0)
        full = [torch.randn(B, world * Sl, H, Dh, generator=g).to(torch.bfloat16) for _ in range(3)]
        local = [t[:, rank * Sl : (rank + 1) * Sl] for t in full]
        hl = H // world
        got = lay.ulysses_all_to_all(*local)
        for x, t in zip(got, full):
            if not torch.equal(x, t[:, :, rank * hl : (rank + 1) * hl]):
                raise AssertionError(f"rank {rank}: q/k/v after the exchange differ from the single-process heads")
        o_full = torch.randn(B, world * Sl, H, Dh, generator=g).to(torch.bfloat16)
        back = lay.ulysses_all_to_all_out(o_full[:, :, rank * hl : (rank + 1) * hl].contiguous())
        if not torch.equal(back, o_full[:, rank * Sl : (rank + 1) * Sl]):
            raise AssertionError(f"rank {rank}: output after the inverse exchange differs from the token shard")
        dist.barrier()
    except Exception as e:  # reported to the parent; a hang is cut by the join timeout
        errors.put(f"rank {rank}: {type(e).__name__}: {e}")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 4])
def test_ulysses_all_to_all_gloo(world: int) -> None:
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available in this build")
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_main, args=(r, world, port, errors)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=90)
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, f"{len(alive)} of {world} ranks did not finish within 90 s"
    msgs = []
    while not errors.empty():
        msgs.append(errors.get())
    assert not msgs, "\n".join(msgs)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
