"""Ulysses sequence-parallel exchange over ``torch.distributed.all_to_all_single``.

The data movement around the collective is done by the exact layout ops of this package
(``ulysses_pack_qkv`` / ``ulysses_unpack_qkv`` and ``ulysses_pack_out`` /
``ulysses_unpack_out``): q, k and v travel in one collective, the output in another.
No transport of our own: whatever backend the process group uses (NCCL, RCCL, gloo)
moves the bytes.
"""

from __future__ import annotations

import torch

from .ulysses import ulysses_pack_out, ulysses_pack_qkv, ulysses_unpack_out, ulysses_unpack_qkv

# public names of this module (no op of its own: the exchange is two layout ops around a collective)
ALSO_EXPORTS = ("ulysses_all_to_all", "ulysses_all_to_all_out")


def _world(group) -> int:
    import torch.distributed as dist

    return dist.get_world_size(group)


def ulysses_all_to_all(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, group=None, *,
                       backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sequence-sharded q, k, v -> head-sharded q, k, v over the full sequence.

    q, k, v: ``[B, Sl, H, Dh]`` on every rank of ``group`` (rank ``r`` holds tokens
        ``r*Sl .. (r+1)*Sl - 1``); H must divide by the group's size W.
    Returns ``q, k, v: [B, W*Sl, H/W, Dh]`` (heads ``r*H/W ..`` of rank ``r``), equal to
    ``full[:, :, r*H/W:(r+1)*H/W]`` of the tensors gathered along the sequence.
    ``backend`` selects the backend of the pack/unpack ops.
    """
    import torch.distributed as dist

    W = _world(group)
    buf = ulysses_pack_qkv(q, k, v, W, backend=backend)
    recv = torch.empty_like(buf)
    dist.all_to_all_single(recv, buf, group=group)
    return ulysses_unpack_qkv(recv, W, q.shape[0], backend=backend)


def ulysses_all_to_all_out(o: torch.Tensor, group=None, *, backend: str | None = None) -> torch.Tensor:
    """The inverse exchange for the attention output: ``[B, W*Sl, H/W, Dh]`` (this rank's heads,
    full sequence) -> ``[B, Sl, H, Dh]`` (this rank's tokens, every head)."""
    import torch.distributed as dist

    W = _world(group)
    buf = ulysses_pack_out(o, W, backend=backend)
    recv = torch.empty_like(buf)
    dist.all_to_all_single(recv, buf, group=group)
    return ulysses_unpack_out(recv, W, o.shape[0], backend=backend)
