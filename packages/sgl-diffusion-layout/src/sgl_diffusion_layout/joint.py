"""Joint attention (Flux, SD3, Qwen-Image) layouts, one family defined in this file (``joint.py``):
``joint_qkv_cat`` (image and text q, k, v concatenated along the sequence into one
allocation) and ``joint_split`` (the attention output split back). Contract ``exact``
(``torch.equal`` to the eager chains in ``joint_torch``). Backends: ``joint_triton`` and
``joint_torch``."""

from __future__ import annotations

import torch

from sgl_diffusion_core import Op, is_compiling

from . import _specs as S
from ._common import check_dims, check_int, check_last_contiguous, fake_outputs, new_desc
from ._geometry import PermuteGeom, contiguous_strides

_NAMES = ("img_q", "img_k", "img_v", "txt_q", "txt_k", "txt_v")


def describe_joint_qkv_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
    """Validate the arguments of ``joint_qkv_cat``; ``info["geom"]``: (shape, parts)."""
    problems: list[str] = []
    ts = dict(zip(_NAMES, (img_q, img_k, img_v, txt_q, txt_k, txt_v)))
    desc, _ = new_desc(ts, problems)
    if problems or not all(check_dims(n, t, 4, "[B, S, H, Dh]", problems) for n, t in ts.items()):
        return desc
    for n, t in ts.items():
        check_last_contiguous(n, t, problems)
    B, Si, H, Dh = img_q.shape
    St = txt_q.shape[1]
    for n, t in ts.items():
        want = (B, Si if n.startswith("img") else St, H, Dh)
        if tuple(t.shape) != want:
            problems.append(f"{n} has shape {list(t.shape)}, expected {list(want)} (img_q's B, H, Dh; one "
                            f"sequence length per modality)")
    if not isinstance(text_first, bool):
        problems.append(f"text_first must be a bool, got {text_first!r}")
    if problems:
        return desc
    shape = (3, B, St + Si, H, Dh)
    d = contiguous_strides(shape)
    parts = []
    for which, n_tok, off in (("txt", St, 0 if text_first else Si), ("img", Si, St if text_first else 0)):
        srcs = [(0, t.stride(0), t.stride(1), t.stride(2)) for n, t in ts.items() if n.startswith(which)]
        g = PermuteGeom(1, B, n_tok, H, Dh, tuple(srcs), ((0, d[1], d[2], d[3]),) * 3)
        parts.append((g, which, off))
    desc.last_dim = Dh
    desc.info = {"geom": (shape, tuple(parts)), "shapes": shape}
    return desc


def describe_joint_split(out, s_txt, s_img, text_first=True, copy=False):
    """Validate the arguments of ``joint_split``; ``info["geom"]``: the parts to copy (none for views)."""
    problems: list[str] = []
    desc, _ = new_desc({"out": out}, problems)
    if problems:
        return desc
    ok = check_int("s_txt", s_txt, problems) & check_int("s_img", s_img, problems)
    if out.dim() < 2:
        problems.append(f"out must be [B, S_txt + S_img, ...] (at least 2-D), got shape {list(out.shape)}")
        return desc
    if ok and out.shape[1] != s_txt + s_img:
        problems.append(f"out has {out.shape[1]} tokens in dim 1, expected s_txt + s_img = {s_txt + s_img}")
    if not isinstance(text_first, bool) or not isinstance(copy, bool):
        problems.append(f"text_first and copy must be bools, got {text_first!r}, {copy!r}")
    if copy and out.dim() != 4:
        problems.append(f"copy=True needs out as [B, S, H, Dh] (4-D), got shape {list(out.shape)}")
    if copy:
        check_last_contiguous("out", out, problems)
    if problems:
        return desc
    parts = ()
    shapes = ()
    if copy:
        B, S, H, Dh = out.shape
        first, second = (s_txt, s_img) if text_first else (s_img, s_txt)
        res = []
        for off, n in ((0, first), (first, second)):
            shape = (B, n, H, Dh)
            d = contiguous_strides(shape)
            src = ((0, out.stride(0), out.stride(1), out.stride(2)),)
            res.append((PermuteGeom(1, B, n, H, Dh, src, ((0, d[0], d[1], d[2]),)), off, shape))
        parts = tuple(res)
        shapes = (res[0][2], res[1][2]) if text_first else (res[1][2], res[0][2])
        desc.last_dim = Dh
    desc.info = {"geom": parts, "shapes": shapes}
    return desc


JOINT_QKV_CAT = Op(
    "layout.joint_qkv_cat",
    distribution=S.DISTRIBUTION,
    summary="img/txt q, k, v -> one [3, B, S_txt+S_img, H, Dh] buffer (torch.cat along S)",
    describe=describe_joint_qkv_cat,
    n_tensors=6,
    reference=".joint_torch:joint_qkv_cat",
    backends=S.backends(".joint_triton:prepare_joint_qkv_cat", ".joint_torch:prepare_joint_qkv_cat", S.ROWS_NOTE,
                        aot="aot_joint_qkv_cat"),
    default_exact=True,
    bench=f"{S.BENCH}:joint_qkv_cat_cases",
)
JOINT_SPLIT = Op(
    "layout.joint_split",
    distribution=S.DISTRIBUTION,
    summary="(txt, img) of the joint attention output: views, or copies with copy=True",
    describe=describe_joint_split,
    n_tensors=1,
    reference=".joint_torch:joint_split",
    backends=S.backends(".joint_triton:prepare_joint_split", ".joint_torch:prepare_joint_split", S.ROWS_NOTE,
                        aot="aot_joint_split"),
    default_exact=True,
    bench=f"{S.BENCH}:joint_split_cases",
)


@JOINT_QKV_CAT.entry
def joint_qkv_cat(img_q: torch.Tensor, img_k: torch.Tensor, img_v: torch.Tensor, txt_q: torch.Tensor,
                  txt_k: torch.Tensor, txt_v: torch.Tensor, *, text_first: bool = True,
                  backend: str | None = None) -> torch.Tensor:
    """One ``[3, B, S_txt + S_img, H, Dh]`` buffer whose ``[0]``, ``[1]``, ``[2]`` are the joint
    q, k, v: ``out[j] == torch.cat([txt_j, img_j], dim=1)`` (``text_first=False``:
    ``torch.cat([img_j, txt_j], dim=1)``).

    img_q, img_k, img_v: ``[B, S_img, H, Dh]``; txt_q, txt_k, txt_v: ``[B, S_txt, H, Dh]``;
        one dtype, last dim contiguous, any other strides (views of fused projections).
    Returns a new contiguous tensor (``out[0]`` etc. are contiguous views). Contract ``exact``.
    """
    ts = (img_q, img_k, img_v, txt_q, txt_k, txt_v)
    if is_compiling():
        return _cat_op(*ts, text_first, backend)
    return JOINT_QKV_CAT.plan(ts, backend, None, (("text_first", text_first),))(*ts, text_first)


@JOINT_SPLIT.entry
def joint_split(out: torch.Tensor, s_txt: int, s_img: int, *, text_first: bool = True, copy: bool = False,
                backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(txt, img) = (out[:, :s_txt], out[:, s_txt:])`` of the joint attention output
    (``text_first=False``: image tokens first). Always returns ``(txt, img)``.

    out: ``[B, s_txt + s_img, ...]``.
    copy=False (default): the two results are views of ``out`` (no data moves, no kernel).
    copy=True: new contiguous tensors (``out`` must be ``[B, S, H, Dh]``, last dim
        contiguous), equal to ``.contiguous()`` of the views. Contract ``exact``.
    """
    if is_compiling():
        if copy:
            return _split_copy_op(out, s_txt, s_img, text_first, copy, backend)
        return JOINT_SPLIT.reference(out, s_txt, s_img, text_first, copy)  # views: nothing to trace
    opts = (("s_txt", s_txt), ("s_img", s_img), ("text_first", text_first), ("copy", copy))
    return JOINT_SPLIT.plan((out,), backend, None, opts)(out, s_txt, s_img, text_first, copy)


can_use_joint_qkv_cat = JOINT_QKV_CAT.can_use
joint_qkv_cat_reference = JOINT_QKV_CAT.reference
can_use_joint_split = JOINT_SPLIT.can_use
joint_split_reference = JOINT_SPLIT.reference


def _fake_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first, backend):
    desc = JOINT_QKV_CAT.checked(img_q, img_k, img_v, txt_q, txt_k, txt_v, options=(("text_first", text_first),))
    return fake_outputs(desc, img_q)


def _fake_split(out, s_txt, s_img, text_first, copy, backend):
    opts = (("s_txt", s_txt), ("s_img", s_img), ("text_first", text_first), ("copy", copy))
    return fake_outputs(JOINT_SPLIT.checked(out, options=opts), out)


_cat_op = JOINT_QKV_CAT.custom_op(
    "joint_qkv_cat", fake=_fake_cat, keyed=("text_first",),
    schema="(Tensor img_q, Tensor img_k, Tensor img_v, Tensor txt_q, Tensor txt_k, Tensor txt_v, bool text_first, "
           "str? backend) -> Tensor",
)
_split_copy_op = JOINT_SPLIT.custom_op(
    "joint_split_copy", fake=_fake_split, keyed=("s_txt", "s_img", "text_first", "copy"),
    schema="(Tensor out, int s_txt, int s_img, bool text_first, bool copy, str? backend) -> (Tensor, Tensor)",
)
