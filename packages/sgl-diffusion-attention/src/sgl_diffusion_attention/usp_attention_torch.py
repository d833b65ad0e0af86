"""The definition of ``usp_attention`` (its reference): the whole sequence gathered on every rank,
one ``attention`` (its fp32 definition) over the joint sequence, this rank's rows kept.

``out = attention(cat(text, seq) | cat(seq, text) | seq, kv_lens)[rows of this rank's shard]`` with
``seq`` the shards of every rank in shard order (ring rank ``i``, Ulysses rank ``u``: shard
``i * U + u``), and the text rows as ``joint_out``. It moves the whole sequence to every rank:
a definition to test against, not a way to run.
"""

from __future__ import annotations

import torch

from . import _usp_comm as C
from .attention_torch import attention


def _gather_seq(x: torch.Tensor, ulysses_group, ring_group) -> torch.Tensor:
    block = torch.cat(C.all_gather_rows(x, ulysses_group, 1), dim=1)
    return torch.cat(C.all_gather_rows(block, ring_group, 1), dim=1)


def usp_attention(q, k, v, *, ulysses_group=None, ring_group=None, joint_q=None, joint_k=None, joint_v=None,
                  joint_strategy="none", kv_lens=None):
    U, R = C.group_size(ulysses_group), C.group_size(ring_group)
    full = [_gather_seq(t, ulysses_group, ring_group) for t in (q, k, v)]
    S, T = full[0].shape[1], 0 if joint_q is None else joint_q.shape[1]
    if T:
        pairs = zip((joint_q, joint_k, joint_v), full)
        full = [torch.cat([j, t] if joint_strategy == "front" else [t, j], dim=1) for j, t in pairs]
    o = attention(*full, kv_lens=kv_lens)
    shard = C.group_rank(ring_group) * U + C.group_rank(ulysses_group)
    lens = C.split_sizes(S, U * R)
    first = C.offsets(lens)[shard] + (T if joint_strategy == "front" else 0)
    out = o[:, first:first + lens[shard]].contiguous()
    if not T:
        return out
    t0 = 0 if joint_strategy == "front" else S
    return out, o[:, t0:t0 + T].contiguous()
