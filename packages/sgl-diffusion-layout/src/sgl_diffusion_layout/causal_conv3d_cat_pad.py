"""``causal_conv3d_cat_pad``: the input of a causal 3-D convolution of a video VAE (Wan,
HunyuanVideo), ``F.pad(torch.cat([cache_x, x], dim=2), padding)``, in one pass.
Contract ``exact``. Backends: ``causal_conv3d_cat_pad_triton`` and ``causal_conv3d_cat_pad_torch``
(the eager chain)."""

from __future__ import annotations

import torch

from sgl_diffusion_core import Op, is_compiling

from . import _specs as S
from ._common import check_dims, new_desc


def _channels_last(x: torch.Tensor) -> bool:
    return x.is_contiguous(memory_format=torch.channels_last_3d) and not x.is_contiguous()


def describe_causal_conv3d_cat_pad(x, cache_x, padding):
    """Validate the arguments of ``causal_conv3d_cat_pad``; ``info["geom"]``: (channels_last, shape,
    kernel scalars, (R1, R2, A, N))."""
    problems: list[str] = []
    desc, _ = new_desc({"x": x, "cache_x": cache_x}, problems)
    if problems or not check_dims("x", x, 5, "[B, C, T, H, W]", problems):
        return desc
    if cache_x is not None and check_dims("cache_x", cache_x, 5, "[B, C, Tc, H, W]", problems):
        if (cache_x.shape[0], cache_x.shape[1], *cache_x.shape[3:]) != (x.shape[0], x.shape[1], *x.shape[3:]):
            problems.append(f"cache_x has shape {list(cache_x.shape)}; expected x's B, C, H, W "
                            f"({list(x.shape)}) with any number of frames")
    pad = list(padding) if isinstance(padding, (list, tuple)) else None
    if pad is None or len(pad) not in (2, 4, 6) or not all(isinstance(p, int) and not isinstance(p, bool)
                                                           for p in pad):
        problems.append(f"padding must be 2, 4 or 6 ints (w_left, w_right, h_top, h_bottom, t_front, t_back), "
                        f"got {padding!r}")
    if problems:
        return desc
    pad = pad + [0] * (6 - len(pad))
    B, C, T, H, W = x.shape
    Tc = 0 if cache_x is None else cache_x.shape[2]
    To, Ho, Wo = Tc + T + pad[4] + pad[5], H + pad[2] + pad[3], W + pad[0] + pad[1]
    if min(To, Ho, Wo) < 0:
        problems.append(f"padding {tuple(padding)} crops more than the input holds (output T, H, W = "
                        f"{To}, {Ho}, {Wo})")
        return desc
    cl = _channels_last(x)
    shape = (B, C, To, Ho, Wo)
    R1, R2, A, N = (To, Ho, Wo, C) if cl else (C, To, Ho, Wo)
    c = cache_x if cache_x is not None else x
    scalars = (R1, R2, A, N, Tc, T, H, W, C, pad[4], pad[2], pad[0], *x.stride(), *c.stride())
    desc.last_dim = C if cl else W
    desc.layouts = ("channels_last_3d",) if cl else ("contiguous",)
    desc.info = {"geom": (cl, shape, scalars, (R1, R2, A, N)), "shapes": shape}
    return desc


CAUSAL_CONV3D_CAT_PAD = Op(
    "layout.causal_conv3d_cat_pad",
    distribution=S.DISTRIBUTION,
    summary="F.pad(torch.cat([cache_x, x], dim=2), padding) of [B, C, T, H, W]",
    describe=describe_causal_conv3d_cat_pad,
    n_tensors=2,
    reference=".causal_conv3d_cat_pad_torch:causal_conv3d_cat_pad",
    backends=S.backends(".causal_conv3d_cat_pad_triton:prepare", ".causal_conv3d_cat_pad_torch:prepare",
                        S.CAT_PAD_NOTE, aot="aot_causal_conv3d_cat_pad"),
    default_exact=True,
    bench=f"{S.BENCH}:causal_conv3d_cat_pad_cases",
)


@CAUSAL_CONV3D_CAT_PAD.entry
def causal_conv3d_cat_pad(x: torch.Tensor, cache_x: torch.Tensor | None, padding, *,
                          backend: str | None = None) -> torch.Tensor:
    """``F.pad(torch.cat([cache_x, x], dim=2), padding)`` (``cache_x=None``: ``F.pad(x, padding)``).

    x: ``[B, C, T, H, W]``, bf16 | fp16 | fp32, contiguous or channels_last_3d (other
        strides are read as they are).
    cache_x: ``[B, C, Tc, H, W]`` (the previous chunk's last frames), same dtype and device,
        any strides; or None.
    padding: ``(w_left, w_right, h_top, h_bottom, t_front, t_back)`` (or its first 2 or 4
        entries), as ``F.pad`` takes it; negative entries crop.
    Returns a new tensor ``[B, C, Tc + T + t_front + t_back, H + ..., W + ...]`` in x's
    memory format (channels_last_3d when x is, else contiguous), zeros in the padding.
    Contract ``exact``.
    """
    if is_compiling():
        return _custom_op(x, cache_x, list(padding), backend)
    pad = tuple(padding) if isinstance(padding, list) else padding
    return CAUSAL_CONV3D_CAT_PAD.plan((x, cache_x), backend, None, (("padding", pad),))(x, cache_x, padding)


can_use_causal_conv3d_cat_pad = CAUSAL_CONV3D_CAT_PAD.can_use
causal_conv3d_cat_pad_reference = CAUSAL_CONV3D_CAT_PAD.reference


def _fake(x, cache_x, padding, backend):
    desc = CAUSAL_CONV3D_CAT_PAD.checked(x, cache_x, options=(("padding", tuple(padding)),))
    fmt = torch.channels_last_3d if desc.info["geom"][0] else torch.contiguous_format
    return torch.empty(desc.info["shapes"], dtype=x.dtype, device=x.device, memory_format=fmt)


_custom_op = CAUSAL_CONV3D_CAT_PAD.custom_op(
    "causal_conv3d_cat_pad", fake=_fake, keyed=("padding",),
    schema="(Tensor x, Tensor? cache_x, int[] padding, str? backend) -> Tensor",
)
