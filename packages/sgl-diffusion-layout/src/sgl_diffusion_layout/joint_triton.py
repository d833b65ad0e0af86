"""Triton backend of the joint-attention layout ops: the strided permutation copy of
``copy_triton`` (text part and image part of q, k and v: two launches of three tensors)."""

from __future__ import annotations

import torch

from ._plumbing import backend_from_prepare
from .copy_triton import copy_aot_variants, permute_launches


def _prep_cat(geom, img_q, img_k, img_v, txt_q, txt_k, txt_v):
    shape, parts = geom  # parts: (PermuteGeom, which ("txt" | "img"), sequence offset)
    device, dtype = img_q.device, img_q.dtype
    launches = [(permute_launches(g, device, dtype), which, off) for g, which, off in parts]

    def run(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
        out = torch.empty(shape, dtype=dtype, device=device)
        srcs = {"img": (img_q, img_k, img_v), "txt": (txt_q, txt_k, txt_v)}
        for launch, which, off in launches:
            launch(srcs[which], (out[0, :, off:], out[1, :, off:], out[2, :, off:]))
        return out

    return run


def _prep_split(geom, out):
    parts = geom  # ((PermuteGeom, offset, shape), ...) in memory order; () for copy=False
    if not parts:
        from .joint_torch import joint_split as views

        return lambda out, s_txt, s_img, text_first=True, copy=False: views(out, s_txt, s_img, text_first)
    device, dtype = out.device, out.dtype
    launches = [(permute_launches(g, device, dtype), off, shape) for g, off, shape in parts]

    def run(out, s_txt, s_img, text_first=True, copy=False):
        res = []
        for launch, off, shape in launches:
            r = torch.empty(shape, dtype=dtype, device=device)
            launch((out[:, off:],), (r,))
            res.append(r)
        return tuple(res) if text_first else (res[1], res[0])

    return run


joint_qkv_cat = backend_from_prepare(_prep_cat, 6)
joint_split = backend_from_prepare(_prep_split, 1)


def aot_joint_qkv_cat(platform: str = "cuda"):
    """Head tiles of FLUX / Qwen-Image (24 x 128) and SD3.5 Large (38 x 64)."""
    return copy_aot_variants(platform, "joint_qkv_cat", {"flux": (24, 128), "sd35l": (38, 64)})


def aot_joint_split(platform: str = "cuda"):
    return copy_aot_variants(platform, "joint_split", {"flux": (24, 128), "sd35l": (38, 64)}, nts=(1,))
