# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__
from .attention_error import AttentionError as AttentionError
from .block_map import BlockMap as BlockMap
from .usp_mesh import UspMesh as UspMesh

def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = 'bshd',
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    out: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def attention_autotune_cache(
    path: str | None,
) -> None: ...

def attention_error(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    *,
    block_map: BlockMap | None = None,
    block: int | tuple[int, int] | None = None,
    layout: str = 'bshd',
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
) -> AttentionError: ...

def video_block_map(
    grid: tuple[int, int, int],
    *,
    tile: tuple[int, int, int] = (4, 4, 4),
    window: tuple[int, int, int],
    text_tokens: int = 0,
    text_first: bool = False,
    block: int | tuple[int, int] = 64,
    tile_order: bool = False,
    device: torch.device | str | None = None,
) -> BlockMap: ...

def video_tile_order(
    grid: tuple[int, int, int],
    *,
    tile: tuple[int, int, int] = (4, 4, 4),
    text_tokens: int = 0,
    text_first: bool = False,
    device: torch.device | str | None = None,
) -> torch.Tensor: ...

def block_map_from_mask(
    mask_blocks: torch.Tensor,
    *,
    block: int | tuple[int, int] = 64,
) -> BlockMap: ...

def token_mask(
    block_map: BlockMap,
    seqlen_q: int,
    seqlen_k: int,
) -> torch.Tensor: ...

def block_sparse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_map: BlockMap,
    *,
    block: tuple[int, int] | None = None,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def merge_attention_states(
    o1: torch.Tensor,
    lse1: torch.Tensor,
    o2: torch.Tensor,
    lse2: torch.Tensor,
    *,
    layout: str = 'bshd',
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def quantized_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    kv_lens: torch.Tensor | None = None,
    qk: str = 'int8',
    pv: str = 'bf16',
    smooth_k: bool = True,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

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
    joint_strategy: str = 'none',
    kv_lens: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def init_usp(
    ulysses: int = 1,
    ring: int = 1,
    *,
    group=None,
    device_mesh=None,
) -> UspMesh | None: ...

def usp_shard(
    x: torch.Tensor,
    mesh: UspMesh,
    dim: int = 1,
) -> torch.Tensor: ...

def usp_gather(
    x: torch.Tensor,
    mesh: UspMesh,
    dim: int = 1,
) -> torch.Tensor: ...

def can_use_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = 'bshd',
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    out: torch.Tensor | None = None,
    backend: str | None = None,
) -> bool: ...

def attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = 'bshd',
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    out: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_block_sparse_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_map: BlockMap,
    *,
    block: tuple[int, int] | None = None,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> bool: ...

def block_sparse_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    block_map: BlockMap,
    *,
    block: tuple[int, int] | None = None,
    scale: float | None = None,
    return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_merge_attention_states(
    o1: torch.Tensor,
    lse1: torch.Tensor,
    o2: torch.Tensor,
    lse2: torch.Tensor,
    *,
    layout: str = 'bshd',
    backend: str | None = None,
) -> bool: ...

def merge_attention_states_reference(
    o1: torch.Tensor,
    lse1: torch.Tensor,
    o2: torch.Tensor,
    lse2: torch.Tensor,
    *,
    layout: str = 'bshd',
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_quantized_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    kv_lens: torch.Tensor | None = None,
    qk: str = 'int8',
    pv: str = 'bf16',
    smooth_k: bool = True,
    scale: float | None = None,
    return_lse: bool = False,
    backend: str | None = None,
) -> bool: ...

def quantized_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    kv_lens: torch.Tensor | None = None,
    qk: str = 'int8',
    pv: str = 'bf16',
    smooth_k: bool = True,
    scale: float | None = None,
    return_lse: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_usp_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    ulysses_group=None,
    ring_group=None,
    joint_q: torch.Tensor | None = None,
    joint_k: torch.Tensor | None = None,
    joint_v: torch.Tensor | None = None,
    joint_strategy: str = 'none',
    kv_lens: torch.Tensor | None = None,
    backend: str | None = None,
) -> bool: ...

def usp_attention_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    ulysses_group=None,
    ring_group=None,
    joint_q: torch.Tensor | None = None,
    joint_k: torch.Tensor | None = None,
    joint_v: torch.Tensor | None = None,
    joint_strategy: str = 'none',
    kv_lens: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

__all__ = [
    "AttentionError",
    "BlockMap",
    "UspMesh",
    "__version__",
    "attention",
    "attention_autotune_cache",
    "attention_error",
    "attention_reference",
    "block_map_from_mask",
    "block_sparse_attention",
    "block_sparse_attention_reference",
    "can_use_attention",
    "can_use_block_sparse_attention",
    "can_use_merge_attention_states",
    "can_use_quantized_attention",
    "can_use_usp_attention",
    "init_usp",
    "merge_attention_states",
    "merge_attention_states_reference",
    "quantized_attention",
    "quantized_attention_reference",
    "token_mask",
    "usp_attention",
    "usp_attention_reference",
    "usp_gather",
    "usp_shard",
    "video_block_map",
    "video_tile_order",
]
