"""The sequence-parallel attention of ``usp_attention``: a Ulysses all-to-all inside the Ulysses
group, a ring of key/value blocks inside the ring group, the local ``attention`` in between.

Every backend of ``usp_attention`` is this runner; the backend name is the local attention's
(``None``: that op's own choice per call). Steps, on the rank with Ulysses rank ``u`` and ring
rank ``r`` (``U``, ``R`` the degrees, ``P = U * R``):

1. ``check_mesh`` (``_usp_check``): every rank agrees on the call, or every rank raises.
2. Ulysses: q, k and v each go through one ``all_to_all_single`` with per-rank split sizes
   (uneven heads and shard lengths need no padding): this rank receives its heads
   ``hoff[u] .. hoff[u] + hs[u]`` (``hs``: the ``tensor_split`` sizes of H over U) for the whole
   ring block ``r`` (the U shards ``r * U ..``). With B = 1 the received chunks are written in
   place into the block's planes. The joint text (replicated) joins the block of one ring rank:
   ring rank 0 before its tokens (``"front"``), ring rank ``R - 1`` after them (``"rear"``), so
   each block covers one contiguous range of the joint key order and ``kv_lens`` becomes a
   per-block prefix.
3. Ring: ``R`` steps; at each, the current k/v block goes to the next ring rank and the next one
   arrives from the previous (``batch_isend_irecv``), started before the local attention of the
   current block so the transfer overlaps it; partial outputs are merged in fp32 by their lse
   (``merge_attention_states``), rounded once at the end. A block with no valid key for a sample
   (``kv_lens``) gets lse -inf: it adds nothing.
4. The image rows go back to their owners through the inverse all-to-all; the text rows
   (computed on one ring rank) are broadcast over the ring group, then their heads gathered over
   the Ulysses group: every rank returns the same full text output.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _usp_comm as C
from ._usp_check import check_mesh
from .attention import attention
from .merge_attention_states import merge_attention_states


@dataclass(frozen=True)
class Layout:
    """Who holds what, the same numbers on every rank (from the checked total length ``S``)."""

    B: int
    H: int
    Dh: int
    T: int  # joint text tokens (0: none)
    front: bool
    U: int
    R: int
    u: int
    r: int
    lens: tuple[int, ...]  # shard lengths, shard order
    hs: tuple[int, ...]  # heads per Ulysses rank

    def block_lens(self, i: int) -> tuple[int, ...]:
        return self.lens[i * self.U:(i + 1) * self.U]

    def text_block(self) -> int:
        return 0 if self.front else self.R - 1

    def rows(self, i: int) -> int:
        """Rows of ring block ``i``: its tokens, plus the text on the text's block."""
        return sum(self.block_lens(i)) + (self.T if self.T and i == self.text_block() else 0)

    def key_start(self, i: int) -> int:
        """Where block ``i``'s rows start in the joint key order (text first with ``"front"``)."""
        start = sum(self.lens[:i * self.U])
        return start + self.T if self.front and i > 0 and self.T else start

    def text_row(self, i: int) -> int:
        """The first text row within block ``i`` (the text's block only)."""
        return 0 if self.front else sum(self.block_lens(i))


def _pack_heads(t: torch.Tensor, hs, hoff) -> torch.Tensor:
    """``[B, S, H, Dh]`` -> one flat buffer, head chunk ``w`` (``hs[w]`` heads) after chunk ``w - 1``."""
    B, S, _, Dh = t.shape
    buf = t.new_empty(B * S * sum(hs) * Dh)
    off = 0
    for h, a in zip(hs, hoff):
        buf[off:off + B * S * h * Dh].view(B, S, h, Dh).copy_(t[:, :, a:a + h])
        off += B * S * h * Dh
    return buf


def _exchange_in(ts, dsts, L: Layout, group) -> None:
    """Ulysses, forward: each ``t`` of ``ts`` (``[B, Sl, H, Dh]``, this rank's shard) -> ``dst``
    (``[B, block rows, hs[u], Dh]``, this rank's heads of its ring block)."""
    import torch.distributed as dist

    hoff, blk = C.offsets(list(L.hs)), L.block_lens(L.r)
    hl, B, Dh, sl = L.hs[L.u], L.B, L.Dh, L.lens[L.r * L.U + L.u]
    ins = [B * sl * h * Dh for h in L.hs]
    outs = [B * n * hl * Dh for n in blk]
    work = []
    for t, dst in zip(ts, dsts):
        direct = B == 1 and dst.is_contiguous()
        recv = dst.view(-1) if direct else dst.new_empty(sum(outs))
        req = dist.all_to_all_single(recv, _pack_heads(t, L.hs, hoff), outs, ins, group=group, async_op=True)
        work.append((req, direct, recv, dst))
    for req, direct, recv, dst in work:
        req.wait()
        if not direct:
            off = 0
            for n, s0 in zip(blk, C.offsets(list(blk))):
                dst[:, s0:s0 + n].copy_(recv[off:off + B * n * hl * Dh].view(B, n, hl, Dh))
                off += B * n * hl * Dh


def _exchange_out(o: torch.Tensor, L: Layout, group) -> torch.Tensor:
    """Ulysses, back: this rank's heads of its block's tokens ``[B, block tokens, hs[u], Dh]`` ->
    every head of this rank's shard ``[B, Sl, H, Dh]``."""
    import torch.distributed as dist

    blk, hoff = L.block_lens(L.r), C.offsets(list(L.hs))
    hl, B, Dh, sl = L.hs[L.u], L.B, L.Dh, L.lens[L.r * L.U + L.u]
    ins = [B * n * hl * Dh for n in blk]
    outs = [B * sl * h * Dh for h in L.hs]
    if B == 1 and o.is_contiguous():
        send = o.view(-1)
    else:
        send = torch.cat([o[:, s0:s0 + n].reshape(-1) for n, s0 in zip(blk, C.offsets(list(blk)))])
    recv = o.new_empty(sum(outs))
    dist.all_to_all_single(recv, send, outs, ins, group=group)
    out = o.new_empty(B, sl, L.H, Dh)
    off = 0
    for h, a in zip(L.hs, hoff):
        out[:, :, a:a + h].copy_(recv[off:off + B * sl * h * Dh].view(B, sl, h, Dh))
        off += B * sl * h * Dh
    return out


def _block_planes(q, k, v, joints, L: Layout, group):
    """q, k, v of this rank's ring block and heads, ``[B, rows, hs[u], Dh]`` each, contiguous."""
    text_here = L.T > 0 and L.r == L.text_block()
    if L.U == 1 and not text_here:
        return q, k, v
    n_tok, rows = sum(L.block_lens(L.r)), L.rows(L.r)
    hl, h0 = L.hs[L.u], C.offsets(list(L.hs))[L.u]
    planes = [t.new_empty(L.B, rows, hl, L.Dh) for t in (q, k, v)]
    tok0 = L.T if text_here and L.front else 0
    imgs = [p.narrow(1, tok0, n_tok) for p in planes]
    if L.U == 1:
        for dst, t in zip(imgs, (q, k, v)):
            dst.copy_(t)
    else:
        _exchange_in((q, k, v), imgs, L, group)
    if text_here:
        t0 = L.text_row(L.r)
        for p, j in zip(planes, joints):
            p.narrow(1, t0, L.T).copy_(j[:, :, h0:h0 + hl])
    return tuple(planes)


def _local_kv(kv_lens, L: Layout, i: int):
    """``kv_lens`` of ring block ``i`` (>= 1, as ``attention`` takes them) and the samples with no valid
    key there (their lse becomes -inf), or ``(None, None)``."""
    if kv_lens is None:
        return None, None
    n = (kv_lens.to(torch.int64) - L.key_start(i)).clamp(0, L.rows(i))
    return n.clamp(min=1).to(kv_lens.dtype), n == 0


def _ring(q, k, v, kv_lens, L: Layout, group, backend):
    """This rank's block of queries against every ring block of keys: fp32 ``(o, lse)`` merged."""
    import torch.distributed as dist

    nxt, prv = C.global_rank(group, (L.r + 1) % L.R), C.global_rank(group, (L.r - 1) % L.R)
    k, v = k.contiguous(), v.contiguous()  # what the point-to-point ops send
    acc = None
    for step in range(L.R):
        i = (L.r - step) % L.R
        reqs = []
        if step < L.R - 1:
            n = L.rows((L.r - step - 1) % L.R)
            nk, nv = k.new_empty(L.B, n, k.shape[2], L.Dh), v.new_empty(L.B, n, v.shape[2], L.Dh)
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt, group), dist.P2POp(dist.isend, v, nxt, group),
                                           dist.P2POp(dist.irecv, nk, prv, group),
                                           dist.P2POp(dist.irecv, nv, prv, group)])
        lens, none = _local_kv(kv_lens, L, i)
        o, lse = attention(q, k, v, kv_lens=lens, return_lse=True, backend=backend)
        if none is not None:
            lse = torch.where(none[:, None, None], float("-inf"), lse)
        acc = (o.float(), lse) if acc is None else merge_attention_states(acc[0], acc[1], o.float(), lse)
        for req in reqs:
            req.wait()
        if reqs:
            k, v = nk, nv
    return acc[0].to(q.dtype), acc[1]


def _text_out(o_text, L: Layout, ring_group, ulysses_group, like: torch.Tensor):
    """The full ``[B, T, H, Dh]`` text output on every rank, from the text block's ring rank."""
    import torch.distributed as dist

    hl = L.hs[L.u]
    # a copy of the text rows: the result shares no memory with the sequence output
    t = o_text.clone(memory_format=torch.contiguous_format) if o_text is not None else like.new_empty(
        L.B, L.T, hl, L.Dh)
    if L.R > 1:
        dist.broadcast(t, C.global_rank(ring_group, L.text_block()), group=ring_group)
    if L.U == 1:
        return t
    return torch.cat(C.all_gather_rows(t, ulysses_group, dim=2), dim=2)


def usp_forward(q, k, v, joint_q, joint_k, joint_v, kv_lens, ulysses_group, ring_group, joint_strategy: str,
                backend):
    """``usp_attention``'s computation (the module docstring); returns ``out`` or ``(out, joint_out)``."""
    S = check_mesh(q, k, joint_q, kv_lens, joint_strategy, ulysses_group, ring_group)
    U, R = C.group_size(ulysses_group), C.group_size(ring_group)
    B, _, H, Dh = q.shape
    T = 0 if joint_q is None else joint_q.shape[1]
    L = Layout(B, H, Dh, T, joint_strategy == "front", U, R, C.group_rank(ulysses_group), C.group_rank(ring_group),
               tuple(C.split_sizes(S, U * R)), tuple(C.split_sizes(H, U)))
    qb, kb, vb = _block_planes(q, k, v, (joint_q, joint_k, joint_v), L, ulysses_group)
    if R == 1:
        o = attention(qb, kb, vb, kv_lens=kv_lens, backend=backend)
    else:
        o, _ = _ring(qb, kb, vb, kv_lens, L, ring_group, backend)
    text_here = T > 0 and L.r == L.text_block()
    n_tok = sum(L.block_lens(L.r))
    img = o.narrow(1, T if text_here and L.front else 0, n_tok)
    out = _exchange_out(img, L, ulysses_group) if U > 1 else img.contiguous()
    if T == 0:
        return out
    o_text = o.narrow(1, L.text_row(L.r), T) if text_here else None
    return out, _text_out(o_text, L, ring_group, ulysses_group, o)


def prepare(geom, q, k, v, joint_q, joint_k, joint_v, kv_lens):
    """The runner of every backend of ``usp_attention``: the scalars carry the groups, the joint
    strategy and the local attention's backend (the name asked for, or None)."""

    def run(q, k, v, joint_q, joint_k, joint_v, kv_lens, ulysses_group, ring_group, joint_strategy, backend):
        return usp_forward(q, k, v, joint_q, joint_k, joint_v, kv_lens, ulysses_group, ring_group, joint_strategy,
                           backend)

    return run


def aot_variants_triton(platform: str = "cuda"):
    """The Triton kernel of the ``triton`` backend is ``attention``'s, run on each rank: its compile
    variants, named for this op (the compile lanes build each distinct kernel once)."""
    import dataclasses

    from ._attention_triton import aot_variants

    return [dataclasses.replace(v, name=f"usp:{v.name}") for v in aot_variants(platform)]
