# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

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

def merge_attention_states(
    o1: torch.Tensor,
    lse1: torch.Tensor,
    o2: torch.Tensor,
    lse2: torch.Tensor,
    *,
    layout: str = 'bshd',
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

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

__all__ = [
    "__version__",
    "attention",
    "attention_autotune_cache",
    "attention_reference",
    "can_use_attention",
    "can_use_merge_attention_states",
    "merge_attention_states",
    "merge_attention_states_reference",
]
