"""The Ulysses / USP sequence-parallel layouts, one family of permutations around
``all_to_all_single`` (each op below is defined in this file, ``ulysses.py``):
``ulysses_pack_qkv`` / ``ulysses_unpack_qkv`` (q, k, v), ``ulysses_pack_out`` /
``ulysses_unpack_out`` (the attention output) and ``usp_merge_heads`` / ``usp_split_heads``.
Contract ``exact`` (pure data movement: ``torch.equal`` to the eager chains in
``ulysses_torch``). Backends: ``ulysses_triton`` (the strided permutation copy of
``_copy_triton``) and ``ulysses_torch``.

Layout of the exchange (``W`` = world size, ``Sl`` = local sequence length, ``Hl = H / W``):

* before: rank ``r`` holds ``q, k, v: [B, Sl, H, Dh]``, tokens ``r*Sl .. (r+1)*Sl - 1``;
* ``ulysses_pack_qkv`` -> ``buf: [W, B*Sl, Hl, 3*Dh]``, ``buf[w, b*Sl + s, h] =
  cat(q, k, v)[b, s, w*Hl + h]`` along the last dim: chunk ``w`` goes to rank ``w``;
* ``all_to_all_single(recv, buf)``: ``recv[w]`` is rank ``w``'s chunk for this rank, i.e.
  tokens ``w*Sl ..`` of heads ``r*Hl ..``;
* ``ulysses_unpack_qkv(recv, W, B)`` -> ``q, k, v: [B, W*Sl, Hl, Dh]`` each, the full
  sequence of this rank's heads (``q[b, w*Sl + s, h] = recv[w, b*Sl + s, h, :Dh]``).

With ``W = 1`` the exchange is the identity and unpack(pack(q, k, v)) returns q, k, v.
The attention output goes back with ``ulysses_pack_out`` (``o: [B, W*Sl, Hl, Dh]`` ->
``[W, B*Sl, Hl, Dh]``, chunk ``w`` = tokens ``w*Sl ..``) and ``ulysses_unpack_out``
(``[W, B*Sl, Hl, Dh]`` -> ``[B, Sl, W*Hl, Dh]``, head ``w*Hl + h`` from rank ``w``).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Op, is_compiling

from . import _specs as S
from ._common import check_dims, check_int, check_last_contiguous, fake_outputs, new_desc
from ._geometry import PermuteGeom, contiguous_strides


def _world(world_size, n, what, problems, unit="heads"):
    if not check_int("world_size", world_size, problems, minimum=1):
        return False
    if n % world_size:
        problems.append(f"{what} {n} is not divisible by world_size {world_size}: every rank must get "
                        f"the same number of {unit} (pad the {unit} or pick a world size dividing {n})")
        return False
    return True


def describe_ulysses_pack_qkv(q, k, v, world_size):
    """Validate ``ulysses_pack_qkv``'s arguments; ``info["geom"]``, ``info["shapes"]``."""
    problems: list[str] = []
    desc, _ = new_desc({"q": q, "k": k, "v": v}, problems)
    if problems:
        return desc
    if not all(check_dims(n, t, 4, "[B, S, H, Dh]", problems) for n, t in (("q", q), ("k", k), ("v", v))):
        return desc
    if k.shape != q.shape or v.shape != q.shape:
        problems.append(f"q, k, v must have one shape, got {list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
        return desc
    for n, t in (("q", q), ("k", k), ("v", v)):
        check_last_contiguous(n, t, problems)
    B, S, H, Dh = q.shape
    if problems or not _world(world_size, H, "number of heads", problems):
        return desc
    W, hl = world_size, H // world_size
    shape = (W, B * S, hl, 3 * Dh)
    d = contiguous_strides(shape)
    src = [(hl * t.stride(2), t.stride(0), t.stride(1), t.stride(2)) for t in (q, k, v)]
    dst = [(d[0], S * d[1], d[1], d[2])] * 3
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(W, B, S, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": shape}
    return desc


def describe_ulysses_unpack_qkv(buf, world_size, batch=1):
    problems: list[str] = []
    desc, _ = new_desc({"buf": buf}, problems)
    if problems or not check_dims("buf", buf, 4, "[W, B*Sl, Hl, 3*Dh]", problems):
        return desc
    check_last_contiguous("buf", buf, problems)
    W, R, hl, D3 = buf.shape
    if check_int("world_size", world_size, problems, minimum=1) and W != world_size:
        problems.append(f"buf has {W} chunks in dim 0, expected world_size = {world_size}")
    if D3 % 3:
        problems.append(f"buf's last dim {D3} is not 3 * Dh (q, k and v side by side)")
    if check_int("batch", batch, problems, minimum=1) and R % batch:
        problems.append(f"buf's rows {R} are not batch * Sl for batch = {batch}")
    if problems:
        return desc
    Dh, sl = D3 // 3, R // batch
    shape = (batch, W * sl, hl, Dh)
    d = contiguous_strides(shape)
    b0, b1, b2 = buf.stride(0), buf.stride(1), buf.stride(2)
    src = [(sl * b1, b0, b1, b2)] * 3
    dst = [(d[0], sl * d[1], d[1], d[2])] * 3
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(batch, W, sl, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": (shape,) * 3}
    return desc


def describe_ulysses_pack_out(o, world_size):
    problems: list[str] = []
    desc, _ = new_desc({"o": o}, problems)
    if problems or not check_dims("o", o, 4, "[B, W*Sl, Hl, Dh]", problems):
        return desc
    check_last_contiguous("o", o, problems)
    B, S, hl, Dh = o.shape
    if problems or not _world(world_size, S, "sequence length", problems, "tokens"):
        return desc
    W, sl = world_size, S // world_size
    shape = (W, B * sl, hl, Dh)
    d = contiguous_strides(shape)
    sB, sS, sH = o.stride(0), o.stride(1), o.stride(2)
    src = [(sl * sS, sB, sS, sH)]
    dst = [(d[0], sl * d[1], d[1], d[2])]
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(W, B, sl, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": shape}
    return desc


def describe_ulysses_unpack_out(buf, world_size, batch=1):
    problems: list[str] = []
    desc, _ = new_desc({"buf": buf}, problems)
    if problems or not check_dims("buf", buf, 4, "[W, B*Sl, Hl, Dh]", problems):
        return desc
    check_last_contiguous("buf", buf, problems)
    W, R, hl, Dh = buf.shape
    if check_int("world_size", world_size, problems, minimum=1) and W != world_size:
        problems.append(f"buf has {W} chunks in dim 0, expected world_size = {world_size}")
    if check_int("batch", batch, problems, minimum=1) and R % batch:
        problems.append(f"buf's rows {R} are not batch * Sl for batch = {batch}")
    if problems:
        return desc
    sl = R // batch
    shape = (batch, sl, W * hl, Dh)
    d = contiguous_strides(shape)
    b0, b1, b2 = buf.stride(0), buf.stride(1), buf.stride(2)
    src = [(sl * b1, b1, b0, b2)]
    dst = [(d[0], d[1], hl * d[2], d[2])]
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(batch, sl, W, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": shape}
    return desc


def describe_usp_merge_heads(x):
    problems: list[str] = []
    desc, _ = new_desc({"x": x}, problems)
    if problems or not check_dims("x", x, 5, "[W, Sl, B, Hl, Dh]", problems):
        return desc
    check_last_contiguous("x", x, problems)
    if problems:
        return desc
    W, sl, B, hl, Dh = x.shape
    shape = (B, sl, W, hl, Dh)
    d = contiguous_strides(shape)
    src = [(x.stride(2), x.stride(1), x.stride(0), x.stride(3))]
    dst = [(d[0], d[1], d[2], d[3])]
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(B, sl, W, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": shape}
    return desc


def describe_usp_split_heads(y, world_size):
    problems: list[str] = []
    desc, _ = new_desc({"y": y}, problems)
    if problems or not check_dims("y", y, 4, "[B, Sl, H, Dh]", problems):
        return desc
    check_last_contiguous("y", y, problems)
    B, sl, H, Dh = y.shape
    if problems or not _world(world_size, H, "number of heads", problems):
        return desc
    W, hl = world_size, H // world_size
    shape = (W, sl, B, hl, Dh)
    d = contiguous_strides(shape)
    src = [(hl * y.stride(2), y.stride(1), y.stride(0), y.stride(2))]
    dst = [(d[0], d[1], d[2], d[3])]
    desc.last_dim = Dh
    desc.info = {"geom": (PermuteGeom(W, sl, B, hl, Dh, tuple(src), tuple(dst)), shape), "shapes": shape}
    return desc


def _op(name: str, summary: str, describe, n_tensors: int, triton_prepare: str) -> Op:
    return Op(
        f"layout.{name}",
        distribution=S.DISTRIBUTION,
        summary=summary,
        describe=describe,
        n_tensors=n_tensors,
        reference=f".ulysses_torch:{name}",
        backends=S.backends(f".ulysses_triton:{triton_prepare}", f".ulysses_torch:prepare_{name}", S.PERMUTE_NOTE,
                            aot=f"aot_{name}"),
        default_exact=True,
        bench=f"{S.BENCH}:{name}_cases",
    )


ULYSSES_PACK_QKV = _op("ulysses_pack_qkv", "q, k, v [B, S, H, Dh] -> one [W, B*S, H/W, 3*Dh] send buffer",
                       describe_ulysses_pack_qkv, 3, "prepare_pack_qkv")
ULYSSES_UNPACK_QKV = _op("ulysses_unpack_qkv", "received [W, B*Sl, Hl, 3*Dh] -> q, k, v [B, W*Sl, Hl, Dh]",
                         describe_ulysses_unpack_qkv, 1, "prepare_unpack_qkv")
ULYSSES_PACK_OUT = _op("ulysses_pack_out", "attention output [B, W*Sl, Hl, Dh] -> [W, B*Sl, Hl, Dh] send buffer",
                       describe_ulysses_pack_out, 1, "prepare_permute")
ULYSSES_UNPACK_OUT = _op("ulysses_unpack_out", "received [W, B*Sl, Hl, Dh] -> [B, Sl, W*Hl, Dh]",
                         describe_ulysses_unpack_out, 1, "prepare_permute")
USP_MERGE_HEADS = _op("usp_merge_heads", "x.permute(2, 1, 0, 3, 4).contiguous() of [W, Sl, B, Hl, Dh]",
                      describe_usp_merge_heads, 1, "prepare_permute")
USP_SPLIT_HEADS = _op("usp_split_heads", "[B, Sl, H, Dh] -> [W, Sl, B, H/W, Dh] (inverse of usp_merge_heads)",
                      describe_usp_split_heads, 1, "prepare_permute")


@ULYSSES_PACK_QKV.entry
def ulysses_pack_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, world_size: int, *,
                     backend: str | None = None) -> torch.Tensor:
    """``torch.cat([t.reshape(B, S, W, H/W, Dh).permute(2, 0, 1, 3, 4).reshape(W, B*S, H/W, Dh)
    for t in (q, k, v)], dim=-1)``: q, k and v in one send buffer for ``all_to_all_single``.

    q, k, v: ``[B, S, H, Dh]``, one shape, one dtype (bf16 | fp16 | fp32), last dim
        contiguous, any other strides (views of a fused QKV projection).
    world_size: W, must divide H (else ``UnsupportedInputError``).

    Returns a new contiguous ``[W, B*S, H/W, 3*Dh]`` tensor, destination rank major:
    ``out[w, b*S + s, h] = cat(q, k, v)[b, s, w*H/W + h]``. Contract ``exact``.
    """
    if is_compiling():
        return _pack_qkv_op(q, k, v, world_size, backend)
    return ULYSSES_PACK_QKV.plan((q, k, v), backend, None, (("world_size", world_size),))(q, k, v, world_size)


@ULYSSES_UNPACK_QKV.entry
def ulysses_unpack_qkv(buf: torch.Tensor, world_size: int, batch: int = 1, *,
                       backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The received buffer of the q/k/v exchange -> ``(q, k, v)``, the full sequence of this rank's heads.

    buf: ``[W, batch*Sl, Hl, 3*Dh]``, ``buf[w]`` received from rank ``w`` (its tokens
        ``w*Sl .. (w+1)*Sl - 1``), last dim contiguous.
    Returns three new contiguous ``[batch, W*Sl, Hl, Dh]`` tensors with
    ``q[b, w*Sl + s, h] = buf[w, b*Sl + s, h, 0:Dh]`` (k: ``Dh:2*Dh``, v: ``2*Dh:``).
    Eager chain: ``buf.reshape(W, batch, Sl, Hl, 3, Dh)[..., j, :].permute(1, 0, 2, 3, 4)
    .reshape(batch, W*Sl, Hl, Dh)``. Contract ``exact``.
    """
    if is_compiling():
        return _unpack_qkv_op(buf, world_size, batch, backend)
    opts = (("world_size", world_size), ("batch", batch))
    return ULYSSES_UNPACK_QKV.plan((buf,), backend, None, opts)(buf, world_size, batch)


@ULYSSES_PACK_OUT.entry
def ulysses_pack_out(o: torch.Tensor, world_size: int, *, backend: str | None = None) -> torch.Tensor:
    """``o.reshape(B, W, Sl, Hl, Dh).transpose(0, 1).reshape(W, B*Sl, Hl, Dh)``: the attention
    output of this rank's heads, split by destination sequence shard.

    o: ``[B, W*Sl, Hl, Dh]``, last dim contiguous; the sequence length must divide by W.
    Returns a new contiguous ``[W, B*Sl, Hl, Dh]``. Contract ``exact``.
    """
    if is_compiling():
        return _pack_out_op(o, world_size, backend)
    return ULYSSES_PACK_OUT.plan((o,), backend, None, (("world_size", world_size),))(o, world_size)


@ULYSSES_UNPACK_OUT.entry
def ulysses_unpack_out(buf: torch.Tensor, world_size: int, batch: int = 1, *,
                       backend: str | None = None) -> torch.Tensor:
    """``buf.reshape(W, batch, Sl, Hl, Dh).permute(1, 2, 0, 3, 4).reshape(batch, Sl, W*Hl, Dh)``:
    the received attention output back to this rank's tokens with every head.

    buf: ``[W, batch*Sl, Hl, Dh]``, ``buf[w]`` = heads ``w*Hl ..`` from rank ``w``.
    Returns a new contiguous ``[batch, Sl, W*Hl, Dh]``. Contract ``exact``.
    """
    if is_compiling():
        return _unpack_out_op(buf, world_size, batch, backend)
    opts = (("world_size", world_size), ("batch", batch))
    return ULYSSES_UNPACK_OUT.plan((buf,), backend, None, opts)(buf, world_size, batch)


@USP_MERGE_HEADS.entry
def usp_merge_heads(x: torch.Tensor, *, backend: str | None = None) -> torch.Tensor:
    """``x.permute(2, 1, 0, 3, 4).contiguous()``: ``[W, Sl, B, Hl, Dh]`` -> ``[B, Sl, W, Hl, Dh]``
    (view the result as ``[B, Sl, W*Hl, Dh]`` for free). Last dim contiguous. Contract ``exact``."""
    if is_compiling():
        return _merge_heads_op(x, backend)
    return USP_MERGE_HEADS.plan((x,), backend)(x)


@USP_SPLIT_HEADS.entry
def usp_split_heads(y: torch.Tensor, world_size: int, *, backend: str | None = None) -> torch.Tensor:
    """``y.reshape(B, Sl, W, H/W, Dh).permute(2, 1, 0, 3, 4).contiguous()``: the inverse of
    ``usp_merge_heads``, ``[B, Sl, H, Dh]`` -> ``[W, Sl, B, H/W, Dh]``. W must divide H.
    Last dim contiguous, other strides free. Contract ``exact``."""
    if is_compiling():
        return _split_heads_op(y, world_size, backend)
    return USP_SPLIT_HEADS.plan((y,), backend, None, (("world_size", world_size),))(y, world_size)


can_use_ulysses_pack_qkv = ULYSSES_PACK_QKV.can_use
can_use_ulysses_unpack_qkv = ULYSSES_UNPACK_QKV.can_use
can_use_ulysses_pack_out = ULYSSES_PACK_OUT.can_use
can_use_ulysses_unpack_out = ULYSSES_UNPACK_OUT.can_use
can_use_usp_merge_heads = USP_MERGE_HEADS.can_use
can_use_usp_split_heads = USP_SPLIT_HEADS.can_use
ulysses_pack_qkv_reference = ULYSSES_PACK_QKV.reference
ulysses_unpack_qkv_reference = ULYSSES_UNPACK_QKV.reference
ulysses_pack_out_reference = ULYSSES_PACK_OUT.reference
ulysses_unpack_out_reference = ULYSSES_UNPACK_OUT.reference
usp_merge_heads_reference = USP_MERGE_HEADS.reference
usp_split_heads_reference = USP_SPLIT_HEADS.reference


def _custom_op(op: Op, name: str, keyed: tuple[str, ...], schema: str):
    """``torch.ops.sgl_diffusion.<name>``: its scalars (``keyed``) shape the plan; the fake
    allocates the described outputs."""

    def fake(*args):
        tensors, scalars = args[:op.n_tensors], args[op.n_tensors:-1]
        return fake_outputs(op.checked(*tensors, options=tuple(zip(keyed, scalars))), tensors[0])

    return op.custom_op(name, schema=schema, fake=fake, keyed=keyed)


_pack_qkv_op = _custom_op(ULYSSES_PACK_QKV, "ulysses_pack_qkv", ("world_size",),
                          "(Tensor q, Tensor k, Tensor v, int world_size, str? backend) -> Tensor")
_unpack_qkv_op = _custom_op(ULYSSES_UNPACK_QKV, "ulysses_unpack_qkv", ("world_size", "batch"),
                            "(Tensor buf, int world_size, int batch, str? backend) -> (Tensor, Tensor, Tensor)")
_pack_out_op = _custom_op(ULYSSES_PACK_OUT, "ulysses_pack_out", ("world_size",),
                          "(Tensor o, int world_size, str? backend) -> Tensor")
_unpack_out_op = _custom_op(ULYSSES_UNPACK_OUT, "ulysses_unpack_out", ("world_size", "batch"),
                            "(Tensor buf, int world_size, int batch, str? backend) -> Tensor")
_merge_heads_op = _custom_op(USP_MERGE_HEADS, "usp_merge_heads", (), "(Tensor x, str? backend) -> Tensor")
_split_heads_op = _custom_op(USP_SPLIT_HEADS, "usp_split_heads", ("world_size",),
                             "(Tensor y, int world_size, str? backend) -> Tensor")
