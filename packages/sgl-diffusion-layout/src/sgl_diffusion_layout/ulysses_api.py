"""Ulysses / USP sequence-parallel layouts: pack q, k, v for one ``all_to_all_single`` and
unpack after it; the inverse pair for the attention output; USP head merge/split.
Contract ``exact`` (pure data movement: ``torch.equal`` to the eager chains in
``ulysses_torch``). Public entry points.

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

from sgl_diffusion_core import is_compiling, resolve_target

from ._geometry import PermuteGeom, contiguous_strides
from ._plumbing import LayoutOp, check_dims, check_int, check_last_contiguous, new_desc, register_layout_op

# op -> number of tensor arguments (they come first; the rest are ints)
OPS = {"ulysses_pack_qkv": 3, "ulysses_unpack_qkv": 1, "ulysses_pack_out": 1, "ulysses_unpack_out": 1,
       "usp_merge_heads": 1, "usp_split_heads": 1}


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


_dispatch = {name: LayoutOp(name, globals()[f"describe_{name}"], n) for name, n in OPS.items()}

_ops = {
    "ulysses_pack_qkv": register_layout_op(
        "ulysses_pack_qkv", _dispatch["ulysses_pack_qkv"],
        "(Tensor q, Tensor k, Tensor v, int world_size, str? backend) -> Tensor"),
    "ulysses_unpack_qkv": register_layout_op(
        "ulysses_unpack_qkv", _dispatch["ulysses_unpack_qkv"],
        "(Tensor buf, int world_size, int batch, str? backend) -> (Tensor, Tensor, Tensor)"),
    "ulysses_pack_out": register_layout_op(
        "ulysses_pack_out", _dispatch["ulysses_pack_out"], "(Tensor o, int world_size, str? backend) -> Tensor"),
    "ulysses_unpack_out": register_layout_op(
        "ulysses_unpack_out", _dispatch["ulysses_unpack_out"],
        "(Tensor buf, int world_size, int batch, str? backend) -> Tensor"),
    "usp_merge_heads": register_layout_op(
        "usp_merge_heads", _dispatch["usp_merge_heads"], "(Tensor x, str? backend) -> Tensor"),
    "usp_split_heads": register_layout_op(
        "usp_split_heads", _dispatch["usp_split_heads"], "(Tensor y, int world_size, str? backend) -> Tensor"),
}


def _call(name, args, backend):
    if is_compiling():
        return _ops[name](*args, backend)
    return _dispatch[name](args, backend)


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
    return _call("ulysses_pack_qkv", (q, k, v, world_size), backend)


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
    return _call("ulysses_unpack_qkv", (buf, world_size, batch), backend)


def ulysses_pack_out(o: torch.Tensor, world_size: int, *, backend: str | None = None) -> torch.Tensor:
    """``o.reshape(B, W, Sl, Hl, Dh).transpose(0, 1).reshape(W, B*Sl, Hl, Dh)``: the attention
    output of this rank's heads, split by destination sequence shard.

    o: ``[B, W*Sl, Hl, Dh]``, last dim contiguous; the sequence length must divide by W.
    Returns a new contiguous ``[W, B*Sl, Hl, Dh]``. Contract ``exact``.
    """
    return _call("ulysses_pack_out", (o, world_size), backend)


def ulysses_unpack_out(buf: torch.Tensor, world_size: int, batch: int = 1, *,
                       backend: str | None = None) -> torch.Tensor:
    """``buf.reshape(W, batch, Sl, Hl, Dh).permute(1, 2, 0, 3, 4).reshape(batch, Sl, W*Hl, Dh)``:
    the received attention output back to this rank's tokens with every head.

    buf: ``[W, batch*Sl, Hl, Dh]``, ``buf[w]`` = heads ``w*Hl ..`` from rank ``w``.
    Returns a new contiguous ``[batch, Sl, W*Hl, Dh]``. Contract ``exact``.
    """
    return _call("ulysses_unpack_out", (buf, world_size, batch), backend)


def usp_merge_heads(x: torch.Tensor, *, backend: str | None = None) -> torch.Tensor:
    """``x.permute(2, 1, 0, 3, 4).contiguous()``: ``[W, Sl, B, Hl, Dh]`` -> ``[B, Sl, W, Hl, Dh]``
    (view the result as ``[B, Sl, W*Hl, Dh]`` for free). Last dim contiguous. Contract ``exact``."""
    return _call("usp_merge_heads", (x,), backend)


def usp_split_heads(y: torch.Tensor, world_size: int, *, backend: str | None = None) -> torch.Tensor:
    """``y.reshape(B, Sl, W, H/W, Dh).permute(2, 1, 0, 3, 4).contiguous()``: the inverse of
    ``usp_merge_heads``, ``[B, Sl, H, Dh]`` -> ``[W, Sl, B, H/W, Dh]``. W must divide H.
    Last dim contiguous, other strides free. Contract ``exact``."""
    return _call("usp_split_heads", (y, world_size), backend)


def _can(name, args, backend):
    return _dispatch[name].can_use(args, backend)


def can_use_ulysses_pack_qkv(q, k, v, world_size, *, backend=None) -> bool:
    """Whether ``ulysses_pack_qkv`` can serve these arguments (never raises, never allocates)."""
    return _can("ulysses_pack_qkv", (q, k, v, world_size), backend)


def can_use_ulysses_unpack_qkv(buf, world_size, batch=1, *, backend=None) -> bool:
    """Whether ``ulysses_unpack_qkv`` can serve these arguments (never raises, never allocates)."""
    return _can("ulysses_unpack_qkv", (buf, world_size, batch), backend)


def can_use_ulysses_pack_out(o, world_size, *, backend=None) -> bool:
    """Whether ``ulysses_pack_out`` can serve these arguments (never raises, never allocates)."""
    return _can("ulysses_pack_out", (o, world_size), backend)


def can_use_ulysses_unpack_out(buf, world_size, batch=1, *, backend=None) -> bool:
    """Whether ``ulysses_unpack_out`` can serve these arguments (never raises, never allocates)."""
    return _can("ulysses_unpack_out", (buf, world_size, batch), backend)


def can_use_usp_merge_heads(x, *, backend=None) -> bool:
    """Whether ``usp_merge_heads`` can serve these arguments (never raises, never allocates)."""
    return _can("usp_merge_heads", (x,), backend)


def can_use_usp_split_heads(y, world_size, *, backend=None) -> bool:
    """Whether ``usp_split_heads`` can serve these arguments (never raises, never allocates)."""
    return _can("usp_split_heads", (y, world_size), backend)


def _ref(name):
    return resolve_target(f"sgl_diffusion_layout.ulysses_torch:{name}")


def ulysses_pack_qkv_reference(q, k, v, world_size):
    """The eager chain itself (the ``torch`` backend): the definition of the exact contract."""
    return _ref("ulysses_pack_qkv")(q, k, v, world_size)


def ulysses_unpack_qkv_reference(buf, world_size, batch=1):
    """The eager chain itself (the ``torch`` backend)."""
    return _ref("ulysses_unpack_qkv")(buf, world_size, batch)


def ulysses_pack_out_reference(o, world_size):
    """The eager chain itself (the ``torch`` backend)."""
    return _ref("ulysses_pack_out")(o, world_size)


def ulysses_unpack_out_reference(buf, world_size, batch=1):
    """The eager chain itself (the ``torch`` backend)."""
    return _ref("ulysses_unpack_out")(buf, world_size, batch)


def usp_merge_heads_reference(x):
    """The eager chain itself (the ``torch`` backend)."""
    return _ref("usp_merge_heads")(x)


def usp_split_heads_reference(y, world_size):
    """The eager chain itself (the ``torch`` backend)."""
    return _ref("usp_split_heads")(y, world_size)
