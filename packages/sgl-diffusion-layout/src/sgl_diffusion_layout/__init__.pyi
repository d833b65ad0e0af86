# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

def causal_conv3d_cat_pad(
    x: torch.Tensor,
    cache_x: torch.Tensor | None,
    padding,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def joint_qkv_cat(
    img_q: torch.Tensor,
    img_k: torch.Tensor,
    img_v: torch.Tensor,
    txt_q: torch.Tensor,
    txt_k: torch.Tensor,
    txt_v: torch.Tensor,
    *,
    text_first: bool = True,
    backend: str | None = None,
) -> torch.Tensor: ...

def joint_split(
    out: torch.Tensor,
    s_txt: int,
    s_img: int,
    *,
    text_first: bool = True,
    copy: bool = False,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def nearest_upsample(
    x: torch.Tensor,
    scale_factor,
    *,
    mode: str = 'nearest',
    backend: str | None = None,
) -> torch.Tensor: ...

def ulysses_pack_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def ulysses_unpack_qkv(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def ulysses_pack_out(
    o: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def ulysses_unpack_out(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def usp_merge_heads(
    x: torch.Tensor,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def usp_split_heads(
    y: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def ulysses_all_to_all(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    group=None,
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def ulysses_all_to_all_out(
    o: torch.Tensor,
    group=None,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def build_varlen_meta(
    mask: torch.Tensor,
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]: ...

def varlen_pack_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    indices: torch.Tensor,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def varlen_scatter(
    out: torch.Tensor,
    inverse_or_indices: torch.Tensor,
    batch: int,
    seqlen: int,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor: ...

def can_use_causal_conv3d_cat_pad(
    x: torch.Tensor,
    cache_x: torch.Tensor | None,
    padding,
    *,
    backend: str | None = None,
) -> bool: ...

def causal_conv3d_cat_pad_reference(
    x: torch.Tensor,
    cache_x: torch.Tensor | None,
    padding,
) -> torch.Tensor: ...

def can_use_joint_qkv_cat(
    img_q: torch.Tensor,
    img_k: torch.Tensor,
    img_v: torch.Tensor,
    txt_q: torch.Tensor,
    txt_k: torch.Tensor,
    txt_v: torch.Tensor,
    *,
    text_first: bool = True,
    backend: str | None = None,
) -> bool: ...

def joint_qkv_cat_reference(
    img_q: torch.Tensor,
    img_k: torch.Tensor,
    img_v: torch.Tensor,
    txt_q: torch.Tensor,
    txt_k: torch.Tensor,
    txt_v: torch.Tensor,
    *,
    text_first: bool = True,
) -> torch.Tensor: ...

def can_use_joint_split(
    out: torch.Tensor,
    s_txt: int,
    s_img: int,
    *,
    text_first: bool = True,
    copy: bool = False,
    backend: str | None = None,
) -> bool: ...

def joint_split_reference(
    out: torch.Tensor,
    s_txt: int,
    s_img: int,
    *,
    text_first: bool = True,
    copy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_nearest_upsample(
    x: torch.Tensor,
    scale_factor,
    *,
    mode: str = 'nearest',
    backend: str | None = None,
) -> bool: ...

def nearest_upsample_reference(
    x: torch.Tensor,
    scale_factor,
    *,
    mode: str = 'nearest',
) -> torch.Tensor: ...

def can_use_ulysses_pack_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> bool: ...

def ulysses_pack_qkv_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    world_size: int,
) -> torch.Tensor: ...

def can_use_ulysses_unpack_qkv(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
    *,
    backend: str | None = None,
) -> bool: ...

def ulysses_unpack_qkv_reference(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def can_use_ulysses_pack_out(
    o: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> bool: ...

def ulysses_pack_out_reference(
    o: torch.Tensor,
    world_size: int,
) -> torch.Tensor: ...

def can_use_ulysses_unpack_out(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
    *,
    backend: str | None = None,
) -> bool: ...

def ulysses_unpack_out_reference(
    buf: torch.Tensor,
    world_size: int,
    batch: int = 1,
) -> torch.Tensor: ...

def can_use_usp_merge_heads(
    x: torch.Tensor,
    *,
    backend: str | None = None,
) -> bool: ...

def usp_merge_heads_reference(
    x: torch.Tensor,
) -> torch.Tensor: ...

def can_use_usp_split_heads(
    y: torch.Tensor,
    world_size: int,
    *,
    backend: str | None = None,
) -> bool: ...

def usp_split_heads_reference(
    y: torch.Tensor,
    world_size: int,
) -> torch.Tensor: ...

def can_use_build_varlen_meta(
    mask: torch.Tensor,
    *,
    backend: str | None = None,
) -> bool: ...

def build_varlen_meta_reference(
    mask: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]: ...

def can_use_varlen_pack_qkv(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    indices: torch.Tensor,
    *,
    backend: str | None = None,
) -> bool: ...

def varlen_pack_qkv_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    indices: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def can_use_varlen_scatter(
    out: torch.Tensor,
    inverse_or_indices: torch.Tensor,
    batch: int,
    seqlen: int,
    *,
    backend: str | None = None,
) -> bool: ...

def varlen_scatter_reference(
    out: torch.Tensor,
    inverse_or_indices: torch.Tensor,
    batch: int,
    seqlen: int,
) -> torch.Tensor: ...

__all__ = [
    "__version__",
    "build_varlen_meta",
    "build_varlen_meta_reference",
    "can_use_build_varlen_meta",
    "can_use_causal_conv3d_cat_pad",
    "can_use_joint_qkv_cat",
    "can_use_joint_split",
    "can_use_nearest_upsample",
    "can_use_ulysses_pack_out",
    "can_use_ulysses_pack_qkv",
    "can_use_ulysses_unpack_out",
    "can_use_ulysses_unpack_qkv",
    "can_use_usp_merge_heads",
    "can_use_usp_split_heads",
    "can_use_varlen_pack_qkv",
    "can_use_varlen_scatter",
    "causal_conv3d_cat_pad",
    "causal_conv3d_cat_pad_reference",
    "joint_qkv_cat",
    "joint_qkv_cat_reference",
    "joint_split",
    "joint_split_reference",
    "nearest_upsample",
    "nearest_upsample_reference",
    "ulysses_all_to_all",
    "ulysses_all_to_all_out",
    "ulysses_pack_out",
    "ulysses_pack_out_reference",
    "ulysses_pack_qkv",
    "ulysses_pack_qkv_reference",
    "ulysses_unpack_out",
    "ulysses_unpack_out_reference",
    "ulysses_unpack_qkv",
    "ulysses_unpack_qkv_reference",
    "usp_merge_heads",
    "usp_merge_heads_reference",
    "usp_split_heads",
    "usp_split_heads_reference",
    "varlen_pack_qkv",
    "varlen_pack_qkv_reference",
    "varlen_scatter",
    "varlen_scatter_reference",
]
