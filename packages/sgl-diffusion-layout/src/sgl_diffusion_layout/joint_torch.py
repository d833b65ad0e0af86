"""The eager chains of the joint-attention layout ops (the definition of their exact contract);
also their ``torch`` backend (``prepare_<op>``: the chain itself)."""

from __future__ import annotations

import torch


def joint_qkv_cat(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first: bool = True):
    B, Si, H, Dh = img_q.shape
    St = txt_q.shape[1]
    out = torch.empty((3, B, St + Si, H, Dh), dtype=img_q.dtype, device=img_q.device)
    for j, (i, t) in enumerate(((img_q, txt_q), (img_k, txt_k), (img_v, txt_v))):
        torch.cat([t, i] if text_first else [i, t], dim=1, out=out[j])
    return out


def joint_split(out, s_txt: int, s_img: int, text_first: bool = True, copy: bool = False):
    a, b = (s_txt, s_img) if text_first else (s_img, s_txt)
    first, second = out[:, :a], out[:, a:a + b]
    if copy:
        fmt = torch.contiguous_format  # a new tensor even where the slice is already contiguous
        first, second = first.clone(memory_format=fmt), second.clone(memory_format=fmt)
    return (first, second) if text_first else (second, first)


def prepare_joint_qkv_cat(geom, img_q, img_k, img_v, txt_q, txt_k, txt_v):
    return joint_qkv_cat


def prepare_joint_split(geom, out):
    return joint_split
