"""The small pieces of ``torch.distributed`` that sequence-parallel attention shares: group sizes
and ranks (``None`` is a group of one), balanced splits, and gathers of pieces of different sizes.

Every function here is a collective over its group when the group has more than one rank: each
rank of the group calls it, in the same order, or the group hangs.
"""

from __future__ import annotations

import torch


def group_size(group) -> int:
    """Ranks in ``group``; ``None`` is this process alone (no collective)."""
    if group is None:
        return 1
    import torch.distributed as dist

    return dist.get_world_size(group)


def group_rank(group) -> int:
    if group is None:
        return 0
    import torch.distributed as dist

    return dist.get_rank(group)


def global_rank(group, rank: int) -> int:
    """The global rank of ``group``'s rank ``rank`` (what point-to-point ops and broadcasts name)."""
    import torch.distributed as dist

    return dist.get_global_rank(group, rank)


def split_sizes(n: int, parts: int) -> list[int]:
    """``torch.tensor_split``'s sizes: ``n`` in ``parts`` pieces, the first ``n % parts`` one longer."""
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def offsets(sizes: list[int]) -> list[int]:
    out, acc = [], 0
    for s in sizes:
        out.append(acc)
        acc += s
    return out


def comm_device(group, like: torch.device | None) -> torch.device:
    """Where a small tensor must live to go through ``group``: the CPU for gloo, else ``like`` (None:
    the current CUDA device)."""
    import torch.distributed as dist

    backend = str(dist.get_backend(group)).lower()
    if backend == "gloo" or (like is not None and like.type == "cpu"):
        return torch.device("cpu")
    if like is None:
        return torch.device("cuda", torch.cuda.current_device())
    return like


def all_gather_rows(x: torch.Tensor, group, dim: int = 0) -> list[torch.Tensor]:
    """Every rank's ``x`` (equal shapes but for ``dim``, whose sizes may differ), in group rank order.

    Pieces are padded to the longest along ``dim`` for ``all_gather`` and trimmed after; the sizes
    travel first in one small gather of their own."""
    import torch.distributed as dist

    n = group_size(group)
    if n == 1:
        return [x]
    dev = comm_device(group, x.device)
    size = torch.tensor([x.shape[dim]], dtype=torch.int64, device=dev)
    sizes = [torch.empty_like(size) for _ in range(n)]
    dist.all_gather(sizes, size, group=group)
    lens = [int(s.item()) for s in sizes]
    longest = max(lens)
    if x.shape[dim] < longest:
        pad = list(x.shape)
        pad[dim] = longest - x.shape[dim]
        x = torch.cat([x, x.new_zeros(pad)], dim=dim)
    x = x.contiguous()
    parts = [torch.empty_like(x) for _ in range(n)]
    dist.all_gather(parts, x, group=group)
    return [p.narrow(dim, 0, m) for p, m in zip(parts, lens)]
