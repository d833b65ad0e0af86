"""What every rank of a sequence-parallel attention call must agree on, checked before the heavy
collectives so that a mismatch raises the same ``UnsupportedInputError`` on every rank instead of
hanging one of them in a collective the others never enter.

One small ``all_gather`` of integers per group of more than one rank, one host sync: first inside
the Ulysses group (this rank's ring block), then inside the ring group, carrying the first stage's
verdict and a summary of each block. Every ring group sees one member of every Ulysses group, so
every rank of the mesh reaches the same verdict from the same numbers.

Compared: batch, heads, head dim, k/v heads, dtype, device type, joint length and strategy,
``kv_lens`` (presence, min, max and a weighted sum of its values), the two degrees, the mesh
(one ring rank per Ulysses group, one Ulysses rank per ring group), and the shard lengths: in
shard order they must be ``torch.tensor_split``'s (non-increasing, at most one apart), which
covers every length with equal shards or the balanced split of a length that does not divide.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import UnsupportedInputError

from . import _usp_comm as C

_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_DEVICES = ("cpu", "cuda")
STRATEGIES = ("none", "front", "rear")
# header fields compared across every rank, in order; then the per-group ones
_COMMON = ("batch", "heads", "head dim", "k/v heads", "dtype", "device type", "joint length", "joint_strategy",
           "kv_lens given", "kv_lens (min)", "kv_lens (max)", "kv_lens (values)", "Ulysses degree", "ring degree")
_RING_RANK, _ULYSSES_RANK, _LEN, _BAD = len(_COMMON), len(_COMMON) + 1, len(_COMMON) + 2, len(_COMMON) + 3


def _code(value, table) -> int:
    return table.index(value) if value in table else len(table)


def _header(q, k, joint_q, kv_lens, joint_strategy, U, R, u_rank, r_rank, dev) -> torch.Tensor:
    """This rank's numbers; ``q`` None: its own inputs were refused (only the degrees and ranks)."""
    if q is None:
        t = torch.zeros(_LEN + 2, dtype=torch.int64)
        t[12], t[13], t[_RING_RANK], t[_ULYSSES_RANK], t[_BAD] = U, R, r_rank, u_rank, 1
        return t.to(dev)
    B, Sl, H, Dh = q.shape
    T = -1 if joint_q is None else joint_q.shape[1]
    head = [B, H, Dh, k.shape[2], _code(q.dtype, _DTYPES), _code(q.device.type, _DEVICES), T,
            STRATEGIES.index(joint_strategy), int(kv_lens is not None)]
    t = torch.tensor(head, dtype=torch.int64, device=dev)
    if kv_lens is None:
        kv = torch.zeros(3, dtype=torch.int64, device=dev)
    else:
        lens = kv_lens.to(device=dev, dtype=torch.int64)
        w = torch.arange(1, lens.numel() + 1, dtype=torch.int64, device=dev)
        kv = torch.stack([lens.min(), lens.max(), (lens * w).sum()]) if lens.numel() else torch.zeros(
            3, dtype=torch.int64, device=dev)
    tail = torch.tensor([U, R, r_rank, u_rank, Sl, 0], dtype=torch.int64, device=dev)
    return torch.cat([t, kv, tail])


def _gather(x: torch.Tensor, group) -> list[list[int]]:
    import torch.distributed as dist

    parts = [torch.empty_like(x) for _ in range(C.group_size(group))]
    dist.all_gather(parts, x, group=group)
    return torch.stack(parts).tolist()


def _differ(rows: list[list[int]], fields, where: str) -> tuple[list[str], int]:
    """The fields whose values differ across ``rows``, and the index of the first (-1: none)."""
    out, first = [], -1
    for i, name in fields:
        vals = [r[i] for r in rows]
        if len(set(vals)) > 1:
            shown = ", ".join(f"rank {j}: {_show(i, v)}" for j, v in enumerate(vals))
            out.append(f"{name} differs across the {where} ({shown}); every rank must pass the same")
            first = i if first < 0 else first
    return out, first


def _show(i: int, v: int):
    if i == 4:
        return _DTYPES[v] if v < len(_DTYPES) else "another dtype"
    if i == 7:
        return repr(STRATEGIES[v])
    return v


def _lengths_problem(lens: list[int]) -> str | None:
    if any(a < b for a, b in zip(lens, lens[1:])) or max(lens) - min(lens) > 1:
        n, p = sum(lens), len(lens)
        return (f"shards of different lengths: {lens} tokens in shard order; usp_attention takes equal shards, or "
                f"torch.tensor_split's for a length that does not divide ({C.split_sizes(n, p)} for {n} tokens on "
                f"{p} ranks: usp_shard cuts them); pad the sequence to equal shards and mask the padding with "
                "kv_lens, or split it that way")
    return None


_LENGTHS, _REFUSED = 100, 101  # stage-1 verdicts besides "field i differs" (i + 1) and 0 (agreed)
_FIELDS = {**dict(enumerate(_COMMON)), _RING_RANK: "ring rank", _ULYSSES_RANK: "Ulysses rank"}


def _stage1(rows: list[list[int]]) -> tuple[list[str], int]:
    """Problems inside this Ulysses group and its verdict code for the ring stage."""
    bad = [j for j, r in enumerate(rows) if r[_BAD]]
    if bad:
        return [f"rank(s) {bad} of the Ulysses group got inputs usp_attention cannot serve (they raise with "
                "the reasons)"], _REFUSED
    problems, first = _differ(rows, [*enumerate(_COMMON), (_RING_RANK, "ring rank")], "Ulysses group")
    if problems:
        return problems, first + 1
    why = _lengths_problem([r[_LEN] for r in rows])
    return ([why], _LENGTHS) if why else ([], 0)


def _relayed(code: int, blocks: list[int]) -> str:
    """What a Ulysses group of ring rank(s) ``blocks`` found, as its verdict ``code`` tells it."""
    where = f"the Ulysses group of ring rank(s) {blocks}"
    if code == _REFUSED:
        return f"a rank of {where} got inputs usp_attention cannot serve (it raises with the reasons)"
    if code == _LENGTHS:
        return f"shards of different lengths in {where} (its ranks raise with the lengths)"
    return f"{_FIELDS.get(code - 1, 'a field')} differs across {where} (its ranks raise with the values)"


def _stage2(rows2: list[list[int]]) -> list[str]:
    """Rows ``[verdict of the Ulysses group, header, block total, first, last, min, max]``, one per ring rank."""
    codes = [r[0] for r in rows2]
    if any(codes):
        return [_relayed(c, [i for i, d in enumerate(codes) if d == c]) for c in sorted(set(codes) - {0})]
    heads = [r[1:] for r in rows2]
    problems, _ = _differ(heads, [*enumerate(_COMMON), (_ULYSSES_RANK, "Ulysses rank")], "ring group")
    if problems:
        return problems
    flat = [x for r in heads for x in (r[-4], r[-3])]
    lo, hi = min(r[-2] for r in heads), max(r[-1] for r in heads)
    if any(a < b for a, b in zip(flat, flat[1:])) or hi - lo > 1:
        return [f"shards of different lengths: ring blocks of {[r[-5] for r in heads]} tokens with shards of {lo} "
                f"to {hi} tokens; usp_attention takes equal shards, or torch.tensor_split's (usp_shard) for a "
                "length that does not divide"]
    return []


def _raise(problems: list[str]) -> None:
    raise UnsupportedInputError("attention.usp_attention: unsupported input (the ranks disagree):\n"
                                + "\n".join(f"  - {p}" for p in problems))


def check_mesh(q, k, joint_q, kv_lens, joint_strategy: str, ulysses_group, ring_group) -> int:
    """The sequence length over every shard, after checking that every rank agrees (else
    ``UnsupportedInputError`` on every rank of the mesh). A collective over both groups.

    ``q`` None: this rank's own inputs were refused; it takes part so that the others raise too,
    then raises."""
    U, R = C.group_size(ulysses_group), C.group_size(ring_group)
    if U * R == 1:
        return q.shape[1]
    u_rank, r_rank = C.group_rank(ulysses_group), C.group_rank(ring_group)
    dev = C.comm_device(ulysses_group if U > 1 else ring_group, None if q is None else q.device)
    head = _header(q, k, joint_q, kv_lens, joint_strategy, U, R, u_rank, r_rank, dev)
    rows = _gather(head, ulysses_group) if U > 1 else [head.tolist()]
    problems, code = _stage1(rows)
    lens = [r[_LEN] for r in rows]
    total = sum(lens)
    if R > 1:
        block = [total, lens[0], lens[-1], min(lens), max(lens)]
        row = torch.tensor([code, *head.tolist()[:_LEN], *block], dtype=torch.int64, device=dev)
        rows2 = _gather(row, ring_group)
        problems = problems or _stage2(rows2)
        total = sum(r[-5] for r in rows2)
    if not problems and kv_lens is not None:
        T = max(rows[0][6], 0)
        lo, hi = rows[0][9], rows[0][10]
        if lo < 1 or hi > total + T:
            problems.append(f"kv_lens values must lie in [1, {total + T}] (keys of the joint sequence: {total} "
                            f"sharded + {T} joint); got values in [{lo}, {hi}]")
    if problems or q is None:
        _raise(problems or ["this rank's inputs were refused"])
    return total
