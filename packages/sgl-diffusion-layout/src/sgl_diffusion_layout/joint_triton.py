"""Triton backend of the joint-attention layout ops.

Where every source keeps a token's heads contiguous (``H * Dh`` elements: contiguous tensors
and views of a fused ``[B, S, 3, H, Dh]`` projection), the text and image parts of q, k and v
go in one launch of ``copy_triton``'s rows kernel: a 1-D program grid over 16 KB tiles of
the contiguous destination, no per-token programs, no masked head lanes (SD3.5's 38 heads
of 64 filled a 64-head tile to 59%), and no views sliced per call (the offsets are
arguments). Other strides take the strided permutation copy (one launch per part).

Large single-sample copies of contiguous parts (``B == 1``, at least ``DEVICE_COPY_MIN_BYTES``
moved in all: video sizes) go as one device copy per part instead (``Tensor.copy_`` of contiguous
blocks, the same copy the benchmarks' reference runs): at HunyuanVideo 720p (118800 image
tokens, 24 x 128) the device copies move 98.8% (``joint_qkv_cat``) and 98.4% (``joint_split``)
of copy bandwidth on the H200 (docs/benchmarks/hint_ab_h200.json), as eager's own copies do.

A ``config`` argument picks the launch (a sweep compares them): ``None`` (the default rule
above), ``"device_copy"`` (the per-part device copies wherever the parts allow them), a
``RowsConfig`` (the rows kernel with that tile) or a ``CopyConfig`` (the permutation copy,
one launch per part).
"""

from __future__ import annotations

import torch

from ._copy_triton import (
    CopyConfig,
    RowsConfig,
    RowsPart,
    copy_aot_variants,
    permute_launches,
    rows_aot_variants,
    rows_launch,
)

# below it the rows kernel's one launch: at Qwen-Image (273 MB moved) six device copies are
# host-bound (177 us of Python per call), the rows kernel moves 85.7% of copy
# (docs/benchmarks/hint_ab_h200.json)
DEVICE_COPY_MIN_BYTES = 1 << 30


def _device_copy(config, B: int, nbytes: int, contiguous: bool) -> bool:
    """Whether to copy part by part with ``Tensor.copy_`` (see the module docstring)."""
    if config == "device_copy":
        return B == 1 and contiguous
    return config is None and B == 1 and contiguous and nbytes >= DEVICE_COPY_MIN_BYTES


def _rows_cat(geom, device, dtype, cfg):
    """The rows launch of joint_qkv_cat, or None (a part's heads are not contiguous in a token,
    q, k, v of one part differ in strides, or the kernel's limits)."""
    shape, parts = geom
    _, B, S, H, Dh = shape
    K = H * Dh
    rparts = []
    for g, _which, off in parts:
        if len(set(g.src)) != 1 or (g.R2 > 0 and H > 1 and g.src[0][3] != Dh):
            return None
        _, sb, ss, _ = g.src[0]
        rparts.append(RowsPart(S=g.R2, ss=ss, sb=sb, soff=0, db=S * K, doff=off * K))
    return rows_launch(tuple(rparts), B, K, B * S * K, 3, device, dtype, cfg)


def prepare_joint_qkv_cat(geom, img_q, img_k, img_v, txt_q, txt_k, txt_v, config=None):
    """A runner for one call signature of ``joint_qkv_cat`` (``config``: see the module docstring)."""
    shape, parts = geom  # parts: (PermuteGeom, which ("txt" | "img"), sequence offset): txt, then img
    device, dtype = img_q.device, img_q.dtype
    srcs = (img_q, img_k, img_v, txt_q, txt_k, txt_v)
    nbytes = 2 * sum(t.numel() for t in srcs) * img_q.element_size()
    if _device_copy(config, shape[1], nbytes, all(t.is_contiguous() for t in srcs)):
        spans = [(which, off, g.R2) for g, which, off in parts]

        def run(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
            out = torch.empty(shape, dtype=dtype, device=device)
            src = {"img": (img_q, img_k, img_v), "txt": (txt_q, txt_k, txt_v)}
            for which, off, n in spans:
                for j in range(3):
                    out[j, 0, off : off + n].copy_(src[which][j][0])
            return out

        return run
    if config == "device_copy":
        raise ValueError("joint_qkv_cat: device copies need B == 1 and contiguous parts")
    rows = None if isinstance(config, CopyConfig) else _rows_cat(geom, device, dtype, config)
    if rows is None and isinstance(config, RowsConfig):
        raise ValueError(f"joint_qkv_cat: the rows kernel cannot serve these strides ({config})")
    if rows is not None:

        def run(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
            out = torch.empty(shape, dtype=dtype, device=device)
            rows((txt_q, txt_k, txt_v, img_q, img_k, img_v), (out, out))
            return out

        return run

    launches = [(permute_launches(g, device, dtype, config), which, off) for g, which, off in parts]

    def run(img_q, img_k, img_v, txt_q, txt_k, txt_v, text_first=True):
        out = torch.empty(shape, dtype=dtype, device=device)
        srcs = {"img": (img_q, img_k, img_v), "txt": (txt_q, txt_k, txt_v)}
        for launch, which, off in launches:
            launch(srcs[which], (out[0, :, off:], out[1, :, off:], out[2, :, off:]))
        return out

    return run


def _rows_split(parts, device, dtype, cfg):
    (g0, off0, shape0), (g1, off1, _) = parts
    B, _, H, Dh = shape0
    K = H * Dh
    _, sb, ss, sh = g0.src[0]
    if H > 1 and sh != Dh:
        return None
    rparts = tuple(RowsPart(S=g.R2, ss=ss, sb=sb, soff=off * ss, db=g.R2 * K, doff=0) for g, off, _ in parts)
    return rows_launch(rparts, B, K, 0, 1, device, dtype, cfg)


def prepare_joint_split(geom, out, config=None):
    """A runner for one call signature of ``joint_split`` (``config``: see the module docstring)."""
    parts = geom  # ((PermuteGeom, offset, shape), ...) in memory order; () for copy=False
    if not parts:
        from .joint_torch import joint_split as views

        return lambda out, s_txt, s_img, text_first=True, copy=False: views(out, s_txt, s_img, text_first)
    device, dtype = out.device, out.dtype
    shapes = [shape for _, _, shape in parts]
    if _device_copy(config, shapes[0][0], 2 * out.numel() * out.element_size(), out.is_contiguous()):
        spans = [(off, shape[1]) for _, off, shape in parts]

        def run(out, s_txt, s_img, text_first=True, copy=False):
            res = [out[:, off : off + n].clone() for off, n in spans]  # B == 1: contiguous blocks
            return tuple(res) if text_first else (res[1], res[0])

        return run
    if config == "device_copy":
        raise ValueError("joint_split: device copies need B == 1 and a contiguous out")
    rows = None if isinstance(config, CopyConfig) else _rows_split(parts, device, dtype, config)
    if rows is None and isinstance(config, RowsConfig):
        raise ValueError(f"joint_split: the rows kernel cannot serve these strides ({config})")
    if rows is not None:

        def run(out, s_txt, s_img, text_first=True, copy=False):
            a = torch.empty(shapes[0], dtype=dtype, device=device)
            b = torch.empty(shapes[1], dtype=dtype, device=device)
            rows((out,) * 6, (a, b))
            return (a, b) if text_first else (b, a)

        return run

    launches = [(permute_launches(g, device, dtype, config), off, shape) for g, off, shape in parts]

    def run(out, s_txt, s_img, text_first=True, copy=False):
        res = []
        for launch, off, shape in launches:
            r = torch.empty(shape, dtype=dtype, device=device)
            launch((out[:, off:],), (r,))
            res.append(r)
        return tuple(res) if text_first else (res[1], res[0])

    return run


def aot_joint_qkv_cat(platform: str = "cuda"):
    """Head tiles of FLUX / Qwen-Image (24 x 128) and SD3.5 Large (38 x 64) for the permutation
    copy; the rows kernel at their row lengths, flat (contiguous q, k, v) and by rows (views of a
    fused projection)."""
    return copy_aot_variants(platform, "joint_qkv_cat", {"flux": (24, 128), "sd35l": (38, 64)}) + rows_aot_variants(
        platform, "joint_qkv_cat", {"flux": (3072, False), "sd35l": (2432, False), "flat": (2432, True)}, nts=(3,)
    )


def aot_joint_split(platform: str = "cuda"):
    return copy_aot_variants(
        platform, "joint_split", {"flux": (24, 128), "sd35l": (38, 64)}, nts=(1,)
    ) + rows_aot_variants(
        platform, "joint_split", {"flux": (3072, False), "sd35l": (2432, False), "flat": (2432, True)}, nts=(1,)
    )
