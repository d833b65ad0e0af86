"""``attention`` on PyTorch's own SDPA kernels: cuDNN, flash and memory-efficient (CUDA only).

Each backend calls its kernel's own ATen op (``aten._scaled_dot_product_{cudnn,flash,efficient}_attention``),
what ``torch.nn.functional.scaled_dot_product_attention`` dispatches to when that kernel is chosen, with
the arguments it passes for an inference call (no mask, no dropout, not causal, the log-sum-exp only where
it is asked for), on ``[B, H, S, Dh]`` views of the inputs (a bshd input is passed as its transposed view:
no copy). Calling the op directly costs less host time than forcing the kernel with
``torch.nn.attention.sdpa_kernel`` around the functional (that context manager alone took 8.7 us per call
on a CPU where the op's dispatch takes 1.4 us). With ``return_lse`` the ``[B, H, S]`` rows of the op's
log-sum-exp are kept (cuDNN adds a trailing dim, the memory-efficient kernel pads S to a multiple of 32).
They serve dense calls only: ``kv_lens``, varlen and GQA are refused with that reason (the ``triton``
backend serves them), and so is any input torch's own check (``torch.backends.cuda.can_use_*_attention``)
refuses; the selection sees both as tags.

``sdpa_valid_keys`` serves the kv_lens and varlen calls the others refuse (no lse, no GQA): it reads
kv_lens (or the ``cu_seqlens``) on the host and runs ``scaled_dot_product_attention`` over each run of
consecutive samples (segments) that share a length, on views of their valid keys, which is dense attention
over fewer keys (PyTorch picks the kernel). The read is a device-to-host copy that waits for the GPU (none for
kv_lens on the CPU), so it is not possible during CUDA-graph capture: there the runner launches the triton
kernel instead (the torch definition where Triton is missing or a sample is too long for the kernel). A
length outside ``[1, Sk]`` gives NaN rows, as the definition does. Its priority is below the definition's:
only ``backend=None``'s measurement or its name picks it.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import UnsupportedInputError

from ._geometry import segments_problem

_CUDNN = torch.ops.aten._scaled_dot_product_cudnn_attention.default
_FLASH = torch.ops.aten._scaled_dot_product_flash_attention.default
_EFFICIENT = torch.ops.aten._scaled_dot_product_efficient_attention.default


def _cudnn(q, k, v, scale, lse: bool):
    return _CUDNN(q, k, v, None, lse, 0.0, False, False, scale=scale)[:2]


def _flash(q, k, v, scale, lse: bool):  # the flash kernel writes its log-sum-exp either way
    return _FLASH(q, k, v, 0.0, False, False, scale=scale)[:2]


def _efficient(q, k, v, scale, lse: bool):
    return _EFFICIENT(q, k, v, None, lse, 0.0, False, scale=scale)[:2]


def _prepare(kernel, geom):
    bshd = geom.layout == "bshd"
    scale = geom.scale
    lse_rows = geom.return_lse

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *_):
        if bshd:
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        o, lse = kernel(q, k, v, scale, lse_rows)
        if lse_rows:
            B, H, S = q.shape[0], q.shape[1], q.shape[2]
            lse = lse.reshape(B, H, -1)[:, :, :S].float().contiguous()
        if bshd:
            o = o.transpose(1, 2)
        o = out.copy_(o) if out is not None else o.contiguous()
        return (o, lse) if lse_rows else o

    return run


def prepare_cudnn(geom, *tensors):
    """The ``sdpa_cudnn`` backend's runner."""
    return _prepare(_cudnn, geom)


def prepare_flash(geom, *tensors):
    """The ``sdpa_flash`` backend's runner."""
    return _prepare(_flash, geom)


def prepare_efficient(geom, *tensors):
    """The ``sdpa_efficient`` backend's runner."""
    return _prepare(_efficient, geom)


def _runs(lens: list[int]) -> list[tuple[int, int, int]]:
    """``(first, end, length)`` of each run of consecutive samples with one kv length."""
    runs, b = [], 0
    while b < len(lens):
        e = b + 1
        while e < len(lens) and lens[e] == lens[b]:
            e += 1
        runs.append((b, e, lens[b]))
        b = e
    return runs


def prepare_valid_keys(geom, q, k, v, kv_lens, cu_q, cu_k, out):
    """The ``sdpa_valid_keys`` backend's runner (see the module docstring)."""
    capturing_runner = _capture_runner(geom, q, k, v, kv_lens, cu_q, cu_k, out)
    if geom.varlen:
        return _varlen_runner(geom, capturing_runner)
    bshd = geom.layout == "bshd"
    scale, Sk, shape, dtype = geom.scale, geom.Sk, geom.out_shape, geom.dtype

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *rest):
        if _capturing(q):
            return capturing_runner(q, k, v, kv_lens, cu_q, cu_k, out, *rest)
        runs = _runs(kv_lens.tolist())
        if out is None and len(runs) == 1 and 1 <= runs[0][2] <= Sk:
            return _valid_keys(q, k, v, runs[0][2], bshd, scale).contiguous()
        o = out if out is not None else torch.empty(shape, dtype=dtype, device=q.device)
        for b, e, n in runs:
            if 1 <= n <= Sk:
                o[b:e].copy_(_valid_keys(q[b:e], k[b:e], v[b:e], n, bshd, scale))
            else:
                o[b:e].fill_(float("nan"))
        return o

    return run


def _segment_runs(cq: list[int], ck: list[int]) -> list[tuple[int, int, int, int, int]]:
    """``(q start, k start, segments, q length, k length)`` of each run of consecutive varlen segments that
    share their query and key lengths (their rows are evenly spaced: one batched call)."""
    runs: list[tuple[int, int, int, int, int]] = []
    for b in range(len(cq) - 1):
        ql, kl = cq[b + 1] - cq[b], ck[b + 1] - ck[b]
        if runs and runs[-1][3:] == (ql, kl):
            qs, ks, n, _, _ = runs[-1]
            runs[-1] = (qs, ks, n + 1, ql, kl)
        else:
            runs.append((cq[b], ck[b], 1, ql, kl))
    return runs


def _varlen_runner(geom, capturing_runner):
    """Varlen (``[total, H, Dh]`` with ``cu_seqlens``): both offset tensors read on the host in one copy, then
    SDPA per run of segments with one query and one key length, on ``[n, S, H, Dh]`` views of the packed rows.
    Offsets that are not non-decreasing from 0 to the packed lengths raise, as the definition does; a segment
    without keys gets output 0."""
    scale, Sq, Sk, shape, dtype = geom.scale, geom.Sq, geom.Sk, geom.out_shape, geom.dtype

    def run(q, k, v, kv_lens, cu_q, cu_k, out, *rest):
        if _capturing(q):
            return capturing_runner(q, k, v, kv_lens, cu_q, cu_k, out, *rest)
        n_q = cu_q.shape[0]
        offsets = torch.cat([cu_q, cu_k.to(cu_q.dtype)]).tolist()
        cq, ck = offsets[:n_q], offsets[n_q:]
        for name, c, total in (("cu_seqlens_q", cq, Sq), ("cu_seqlens_k", ck, Sk)):
            why = segments_problem(name, c, total)
            if why:
                raise UnsupportedInputError(f"attention.attention: unsupported input:\n  - {why}")
        o = out if out is not None else torch.empty(shape, dtype=dtype, device=q.device)
        for qs, ks, n, ql, kl in _segment_runs(cq, ck):
            rows = o[qs:qs + n * ql]
            if ql == 0:
                continue
            if kl == 0:
                rows.zero_()
                continue
            qv, kv, vv = (t[a:a + n * m].unflatten(0, (n, m)) for t, a, m in ((q, qs, ql), (k, ks, kl), (v, ks, kl)))
            rows.unflatten(0, (n, ql)).copy_(_valid_keys(qv, kv, vv, kl, True, scale))
        return o

    return run


def _capture_runner(geom, *tensors):
    """What runs during CUDA-graph capture, where kv_lens cannot be read on the host: the first backend of the
    registry's static order that accepts these inputs, this one aside (the only one that reads kv_lens on the
    host): the triton kernel, or the torch definition where the kernel refuses the inputs (rows too long for
    its 32-bit offsets) or its module does not import."""
    from sgl_diffusion_core import describe, eligible

    desc = describe("attention.attention", *tensors, layout=geom.layout, scale=geom.scale,
                    max_seqlen_q=geom.max_seqlen_q)
    for spec in eligible("attention.attention", desc):
        if spec.backend == "sdpa_valid_keys":
            continue
        try:
            return spec.load()(geom, *tensors)
        except ImportError:
            continue
    raise UnsupportedInputError("attention: no backend but sdpa_valid_keys serves these inputs during capture")


def _capturing(q: torch.Tensor) -> bool:
    return q.is_cuda and torch.cuda.is_current_stream_capturing()


def _valid_keys(q, k, v, n: int, bshd: bool, scale: float) -> torch.Tensor:
    """SDPA of q over the first n keys of k / v, in q's layout (a view of SDPA's result)."""
    if bshd:
        q, k, v = q.transpose(1, 2), k[:, :n].transpose(1, 2), v[:, :n].transpose(1, 2)
    else:
        k, v = k[:, :, :n], v[:, :, :n]
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
    return o.transpose(1, 2) if bshd else o
