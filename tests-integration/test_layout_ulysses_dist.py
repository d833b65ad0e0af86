"""Ulysses exchange across real processes: ``ulysses_all_to_all`` / ``ulysses_all_to_all_out``
over gloo on the CPU, 4 ranks and a 2-rank subgroup, against a single-process computation.

Each rank builds the same full q, k, v from one seed, keeps its sequence shard, exchanges,
and checks that it got the full sequence of its heads (``torch.equal``); the attention
output then goes back and must equal the rank's token shard of the full output. Cost: one
spawn of 4 processes (each imports torch), 2 and 4 ranks in the same spawn: about 10-18 s
on a loaded 2-4 core machine, so it carries the ``multiproc`` marker (run by ``nox -s
integration``, deselected by ``nox -s import_surface``).
"""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

pytestmark = pytest.mark.multiproc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check(rank: int, world: int, group) -> None:
    import sgl_diffusion_layout as lay

    B, Sl, H, Dh = 2, 3, 8, 16
    g = torch.Generator().manual_seed(world)
    full = [torch.randn(B, world * Sl, H, Dh, generator=g).to(torch.bfloat16) for _ in range(3)]
    local = [t[:, rank * Sl : (rank + 1) * Sl] for t in full]
    hl = H // world
    got = lay.ulysses_all_to_all(*local, group=group)
    for x, t in zip(got, full):
        if not torch.equal(x, t[:, :, rank * hl : (rank + 1) * hl]):
            raise AssertionError(f"world {world} rank {rank}: q/k/v after the exchange differ from the heads")
    o_full = torch.randn(B, world * Sl, H, Dh, generator=g).to(torch.bfloat16)
    back = lay.ulysses_all_to_all_out(o_full[:, :, rank * hl : (rank + 1) * hl].contiguous(), group=group)
    if not torch.equal(back, o_full[:, rank * Sl : (rank + 1) * Sl]):
        raise AssertionError(f"world {world} rank {rank}: output after the inverse exchange differs")


def _rank_main(rank: int, world: int, port: int, errors) -> None:
    import datetime

    os.environ.pop("TRITON_INTERPRET", None)  # the torch backend serves CPU tensors
    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=30),
        )
        _check(rank, world, None)  # the whole world (4 ranks)
        pair = dist.new_group([0, 1])  # every rank takes part in creating it
        if rank < 2:
            _check(rank, 2, pair)  # a 2-rank group of the same processes
        dist.barrier()
    except Exception as e:  # reported to the parent; a hang is cut by the join timeout
        errors.put(f"rank {rank}: {type(e).__name__}: {e}")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def test_ulysses_all_to_all_gloo() -> None:
    """4 processes: the exchange over all 4 ranks, then over a 2-rank subgroup (one spawn)."""
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available in this build")
    world = 4
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
