"""``nearest_upsample``: ``F.interpolate(x, scale_factor=..., mode="nearest" | "nearest-exact")``
for integer factors, 4-D and 5-D, any memory format. Contract ``exact``. Backends:
``nearest_upsample_triton`` and ``nearest_upsample_torch`` (the eager chain)."""

from __future__ import annotations

import functools
import math
import struct

import torch

from sgl_diffusion_core import Op, is_compiling

from . import _specs as S
from ._common import new_desc

MODES = ("nearest", "nearest-exact")


def _f32(v: float) -> float:
    """``v`` rounded to the nearest float32 (IEEE round-to-nearest-even)."""
    return struct.unpack("f", struct.pack("f", v))[0]


_MAX_CHECKED = 1 << 16


@functools.cache
def _index_is_integer_division(n_in: int, f: int, mode: str) -> bool:
    """Whether eager's source index (float math, ATen's formulas on CPU and CUDA) equals
    ``i // f`` for every output index ``i`` of a dim of ``n_in`` inputs upsampled by ``f``.

    Plain Python (no tensor op, so that it also runs inside ``torch.compile``'s fake
    implementation); cached per (size, factor, mode). The product of two float32 values is
    exact in a Python float, so rounding it once to float32 is a float32 multiply. Dims of
    more than ``_MAX_CHECKED`` outputs are not checked (the loop would take seconds) and
    count as departing.
    """
    if f == 1 or n_in == 0:
        return True
    if n_in * f > _MAX_CHECKED:  # not checked (far beyond any VAE dim): left to the torch backend
        return False
    scale = _f32(1.0 / f)  # static_cast<float>(1.0 / scale_factor)
    for i in range(n_in * f):
        if mode == "nearest":
            idx = [math.floor(_f32(_f32(float(i)) * scale))]
        else:  # CPU: (i + 0.5) in double times the float scale, to float, floor; CUDA: all float32
            idx = [math.floor(_f32((i + 0.5) * scale)), math.floor(_f32(_f32(_f32(float(i)) + 0.5) * scale))]
        if any(min(j, n_in - 1) != i // f for j in idx):
            return False
    return True


def _factors(scale_factor, nsp, problems):
    sf = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * nsp
    if len(sf) != nsp:
        problems.append(f"scale_factor {scale_factor!r} has {len(sf)} entries; x has {nsp} spatial dims")
        return None
    out = []
    for f in sf:
        if isinstance(f, bool) or not isinstance(f, (int, float)) or float(f) != int(f) or int(f) < 1:
            problems.append(f"scale_factor {scale_factor!r}: every factor must be a positive integer "
                            f"(2 or 2.0); non-integer factors are not supported")
            return None
        out.append(int(f))
    return out


def _out_format(x: torch.Tensor):
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        return torch.channels_last
    if x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d) and not x.is_contiguous():
        return torch.channels_last_3d
    return torch.contiguous_format


def describe_nearest_upsample(x, scale_factor, mode="nearest"):
    """Validate the arguments of ``nearest_upsample``; ``info["geom"]``: (shape, memory format,
    rows and tile sizes, their strides, factors)."""
    problems: list[str] = []
    desc, _ = new_desc({"x": x}, problems)
    if problems:
        return desc
    if x.dim() not in (4, 5):
        problems.append(f"x must be [N, C, H, W] or [N, C, D, H, W], got shape {list(x.shape)}")
        return desc
    if mode not in MODES:
        problems.append(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    fs = _factors(scale_factor, x.dim() - 2, problems)
    if problems:
        return desc
    N, C, *sp = x.shape
    shape = (N, C, *(s * f for s, f in zip(sp, fs)))
    fmt = _out_format(x)
    st = x.stride()
    if x.dim() == 4:
        fh, fw = fs
        Ho, Wo = shape[2:]
        if fmt == torch.contiguous_format:  # rows (n, c) | tile (h, w)
            sizes, strides, factors = (1, N, C, Ho, Wo), (0, st[0], st[1], st[2], st[3]), (1, 1, fh, fw)
        else:  # memory (n, h, w, c): rows (n, h) | tile (w, c)
            sizes, strides, factors = (1, N, Ho, Wo, C), (0, st[0], st[2], st[3], st[1]), (1, fh, fw, 1)
    else:
        fd, fh, fw = fs
        Do, Ho, Wo = shape[2:]
        if fmt == torch.contiguous_format:  # rows (n, c, d) | tile (h, w)
            sizes, strides, factors = (N, C, Do, Ho, Wo), (st[0], st[1], st[2], st[3], st[4]), (1, fd, fh, fw)
        else:  # memory (n, d, h, w, c): rows (n, d, h) | tile (w, c)
            sizes, strides, factors = (N, Do, Ho, Wo, C), (st[0], st[2], st[3], st[4], st[1]), (fd, fh, fw, 1)
    exact_index = all(_index_is_integer_division(s, f, mode) for s, f in zip(sp, fs))
    tag = {torch.contiguous_format: "contiguous", torch.channels_last: "channels_last",
           torch.channels_last_3d: "channels_last_3d"}[fmt]
    # at sizes where eager's float index formula departs from i // f (beyond ~2^22 per dim),
    # only the torch backend (eager itself) can serve
    desc.layouts = (tag,) if exact_index else (tag, "float-index-differs")
    desc.last_dim = x.shape[-1]
    desc.info = {"geom": (shape, fmt, sizes, strides, factors), "shapes": shape}
    return desc


NEAREST_UPSAMPLE = Op(
    "layout.nearest_upsample",
    distribution=S.DISTRIBUTION,
    summary="F.interpolate(x, scale_factor=f, mode='nearest'|'nearest-exact'), integer f",
    describe=describe_nearest_upsample,
    n_tensors=1,
    reference=".nearest_upsample_torch:nearest_upsample",
    backends=S.backends(".nearest_upsample_triton:prepare", ".nearest_upsample_torch:prepare", S.UPSAMPLE_NOTE,
                        aot="aot_nearest_upsample", caps=S.UPSAMPLE_TRITON_CAPS),
    default_exact=True,
    bench=f"{S.BENCH}:nearest_upsample_cases",
)


@NEAREST_UPSAMPLE.entry
def nearest_upsample(x: torch.Tensor, scale_factor, *, mode: str = "nearest",
                     backend: str | None = None) -> torch.Tensor:
    """``F.interpolate(x, scale_factor=scale_factor, mode=mode)`` for integer factors.

    x: ``[N, C, H, W]`` or ``[N, C, D, H, W]``, bf16 | fp16 | fp32, any strides
        (contiguous, channels_last, channels_last_3d, views).
    scale_factor: a positive integer (or integral float) for every spatial dim, or a tuple
        with one per spatial dim (``(1, 2, 2)``: time kept, space doubled).
    mode: ``"nearest"`` or ``"nearest-exact"`` (for integer factors both select ``i // f``;
        eager computes the index in float, and at sizes where that departs from ``i // f``
        only the ``torch`` backend serves).
    Returns a new tensor in x's memory format (channels_last(_3d) when x is, as eager does).
    Contract ``exact``.
    """
    if is_compiling():
        # one factor per spatial dim (the schema's float[]), as the plan describes it
        sf = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * (x.dim() - 2)
        return _custom_op(x, [float(f) for f in sf], mode, backend)
    sf = tuple(scale_factor) if isinstance(scale_factor, list) else scale_factor
    opts = (("scale_factor", sf), ("mode", mode))
    return NEAREST_UPSAMPLE.plan((x,), backend, None, opts)(x, scale_factor, mode)


can_use_nearest_upsample = NEAREST_UPSAMPLE.can_use
nearest_upsample_reference = NEAREST_UPSAMPLE.reference


def _fake(x, scale_factor, mode, backend):
    desc = NEAREST_UPSAMPLE.checked(x, options=(("scale_factor", tuple(scale_factor)), ("mode", mode)))
    return torch.empty(desc.info["shapes"], dtype=x.dtype, device=x.device, memory_format=desc.info["geom"][1])


_custom_op = NEAREST_UPSAMPLE.custom_op(
    "nearest_upsample", fake=_fake, keyed=("scale_factor", "mode"),
    schema="(Tensor x, float[] scale_factor, str mode, str? backend) -> Tensor",
)
