"""Joint attention (Flux, SD3, Qwen-Image) layouts: image and text q, k, v concatenated along
the sequence into one allocation, and the attention output split back. Contract ``exact``
(``torch.equal`` to the eager chains in ``joint_torch``). Public entry points."""

from __future__ import annotations

import torch

from sgl_diffusion_core import is_compiling, resolve_target

from ._geometry import PermuteGeom, contiguous_strides
from ._plumbing import LayoutOp, check_dims, check_int, check_last_contiguous, new_desc, register_layout_op

_NAMES = ("img_q", "img_k", "img_v", "txt_q", "txt_k", "txt_v")


def describe_joint_qkv_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
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
    for which, S, off in (("txt", St, 0 if text_first else Si), ("img", Si, St if text_first else 0)):
        srcs = [(0, t.stride(0), t.stride(1), t.stride(2)) for n, t in ts.items() if n.startswith(which)]
        g = PermuteGeom(1, B, S, H, Dh, tuple(srcs), ((0, d[1], d[2], d[3]),) * 3)
        parts.append((g, which, off))
    desc.last_dim = Dh
    desc.info = {"geom": (shape, tuple(parts)), "shapes": shape}
    return desc


def describe_joint_split(out, s_txt, s_img, text_first=True, copy=False):
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


_dispatch = {"joint_qkv_cat": LayoutOp("joint_qkv_cat", describe_joint_qkv_cat, 6),
             "joint_split": LayoutOp("joint_split", describe_joint_split, 1)}
_ops = {
    "joint_qkv_cat": register_layout_op(
        "joint_qkv_cat", _dispatch["joint_qkv_cat"],
        "(Tensor img_q, Tensor img_k, Tensor img_v, Tensor txt_q, Tensor txt_k, Tensor txt_v, bool text_first, "
        "str? backend) -> Tensor"),
    "joint_split_copy": register_layout_op(
        "joint_split_copy", _dispatch["joint_split"],
        "(Tensor out, int s_txt, int s_img, bool text_first, bool copy, str? backend) -> (Tensor, Tensor)"),
}


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
    args = (img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first)
    if is_compiling():
        return _ops["joint_qkv_cat"](*args, backend)
    return _dispatch["joint_qkv_cat"](args, backend)


def joint_split(out: torch.Tensor, s_txt: int, s_img: int, *, text_first: bool = True, copy: bool = False,
                backend: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(txt, img) = (out[:, :s_txt], out[:, s_txt:])`` of the joint attention output
    (``text_first=False``: image tokens first). Always returns ``(txt, img)``.

    out: ``[B, s_txt + s_img, ...]``.
    copy=False (default): the two results are views of ``out`` (no data moves, no kernel).
    copy=True: new contiguous tensors (``out`` must be ``[B, S, H, Dh]``, last dim
        contiguous), equal to ``.contiguous()`` of the views. Contract ``exact``.
    """
    args = (out, s_txt, s_img, text_first, copy)
    if is_compiling() and copy:
        return _ops["joint_split_copy"](*args, backend)
    if is_compiling():
        return resolve_target("sgl_diffusion_layout.joint_torch:joint_split")(*args)
    return _dispatch["joint_split"](args, backend)


def can_use_joint_qkv_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v, *, text_first=True, backend=None) -> bool:
    """Whether ``joint_qkv_cat`` can serve these arguments (never raises, never allocates)."""
    return _dispatch["joint_qkv_cat"].can_use((img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first), backend)


def can_use_joint_split(out, s_txt, s_img, *, text_first=True, copy=False, backend=None) -> bool:
    """Whether ``joint_split`` can serve these arguments (never raises, never allocates)."""
    return _dispatch["joint_split"].can_use((out, s_txt, s_img, text_first, copy), backend)


def joint_qkv_cat_reference(img_q, img_k, img_v, txt_q, txt_k, txt_v, *, text_first=True):
    """The eager chain itself (the ``torch`` backend): the definition of the exact contract."""
    fn = resolve_target("sgl_diffusion_layout.joint_torch:joint_qkv_cat")
    return fn(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first)


def joint_split_reference(out, s_txt, s_img, *, text_first=True, copy=False):
    """The eager chain itself (the ``torch`` backend)."""
    return resolve_target("sgl_diffusion_layout.joint_torch:joint_split")(out, s_txt, s_img, text_first, copy)
