"""``usp_attention``: sequence-parallel attention (Ulysses + ring, as xDiT's USP) over
``torch.distributed``: each rank holds a shard of the sequence and gets the same shard of the
attention over the whole sequence.

The computation is ``_usp_dist`` (all-to-all, ring, local ``attention``, ``merge_attention_states``);
the cross-rank checks are ``_usp_check``; the groups come from ``usp_mesh.init_usp``. Backends:
one per backend of ``attention``, the one that computes each rank's local attention; the
definition is ``usp_attention_torch`` (the whole sequence gathered, then one ``attention``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Backend,
    InputDesc,
    Op,
    UnsupportedInputError,
    device_arch,
    dtype_name,
    is_compiling,
    register_custom_op,
    tensor_platform,
)

from . import _geometry as G
from . import _specs as S
from . import _usp_comm as C
from ._usp_check import STRATEGIES, check_mesh


@dataclass(frozen=True)
class UspGeometry:
    """One rank's view of a call: its shard ``[B, Sl, H, Dh]``, the joint length, the degrees."""

    B: int
    Sl: int
    H: int
    Dh: int
    T: int
    joint_strategy: str
    ulysses: int
    ring: int
    dtype: torch.dtype
    kv_lens: bool


def _joint_problems(joint_q, joint_k, joint_v, joint_strategy, problems: list[str]) -> dict:
    joints = {"joint_q": joint_q, "joint_k": joint_k, "joint_v": joint_v}
    given = [n for n, t in joints.items() if t is not None]
    if joint_strategy not in STRATEGIES:
        problems.append(f"joint_strategy must be one of {', '.join(map(repr, STRATEGIES))}, got {joint_strategy!r}")
    elif given and len(given) < 3:
        problems.append(f"joint_q, joint_k and joint_v come together: got only {', '.join(given)}")
    elif given and joint_strategy == "none":
        problems.append("joint tensors given with joint_strategy='none': say where the text sits in the joint "
                        "sequence, 'front' or 'rear'")
    elif not given and joint_strategy != "none":
        problems.append(f"joint_strategy={joint_strategy!r} needs joint_q, joint_k and joint_v")
    return joints if len(given) == 3 else {}


def _shape_problems(q, k, v, joints: dict, problems: list[str]) -> None:
    B, Sl, H, Dh = q.shape
    for name, t in (("k", k), ("v", v)):
        if tuple(t.shape) != tuple(q.shape):
            problems.append(f"{name} of shape {list(t.shape)} must have q's shape {list(q.shape)}: the same shard "
                            "of the same heads (usp_attention has no GQA)")
    shapes = {tuple(t.shape) for t in joints.values()}
    jq = joints.get("joint_q")
    if jq is not None and (len(shapes) > 1 or (jq.shape[0], jq.shape[2], jq.shape[3]) != (B, H, Dh)):
        problems.append(f"joint_q, joint_k, joint_v must share one shape [B={B}, T, H={H}, Dh={Dh}], got "
                        f"{[list(t.shape) for t in joints.values()]}")


def _degree(name: str, group, problems: list[str]) -> int:
    try:
        return C.group_size(group)
    except Exception as e:  # not a process group, or torch.distributed not initialized
        problems.append(f"{name} must be a torch.distributed process group or None: {type(e).__name__}: {e}")
        return 1


def describe_usp_attention(q, k, v, joint_q=None, joint_k=None, joint_v=None, kv_lens=None, *, ulysses_group=None,
                           ring_group=None, joint_strategy="none") -> InputDesc:
    """Validate this rank's arguments of ``usp_attention`` (the cross-rank checks run in the call)."""
    problems: list[str] = []
    joints = _joint_problems(joint_q, joint_k, joint_v, joint_strategy, problems)
    U, R = _degree("ulysses_group", ulysses_group, problems), _degree("ring_group", ring_group, problems)
    if problems or not G.check_operands({"q": q, "k": k, "v": v, **joints}, "bshd", problems):
        plat = tensor_platform(q.device) if isinstance(q, torch.Tensor) else None
        return InputDesc(platform=plat, problems=problems)
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    desc = InputDesc(plat, arch, (dtype_name(q.dtype),), q.shape[-1], (), problems)
    _shape_problems(q, k, v, joints, problems)
    if kv_lens is not None:
        G.check_index("kv_lens", kv_lens, q.device, (torch.int32, torch.int64), q.shape[0], problems)
    if q.shape[2] < U:
        problems.append(f"{q.shape[2]} heads on a Ulysses group of {U} ranks: each Ulysses rank needs a head "
                        "(a smaller Ulysses degree, the rest as a ring)")
    if problems:
        return desc
    B, Sl, H, Dh = q.shape
    tags = [S.BSHD, S.head_dim_tag(Dh)]
    tags += [S.KV_LENS] if kv_lens is not None else []
    tags += [S.LSE] if R > 1 else []
    desc.layouts = tuple(tags)
    T = 0 if joint_q is None else joint_q.shape[1]
    geom = UspGeometry(B, Sl, H, Dh, T, joint_strategy, U, R, q.dtype, kv_lens is not None)
    desc.info = {"geom": geom, "empty": False, "device": q.device}
    return desc


USP_ATTENTION = Op(
    "attention.usp_attention",
    distribution=S.DISTRIBUTION,
    summary="sequence-parallel attention (Ulysses all-to-all x ring of k/v blocks) over torch.distributed",
    describe=describe_usp_attention,
    n_tensors=7,
    reference=".usp_attention_torch:usp_attention",
    backends=[Backend(name, "._usp_dist:prepare", caps, contract, priority=prio, notes=S.USP_NOTE.format(name),
                      executed_on=S.EXECUTED_TORCH if name == "torch" else (),
                      aot="aot_variants_triton" if name == "triton" else None)
              for name, caps, contract, prio in S.usp_backends()],
)


def _announce(ulysses_group, ring_group) -> None:
    """This rank's inputs were refused: it joins the cross-rank check (which raises on every rank)
    so that no other rank waits for it in a collective; the caller raises its own reasons."""
    try:
        if C.group_size(ulysses_group) * C.group_size(ring_group) > 1:
            check_mesh(None, None, None, None, "none", ulysses_group, ring_group)
    except (UnsupportedInputError, TypeError, ValueError, RuntimeError):
        pass  # the groups themselves may be what was refused


@USP_ATTENTION.entry
def usp_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    ulysses_group=None,
    ring_group=None,
    joint_q: torch.Tensor | None = None,
    joint_k: torch.Tensor | None = None,
    joint_v: torch.Tensor | None = None,
    joint_strategy: str = "none",
    kv_lens: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """This rank's shard of ``attention(cat(joint, seq), ...)`` over the whole sequence, computed by
    ``U * R`` ranks (U = size of ``ulysses_group``, R = size of ``ring_group``; None: 1).

    q, k, v: ``[B, Sl, H, Dh]``, this rank's shard of the sequence: the rank with ring rank ``i``
        and Ulysses rank ``u`` holds shard ``i * U + u`` (``usp_mesh.init_usp`` builds such groups,
        ``usp_shard`` cuts the shards). One dtype (bf16 | fp16; fp32 on the ``torch`` backend), any
        strides with the head dim contiguous. Shards are equal, or ``torch.tensor_split``'s for a
        length that does not divide by ``U * R`` (the first ones a token longer); any other mix of
        lengths raises. H need not divide by U: Ulysses rank ``u`` computes
        ``tensor_split(range(H), U)[u]`` (24 heads on 5 ranks: 5, 5, 5, 5, 4), nothing is padded.
    joint_q, joint_k, joint_v: ``[B, T, H, Dh]`` text tokens, the same on every rank (replicated,
        not sharded), attended by every token and attending to every token.
    joint_strategy: where the text sits in the joint sequence: ``"front"`` (``cat(text, seq)``),
        ``"rear"`` (``cat(seq, text)``), ``"none"`` (no joint tensors).
    kv_lens: ``[B]`` int32 | int64, the same on every rank: sample b attends to the first
        ``kv_lens[b]`` keys of the joint sequence in that order (values in ``[1, S + T]``, S the whole
        sequence's length): masks padding at the end of the sequence (``"front"``, ``"none"``) or of
        the text (``"rear"``). A sequence padded to equal shards with ``"rear"`` text is not a key
        prefix: use the uneven split instead of padding.
    backend: the local attention's backend on every rank (``attention``'s names); None lets
        ``attention`` choose per call. With a ring (R > 1) the local calls return the lse.

    Returns ``out`` ``[B, Sl, H, Dh]`` (contiguous, q's dtype), and with joint tensors
    ``(out, joint_out)``: ``joint_out`` ``[B, T, H, Dh]`` is the full text output, bit-identical on
    every rank (computed once, then broadcast and gathered). Contract: with R = 1 each head's
    attention is one local ``attention`` call over the whole joint sequence (the ``torch`` backend:
    ``torch.equal`` to the single-process ``attention``); with R > 1 the ring's partial outputs are
    merged in fp32 and rounded once (the declared ``close`` tolerance). A collective over both
    groups: every rank calls it with the same groups. Every rank raises ``UnsupportedInputError``
    (checked by small gathers before the exchange) when the ranks disagree on dtypes, batch,
    heads, head dim, joint length or strategy, kv_lens or the degrees, when shard lengths are not
    as above, or when one rank's own inputs are refused.
    """
    tensors = (q, k, v, joint_q, joint_k, joint_v, kv_lens)
    if is_compiling():
        names = tuple(None if g is None else g.group_name for g in (ulysses_group, ring_group))
        res = _custom_op(*tensors, *names, joint_strategy, backend)
        return res[0] if joint_q is None else (res[0], res[1])
    opts = (("ulysses_group", ulysses_group), ("ring_group", ring_group), ("joint_strategy", joint_strategy))
    try:
        run = USP_ATTENTION.plan(tensors, backend, None, opts)
    except UnsupportedInputError:
        _announce(ulysses_group, ring_group)
        raise
    return run(*tensors, ulysses_group, ring_group, joint_strategy, backend)


can_use_usp_attention = USP_ATTENTION.can_use
usp_attention_reference = USP_ATTENTION.reference


def _group(name: str | None):
    if name is None:
        return None
    from torch.distributed.distributed_c10d import _resolve_process_group

    return _resolve_process_group(name)


def _fake(q, k, v, joint_q, joint_k, joint_v, kv_lens, ulysses_group, ring_group, joint_strategy, backend):
    USP_ATTENTION.validate(q, k, v, joint_q, joint_k, joint_v, kv_lens, options=(
        ("ulysses_group", _group(ulysses_group)), ("ring_group", _group(ring_group)),
        ("joint_strategy", joint_strategy)))
    return [q.new_empty(q.shape)] + ([] if joint_q is None else [joint_q.new_empty(joint_q.shape)])


def _impl(q, k, v, joint_q, joint_k, joint_v, kv_lens, ulysses_group, ring_group, joint_strategy, backend):
    res = usp_attention(q, k, v, ulysses_group=_group(ulysses_group), ring_group=_group(ring_group), joint_q=joint_q,
                        joint_k=joint_k, joint_v=joint_v, joint_strategy=joint_strategy, kv_lens=kv_lens,
                        backend=backend)
    return list(res) if isinstance(res, tuple) else [res]


_custom_op = register_custom_op(
    "usp_attention", _impl, _fake,
    schema="(Tensor q, Tensor k, Tensor v, Tensor? joint_q, Tensor? joint_k, Tensor? joint_v, Tensor? kv_lens, "
           "str? ulysses_group, str? ring_group, str joint_strategy, str? backend) -> Tensor[]")
