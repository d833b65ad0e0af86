"""The eager chains of the Ulysses / USP layout ops (the definition of their exact contract);
also their ``torch`` backend (``prepare_<op>``: the chain itself). Every function returns new
contiguous tensors: the permuted view is copied with ``clone(memory_format=torch.contiguous_format)``,
which copies even where the permutation is trivial (world size 1), so that a result never
aliases its input (a custom op's output may not)."""

from __future__ import annotations

import torch

_C = torch.contiguous_format


def ulysses_pack_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, world_size: int) -> torch.Tensor:
    B, S, H, Dh = q.shape
    hl = H // world_size
    parts = [t.reshape(B, S, world_size, hl, Dh).permute(2, 0, 1, 3, 4).reshape(world_size, B * S, hl, Dh)
             for t in (q, k, v)]
    return torch.cat(parts, dim=-1)


def ulysses_unpack_qkv(buf: torch.Tensor, world_size: int,
                       batch: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    W, R, hl, D3 = buf.shape
    Dh, sl = D3 // 3, R // batch
    b6 = buf.reshape(W, batch, sl, hl, 3, Dh)
    return tuple(b6[..., j, :].permute(1, 0, 2, 3, 4).clone(memory_format=_C).view(batch, W * sl, hl, Dh)
                 for j in range(3))


def ulysses_pack_out(o: torch.Tensor, world_size: int) -> torch.Tensor:
    B, S, hl, Dh = o.shape
    sl = S // world_size
    return o.reshape(B, world_size, sl, hl, Dh).transpose(0, 1).clone(memory_format=_C).view(world_size, B * sl, hl, Dh)


def ulysses_unpack_out(buf: torch.Tensor, world_size: int, batch: int = 1) -> torch.Tensor:
    W, R, hl, Dh = buf.shape
    sl = R // batch
    return buf.reshape(W, batch, sl, hl, Dh).permute(1, 2, 0, 3, 4).clone(memory_format=_C).view(batch, sl, W * hl, Dh)


def usp_merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.permute(2, 1, 0, 3, 4).clone(memory_format=_C)


def usp_split_heads(y: torch.Tensor, world_size: int) -> torch.Tensor:
    B, S, H, Dh = y.shape
    return y.reshape(B, S, world_size, H // world_size, Dh).permute(2, 1, 0, 3, 4).clone(memory_format=_C)


# the ``torch`` backend of each op: its runner is the chain, called with the op's arguments


def prepare_ulysses_pack_qkv(geom, q, k, v):
    return ulysses_pack_qkv


def prepare_ulysses_unpack_qkv(geom, buf):
    return ulysses_unpack_qkv


def prepare_ulysses_pack_out(geom, o):
    return ulysses_pack_out


def prepare_ulysses_unpack_out(geom, buf):
    return ulysses_unpack_out


def prepare_usp_merge_heads(geom, x):
    return usp_merge_heads


def prepare_usp_split_heads(geom, y):
    return usp_split_heads
