"""``merge_attention_states``: two partial attentions over disjoint key sets combined into the attention
over their union (ring attention, split text / image attention).

Backends: ``merge_attention_states_triton`` (CUDA, ROCm) and ``merge_attention_states_torch``
(the definition).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, device_arch, dtype_name, is_compiling, tensor_platform

from . import _geometry as G
from . import _specs as S


@dataclass(frozen=True)
class Geometry:
    """Sizes, element strides ``(sb, ss, sh)`` of o1 / o2 / the output and ``(sb, sh, ss)`` of the two lse
    (varlen ``thd``: one sample of ``S = T`` tokens, every ``sb`` 0)."""

    layout: str
    B: int
    S: int
    H: int
    D: int
    dtype: torch.dtype
    o1: tuple[int, int, int]
    o2: tuple[int, int, int]
    o: tuple[int, int, int]
    lse1: tuple[int, int, int]
    lse2: tuple[int, int, int]
    out_shape: tuple[int, ...]
    lse_shape: tuple[int, ...]


def _lse_strides(t: torch.Tensor, layout: str) -> tuple[int, int, int]:
    st = t.stride()
    return (0, st[0], st[1]) if layout == "thd" else (st[0], st[1], st[2])


def _check(o1, lse1, o2, lse2, layout: str, problems: list[str]) -> tuple[int, int, int, int] | None:
    """``(B, S, H, D)`` when the four tensors agree with each other and the layout."""
    if not G.check_operands({"o1": o1, "o2": o2}, layout, problems):
        return None
    if tuple(o2.shape) != tuple(o1.shape):
        problems.append(f"o2 of shape {list(o2.shape)} must have o1's shape {list(o1.shape)}")
        return None
    B, S_, H, D = G.sizes_of(o1, layout)
    want = (H, S_) if layout == "thd" else (B, H, S_)
    for name, t in (("lse1", lse1), ("lse2", lse2)):
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        elif t.dtype != torch.float32 or tuple(t.shape) != want or t.device != o1.device:
            problems.append(f"{name} must be a float32 tensor of shape {list(want)} on {o1.device} "
                            f"(the lse of o's layout), got {t.dtype} {list(t.shape)} on {t.device}")
    return None if problems else (B, S_, H, D)


def describe_merge_attention_states(o1, lse1, o2, lse2, *, layout="bshd") -> InputDesc:
    """Validate the arguments of ``merge_attention_states`` and describe them for backend selection."""
    problems: list[str] = []
    if not isinstance(layout, str):
        problems.append(f"layout must be 'bshd', 'bhsd' or 'thd', got {layout!r}")
        return InputDesc(platform=None, problems=problems)
    if not isinstance(o1, torch.Tensor):
        problems.append(f"o1 must be a torch.Tensor, got {type(o1).__name__}")
        return InputDesc(platform=None, problems=problems)
    plat = tensor_platform(o1.device)
    arch = device_arch(plat, o1.device.index) if plat in ("cuda", "hip") else None
    desc = InputDesc(plat, arch, (dtype_name(o1.dtype),), o1.shape[-1] if o1.dim() else None, (), problems)
    sizes = _check(o1, lse1, o2, lse2, layout, problems)
    if sizes is None:
        return desc
    B, S_, H, D = sizes
    out_shape = tuple(o1.shape)
    geom = Geometry(
        layout=layout, B=B, S=S_, H=H, D=D, dtype=o1.dtype,
        o1=tuple(vars(G.strides_of(o1, layout)).values()), o2=tuple(vars(G.strides_of(o2, layout)).values()),
        o=tuple(vars(G.strides_of(G.contiguous_strides(out_shape), layout)).values()),
        lse1=_lse_strides(lse1, layout), lse2=_lse_strides(lse2, layout),
        out_shape=out_shape, lse_shape=tuple(lse1.shape),
    )
    desc.info = {"geom": geom, "empty": o1.numel() == 0}
    return desc


def empty_result(geom: Geometry):
    """The runner of an input with no element: new empty outputs of the right shapes."""

    def run(o1, *_):
        return (torch.empty(geom.out_shape, dtype=geom.dtype, device=o1.device),
                torch.empty(geom.lse_shape, dtype=torch.float32, device=o1.device))

    return run


MERGE_ATTENTION_STATES = Op(
    "attention.merge_attention_states",
    distribution=S.DISTRIBUTION,
    summary="combine two partial attentions over disjoint key sets (o, lse) into the attention over their union",
    describe=describe_merge_attention_states,
    n_tensors=4,
    reference=".merge_attention_states_torch:merge_attention_states",
    backends=[
        Backend("triton", ".merge_attention_states_triton", S.MERGE_TRITON_CAPS, S.MERGE_CLOSE, priority=10,
                notes=S.MERGE_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".merge_attention_states_torch", S.MERGE_TORCH_CAPS, Contract.exact(),
                notes=S.MERGE_TORCH_NOTE, executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    bench=f"{S.BENCH}:merge_attention_states_cases",
)


@MERGE_ATTENTION_STATES.entry
def merge_attention_states(
    o1: torch.Tensor,
    lse1: torch.Tensor,
    o2: torch.Tensor,
    lse2: torch.Tensor,
    *,
    layout: str = "bshd",
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention over the union of two disjoint key sets, from the attention over each.

    ``lse = logaddexp(lse1, lse2)``; ``o = o1 * exp(lse1 - lse) + o2 * exp(lse2 - lse)`` in
    fp32, rounded once to o1's dtype: exactly the math of one attention over both key sets
    (``attention(..., return_lse=True)`` gives each part). A part with lse -inf (no key) has
    weight 0 and its output is not read into the sum; both -inf give output 0 and lse -inf.

    o1, o2: ``[B, S, H, D]`` (``layout="bshd"``), ``[B, H, S, D]`` (``"bhsd"``) or varlen
        ``[T, H, D]`` (``"thd"``); one shape and dtype (bf16 | fp16 | fp32), any strides with the
        head dim contiguous.
    lse1, lse2: fp32 ``[B, H, S]`` (varlen ``[H, T]``), natural log, any strides.
    backend: ``None`` (``triton`` on CUDA / ROCm, ``torch`` elsewhere), ``"triton"`` or ``"torch"``.

    Returns ``(o, lse)``: o contiguous in the layout's shape and o1's dtype, lse contiguous fp32.
    """
    if is_compiling():
        return _custom_op(o1, lse1, o2, lse2, layout, backend)
    return MERGE_ATTENTION_STATES.plan((o1, lse1, o2, lse2), backend, None, (("layout", layout),))(
        o1, lse1, o2, lse2, layout)


can_use_merge_attention_states = MERGE_ATTENTION_STATES.can_use
merge_attention_states_reference = MERGE_ATTENTION_STATES.reference


def _fake(o1, lse1, o2, lse2, layout, backend):
    MERGE_ATTENTION_STATES.validate(o1, lse1, o2, lse2, options=(("layout", layout),))
    return o1.new_empty(o1.shape), lse1.new_empty(lse1.shape)


_custom_op = MERGE_ATTENTION_STATES.custom_op(
    "merge_attention_states", fake=_fake, keyed=("layout",),
    schema="(Tensor o1, Tensor lse1, Tensor o2, Tensor lse2, str layout, str? backend) -> (Tensor, Tensor)",
)
