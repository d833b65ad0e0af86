"""``attention``: bidirectional (non-causal) scaled dot-product attention forward.

Backends: ``attention_sdpa`` (PyTorch's cuDNN, flash and memory-efficient SDPA kernels),
``_attention_triton`` (our flash-attention forward: kv_lens, varlen, lse, GQA; CUDA and ROCm)
and ``attention_torch`` (the definition: explicit fp32 math; the CPU path).
"""

from __future__ import annotations

import math

import torch

from sgl_diffusion_core import (
    Backend,
    Contract,
    InputDesc,
    Op,
    device_arch,
    dtype_name,
    is_compiling,
    tensor_platform,
)

from . import _geometry as G
from . import _specs as S
from ._autoselect import AUTOSELECT, attention_autotune_cache  # noqa: F401 (ALSO_EXPORTS)

ALSO_EXPORTS = ("attention_autotune_cache",)


def _features(geom: G.Geometry, q, k, v) -> tuple[str, ...]:
    tags = [S.VARLEN if geom.varlen else geom.layout, S.head_dim_tag(geom.Dh)]
    if geom.kv_lens or not geom.varlen:  # a varlen call attends within its segments: not every key
        tags.append(S.KV_LENS if geom.kv_lens else S.DENSE)
    if geom.kv_lens_host:
        tags.append(S.KV_LENS_HOST)
    if geom.cu_host:
        tags.append(S.CU_SEQLENS_HOST)
    if geom.return_lse:
        tags.append(S.LSE)
    if geom.Hk != geom.Hq:
        tags.append(S.GQA)
    if G.long_rows(geom.Sq, geom.Sk, geom.Dh, geom.q, geom.k, geom.v, geom.o):
        tags.append(S.LONG_ROWS)
    if not (geom.varlen or geom.kv_lens) and geom.Hk == geom.Hq:
        tags += _torch_refusals(q, k, v, geom.layout)
    return tuple(tags)


def _torch_refusals(q, k, v, layout: str) -> list[str]:
    """PyTorch's own verdict on its SDPA kernels for these (dense, CUDA) inputs, as refusal tags."""
    if q.device.type != "cuda" or tensor_platform(q.device) != "cuda" or G.is_traced(q) or q.numel() == 0:
        return []
    checks = {"sdpa_cudnn": "can_use_cudnn_attention", "sdpa_flash": "can_use_flash_attention",
              "sdpa_efficient": "can_use_efficient_attention"}
    out = []
    try:
        views = [t.transpose(1, 2) if layout == "bshd" else t for t in (q, k, v)]
        params = torch.backends.cuda.SDPAParams(*views, None, 0.0, False, False)
        for name, fn in checks.items():
            check = getattr(torch.backends.cuda, fn, None)
            if check is None or not check(params, False):
                out.append(S.TORCH_REFUSES[name])
    except (AttributeError, RuntimeError, TypeError):  # a torch without the predicates: the declared limits
        return []
    return out


def _geometry(q, k, v, sizes, layout, kv_lens, cu_q, out, scale, max_seqlen_q, return_lse) -> G.Geometry:
    B, Sq, Sk, Hq, Hk, Dh = sizes
    varlen = layout == "thd"
    if varlen:
        B = cu_q.shape[0] - 1
    out_shape = tuple(q.shape)
    o = G.strides_of(out if out is not None else G.contiguous_strides(out_shape), layout)
    return G.Geometry(
        layout=layout, B=B, Sq=Sq, Sk=Sk, Hq=Hq, Hk=Hk, Dh=Dh, dtype=q.dtype,
        q=G.strides_of(q, layout), k=G.strides_of(k, layout), v=G.strides_of(v, layout), o=o,
        out_shape=out_shape, lse_shape=(Hq, Sq) if varlen else (B, Hq, Sq),
        kv_lens=kv_lens is not None, varlen=varlen, return_lse=bool(return_lse),
        scale=1.0 / math.sqrt(Dh) if scale is None else float(scale),
        max_seqlen_q=max_seqlen_q, given_out=out is not None,
        kv_lens_host=kv_lens is not None and kv_lens.device.type == "cpu" and q.device.type != "cpu",
        cu_host=varlen and cu_q.device.type == "cpu" and q.device.type != "cpu",
    )


def _scalar_problems(layout, scale, max_seqlen_q, max_seqlen_k, return_lse, varlen_given) -> list[str]:
    problems = []
    if not isinstance(layout, str):
        problems.append(f"layout must be a string ('bshd', 'bhsd' or 'thd'), got {type(layout).__name__}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                              or not math.isfinite(scale)):
        problems.append(f"scale must be a finite number or None (1/sqrt(Dh)), got {scale!r}")
    for name, m in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 0):
            problems.append(f"{name} must be a non-negative int or None, got {m!r}")
        elif m is not None and not varlen_given:
            problems.append(f"{name} is for varlen calls (cu_seqlens_q / cu_seqlens_k given); got {name}={m}")
    if not isinstance(return_lse, bool):
        problems.append(f"return_lse must be a bool, got {return_lse!r}")
    return problems


def _mode_problems(layout, kv_lens, cu_q, cu_k) -> list[str]:
    """The varlen arguments agree with the layout and with kv_lens."""
    problems = []
    if (cu_q is None) != (cu_k is None):
        problems.append("cu_seqlens_q and cu_seqlens_k come together (varlen): got only one of them")
    elif cu_q is not None and layout != "thd":
        problems.append(f"cu_seqlens_q / cu_seqlens_k describe packed [total, H, Dh] tensors: pass layout='thd' "
                        f"(got layout={layout!r})")
    elif cu_q is None and layout == "thd":
        problems.append("layout='thd' (packed varlen) needs cu_seqlens_q and cu_seqlens_k")
    if kv_lens is not None and cu_q is not None:
        problems.append("kv_lens and cu_seqlens are exclusive: a varlen batch carries its lengths in cu_seqlens_k")
    return problems


def _index_problems(q, layout, kv_lens, cu_q, cu_k, B: int, problems: list[str]) -> None:
    if kv_lens is not None:  # on q's device, or on the CPU (values known on the host)
        host = isinstance(kv_lens, torch.Tensor) and kv_lens.device.type == "cpu"
        G.check_index("kv_lens", kv_lens, kv_lens.device if host else q.device, (torch.int32, torch.int64), B,
                      problems)
    if isinstance(cu_q, torch.Tensor) and isinstance(cu_k, torch.Tensor):
        # on q's device, or both on the CPU (offsets known on the host)
        host = cu_q.device.type == "cpu" and cu_k.device.type == "cpu"
        n = cu_q.shape[0] if cu_q.dim() == 1 else -1
        G.check_index("cu_seqlens_q", cu_q, cu_q.device if host else q.device, (torch.int32,), n, problems)
        G.check_index("cu_seqlens_k", cu_k, cu_k.device if host else q.device, (torch.int32,), n, problems)
        if cu_q.dim() == 1 and cu_q.shape[0] < 1:
            problems.append("cu_seqlens_q must hold B + 1 >= 1 offsets")
    elif cu_q is not None or cu_k is not None:
        for name, t in (("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)):
            if t is not None and not isinstance(t, torch.Tensor):
                problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")


def describe_attention(
    q, k, v, kv_lens=None, cu_seqlens_q=None, cu_seqlens_k=None, out=None, *, layout="bshd", scale=None,
    max_seqlen_q=None, max_seqlen_k=None, return_lse=False,
) -> InputDesc:
    """Validate the arguments of ``attention`` and describe them for backend selection."""
    problems = _scalar_problems(layout, scale, max_seqlen_q, max_seqlen_k, return_lse, cu_seqlens_q is not None)
    problems += _mode_problems(layout, kv_lens, cu_seqlens_q, cu_seqlens_k)
    if problems or not G.check_operands({"q": q, "k": k, "v": v}, layout, problems):
        plat = tensor_platform(q.device) if isinstance(q, torch.Tensor) else None
        return InputDesc(platform=plat, problems=problems)
    plat = tensor_platform(q.device)
    arch = device_arch(plat, q.device.index) if plat in ("cuda", "hip") else None
    desc = InputDesc(plat, arch, (dtype_name(q.dtype),), q.shape[-1], (), problems)
    sizes = G.check_shapes(q, k, v, layout, problems)
    if sizes is None:
        return desc
    _index_problems(q, layout, kv_lens, cu_seqlens_q, cu_seqlens_k, sizes[0], problems)
    if out is not None:
        G.check_out(out, tuple(q.shape), q.dtype, q.device, problems)
        why = None if problems else G.overlap_problem(out, q, k, v)
        if why:
            problems.append(why)
    if problems:
        return desc
    B, Sq, Sk = sizes[:3]
    problems += G.value_problems(kv_lens, cu_seqlens_q, cu_seqlens_k, Sk, Sq, Sk, max_seqlen_q)
    if problems:
        return desc
    geom = _geometry(q, k, v, sizes, layout, kv_lens, cu_seqlens_q, out, scale, max_seqlen_q, return_lse)
    desc.layouts = _features(geom, q, k, v)
    empty = geom.B == 0 or geom.Sq == 0 or geom.Sk == 0 or geom.Hq == 0 or geom.Dh == 0
    desc.info = {"geom": geom, "empty": empty, "device": q.device}
    return desc


def per_call(q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, out, *, layout="bshd", max_seqlen_q=None,
             **_) -> str | None:
    """What the plan key cannot see: index values (CPU tensors only) and out's memory."""
    why = G.overlap_problem(out, q, k, v) if out is not None else None
    host_lens = kv_lens is not None and kv_lens.device.type == "cpu"
    host_cu = cu_seqlens_q is not None and cu_seqlens_q.device.type == "cpu"
    if why is None and (host_lens or host_cu):
        Sq, Sk = G.sizes_of(q, layout)[1], G.sizes_of(k, layout)[1]
        found = G.value_problems(kv_lens, cu_seqlens_q, cu_seqlens_k, Sk, Sq, Sk, max_seqlen_q)
        why = found[0] if found else None
    return why


def empty_result(geom: G.Geometry):
    """The runner of an input with no query, no key, no head or no head dim.

    No key (``Sk`` or every varlen key segment empty): output 0 and lse -inf, the attention over
    an empty key set as ``merge_attention_states`` treats it; with ``kv_lens`` every value is out of
    range ``[1, 0]``, so output and lse are NaN."""
    fill, lse_fill = (float("nan"), float("nan")) if geom.kv_lens else (0.0, float("-inf"))

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        o = torch.full(geom.out_shape, fill, dtype=geom.dtype, device=q.device) if out is None else out.fill_(fill)
        if not geom.return_lse:
            return o
        return o, torch.full(geom.lse_shape, lse_fill, dtype=torch.float32, device=q.device)

    return run


ATTENTION = Op(
    "attention.attention",
    distribution=S.DISTRIBUTION,
    summary="bidirectional softmax(q k^T * scale) v: bshd / bhsd / varlen, kv_lens, GQA, optional lse",
    describe=describe_attention,
    n_tensors=7,
    reference=".attention_torch:attention",
    backends=[
        Backend("sdpa_cudnn", ".attention_sdpa:prepare_cudnn", S.sdpa_caps("sdpa_cudnn"), S.ATTENTION_CLOSE,
                priority=40, notes=S.SDPA_NOTE.format("cuDNN"), executed_on=S.EXECUTED_SDPA),
        Backend("sdpa_flash", ".attention_sdpa:prepare_flash", S.sdpa_caps("sdpa_flash"), S.ATTENTION_CLOSE,
                priority=30, notes=S.SDPA_NOTE.format("flash"), executed_on=S.EXECUTED_SDPA),
        Backend("sdpa_efficient", ".attention_sdpa:prepare_efficient", S.sdpa_caps("sdpa_efficient"),
                S.ATTENTION_CLOSE, priority=20, notes=S.SDPA_NOTE.format("memory-efficient"),
                executed_on=S.EXECUTED_SDPA),
        Backend("flash_attn", ".attention_flash:prepare_flash_attn", S.FLASH_CAPS, S.ATTENTION_CLOSE, priority=25,
                notes=S.FLASH_NOTE),
        Backend("triton", "._attention_triton", S.TRITON_CAPS, S.ATTENTION_CLOSE, priority=10,
                notes=S.TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("sdpa_valid_keys", ".attention_sdpa:prepare_valid_keys", S.VALID_KEYS_CAPS, S.ATTENTION_CLOSE,
                priority=-1, notes=S.VALID_KEYS_NOTE, executed_on=S.EXECUTED_VALID_KEYS),
        Backend("torch", ".attention_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    per_call=per_call,
    bench=f"{S.BENCH}:attention_cases",
    chooser=AUTOSELECT,
)


def _options(layout, max_seqlen_q, max_seqlen_k, scale) -> tuple:
    return (("layout", layout), ("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k), ("scale", scale))


@ATTENTION.entry
def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    layout: str = "bshd",
    scale: float | None = None,
    kv_lens: torch.Tensor | None = None,
    cu_seqlens_q: torch.Tensor | None = None,
    cu_seqlens_k: torch.Tensor | None = None,
    max_seqlen_q: int | None = None,
    max_seqlen_k: int | None = None,
    return_lse: bool = False,
    out: torch.Tensor | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``softmax(q @ k^T * scale) @ v`` per (sample, head), bidirectional (no causal mask).

    q: ``[B, Sq, Hq, Dh]`` (``layout="bshd"``) or ``[B, Hq, Sq, Dh]`` (``"bhsd"``); k, v:
        ``[B, Sk, Hk, Dh]`` / ``[B, Hk, Sk, Dh]`` with ``Hk`` dividing ``Hq`` (GQA: q head h
        reads k/v head ``h // (Hq // Hk)``). One dtype: bf16 | fp16 (fp32 on the ``torch``
        backend). Any strides with the head dim contiguous: views of a fused QKV projection
        (``qkv[:, :, 0]`` of ``[B, S, 3, H, Dh]``) are read in place by the triton backend and
        passed to SDPA as they are.
    scale: default ``1 / sqrt(Dh)``.
    kv_lens: ``[B]`` int32 | int64, keys per sample: sample b attends to keys ``0 .. kv_lens[b]-1``
        (joint attention with padded text). On q's device, or on the CPU for a GPU call: lengths the
        caller knows on the host (a prompt's token counts) spare the ``sdpa_valid_keys`` backend its
        device-to-host read (a sync per call); the triton backend copies them to the device (not
        during CUDA-graph capture: there pass them on the device). Values must lie in ``[1, Sk]``:
        checked (an ``UnsupportedInputError``) when kv_lens is on the CPU; on a GPU they are not read
        on the host (that would sync), and a sample whose value is out of range gets NaN output rows
        and NaN lse, never a read outside k or v.
    cu_seqlens_q, cu_seqlens_k: ``[B + 1]`` int32 offsets of a packed varlen batch
        (``layout="thd"``: q ``[total_q, Hq, Dh]``, k / v ``[total_k, Hk, Dh]``, as the layout
        domain's ``build_varlen_meta`` / ``varlen_pack_qkv`` produce): segment b of q attends to
        segment b of k. Non-decreasing from 0 to the packed length: checked on CPU tensors; on a
        GPU a segment reaching outside the tensor gets NaN rows, and rows no segment covers are
        not written. A query segment whose key segment is empty gets output 0 and lse -inf. Both on
        q's device, or both on the CPU for a GPU call (offsets the caller knows on the host: checked
        there, and ``sdpa_valid_keys`` reads them without a device-to-host copy; the triton backend
        copies them to the device, not during CUDA-graph capture).
    max_seqlen_q: varlen only, an upper bound of the query segment lengths that sizes the triton
        backend's grid (as in flash-attn). None: the packed length ``total_q``, always a bound,
        with no host sync (programs past their segment's end return at once). Checked on CPU
        tensors; on a GPU a bound below the longest segment leaves that segment's rows past it
        unwritten, so pass the value ``build_varlen_meta`` returns or None. max_seqlen_k: accepted
        for flash-attn compatibility, not needed (each key loop reads its segment's length).
    return_lse: also return the log-sum-exp (natural log) of each query's scaled scores, fp32
        ``[B, Hq, Sq]`` (varlen ``[Hq, total_q]``): what ``merge_attention_states`` combines.
    out: optional preallocated output of q's shape and dtype (any strides, head dim
        contiguous, not overlapping q, k or v); returned.
    backend: ``None`` picks, on a GPU, the fastest correct backend for the call's bucket
        (device, dtype, head dim, features, powers of two of Sq, Sk and B * Hq): the bucket's
        first eager call times every backend that serves it on these inputs, checked against
        the ``torch`` definition, and keeps the winner (``attention_autotune_cache`` keeps it on
        disk); under ``torch.compile`` tracing or CUDA-graph capture, and on the CPU, the static
        priority: ``sdpa_cudnn`` > ``sdpa_flash`` > ``flash_attn`` > ``sdpa_efficient`` >
        ``triton`` > ``torch`` among those that serve the call (``flash_attn`` only where
        flash-attn is installed). Or one of those names, or
        ``sdpa_valid_keys`` (kv_lens and varlen calls; picked only by the measurement or by name):
        it reads kv_lens (the cu_seqlens) on the host (a device-to-host copy, which waits for the
        GPU) and runs SDPA over each sample's (segment's) valid keys.

    Returns the output (q's shape and dtype, contiguous in q's layout unless ``out`` is given),
    or ``(out, lse)`` with ``return_lse``. Raises ``UnsupportedInputError`` naming every
    backend's reason when no backend can serve the inputs.
    """
    if is_compiling():
        args = (q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, layout, max_seqlen_q, max_seqlen_k, scale, backend)
        res = _custom_op_lse(*args) if return_lse else _custom_op(*args)
        if out is None:
            return res
        out.copy_(res[0] if return_lse else res)
        return (out, res[1]) if return_lse else out
    opts = (("return_lse", return_lse), *_options(layout, max_seqlen_q, max_seqlen_k, scale))
    return ATTENTION.plan((q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, out), backend, None, opts)(
        q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, out, layout, max_seqlen_q, max_seqlen_k, scale)


can_use_attention = ATTENTION.can_use
attention_reference = ATTENTION.reference


def _fake(q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, layout, max_seqlen_q, max_seqlen_k, scale, backend,
          return_lse=False):
    ATTENTION.validate(q, k, v, kv_lens, cu_seqlens_q, cu_seqlens_k, None, options=(
        ("return_lse", return_lse), *_options(layout, max_seqlen_q, max_seqlen_k, scale)))
    o = q.new_empty(q.shape)
    if not return_lse:
        return o
    if layout == "thd":
        return o, q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    B, Sq, Hq, _ = G.sizes_of(q, layout)
    return o, q.new_empty((B, Hq, Sq), dtype=torch.float32)


def _fake_lse(*args):
    return _fake(*args, return_lse=True)


_SCHEMA = ("(Tensor q, Tensor k, Tensor v, Tensor? kv_lens, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
           "str layout, int? max_seqlen_q, int? max_seqlen_k, float? scale, str? backend)")
_KEYED = ("layout", "max_seqlen_q", "max_seqlen_k", "scale")
_custom_op = ATTENTION.custom_op("attention", fake=_fake, schema=_SCHEMA + " -> Tensor",
                                 options={"return_lse": False}, keyed=_KEYED, tensors=(0, 1, 2, 3, 4, 5, None))
_custom_op_lse = ATTENTION.custom_op("attention_lse", fake=_fake_lse, schema=_SCHEMA + " -> (Tensor, Tensor)",
                                     options={"return_lse": True}, keyed=_KEYED, tensors=(0, 1, 2, 3, 4, 5, None))
