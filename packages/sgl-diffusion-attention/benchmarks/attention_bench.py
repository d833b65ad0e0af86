"""Benchmark cases of ``attention`` and ``merge_attention_states`` at the production shapes of the
attention issue (bf16): FLUX, Qwen-Image, Wan 720p, HunyuanVideo 720p, FLUX's tokens at head dims 64
and 256, the padded-text cases (kv_lens) and a packed varlen batch (a FLUX and a Qwen-Image sample).

Providers of ``attention``: ``sgl_diffusion`` (the op with ``backend=None``: on a GPU, the backend
that its first call of the bucket measured fastest), ``sgl_diffusion(triton)`` (our kernel), ``sdpa``
(PyTorch's default SDPA; with kv_lens the boolean key mask ``[B, 1, 1, Sk]`` diffusers passes),
``sgl_diffusion(host kv_lens)`` (``backend=None`` with the lengths on the CPU, as a mount that
knows them passes them; varlen: ``sgl_diffusion(host cu_seqlens)``, the offsets on the CPU),
``sdpa(valid keys)`` (dense SDPA over the valid keys only, batch 1: the bound a kv_lens kernel aims
at) and ``torch.compile`` of the ``sdpa`` provider. Attention is compute bound: each case carries
``flops = 4 * B * H * Sq * Sk_valid * Dh`` (in ``extra``) besides the bytes of q, k, v and
the output (the copy reference the runner reports is not its limit). ``merge_attention_states``:
``sgl_diffusion``, ``eager`` (its definition) and ``torch.compile`` of it; bytes: two outputs and two
lse read, one of each written.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

# name -> (B, S, H, Dh, padded keys per sample)
SHAPES: dict[str, tuple[int, int, int, int, int]] = {
    "flux": (1, 4608, 24, 128, 0),
    "qwen-image": (1, 4352, 24, 128, 0),
    "wan-720p": (1, 75600, 40, 128, 0),
    "hunyuan-720p": (1, 119056, 24, 128, 200),
    "flux-dh64": (1, 4608, 48, 64, 0),
    "flux-dh256": (1, 4608, 12, 256, 0),
    "qwen-image-pad100": (1, 4352, 24, 128, 100),
    "flux-b2-pad64": (2, 4608, 24, 128, 64),
}


def _sdpa(q, k, v, mask=None):
    out = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                           attn_mask=mask)
    return out.transpose(1, 2)


def _providers(q, k, v, kv_lens, S: int, pad: int) -> dict:
    from sgl_diffusion_attention import attention

    mask = None
    if kv_lens is not None:
        mask = (torch.arange(S, device=q.device) < kv_lens[:, None])[:, None, None, :]  # diffusers' boolean form
    compiled = torch.compile(_sdpa, dynamic=False)
    providers = {
        "sgl_diffusion": lambda: attention(q, k, v, kv_lens=kv_lens),
        "sgl_diffusion(triton)": lambda: attention(q, k, v, kv_lens=kv_lens, backend="triton"),
        "sdpa": lambda: _sdpa(q, k, v, mask),
        "torch.compile": lambda: compiled(q, k, v, mask),
    }
    if kv_lens is not None:  # lengths the caller knows on the host (a mount reads them once per mask)
        host_lens = kv_lens.cpu()
        providers["sgl_diffusion(host kv_lens)"] = lambda: attention(q, k, v, kv_lens=host_lens)
    if pad and q.shape[0] == 1:
        valid = S - pad
        providers["sdpa(valid keys)"] = lambda: _sdpa(q, k[:, :valid], v[:, :valid])
    return providers


# varlen: name -> (segment lengths, H, Dh); packed [total, H, Dh] with cu_seqlens on the device
VARLEN_SHAPES: dict[str, tuple[tuple[int, ...], int, int]] = {
    "varlen-flux-qwen": ((4608, 4352), 24, 128),  # a FLUX and a Qwen-Image sample packed
}


def _varlen_case(name: str, device: torch.device, dtype: torch.dtype) -> bench.BenchCase:
    """Providers: ours (``backend=None`` with the offsets on the device and on the CPU, ``triton``), SDPA over
    the block-diagonal boolean mask of the packed batch (its ``torch.compile``), and ``sdpa(valid keys)``: dense
    SDPA per segment, the bound."""
    from sgl_diffusion_attention import attention

    lens, H, Dh = VARLEN_SHAPES[name]
    total = sum(lens)
    g = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(total, H, Dh, device=device, dtype=dtype, generator=g) for _ in range(3))
    offsets = [0]
    for n in lens:
        offsets.append(offsets[-1] + n)
    cu = torch.tensor(offsets, dtype=torch.int32, device=device)
    seg = torch.repeat_interleave(torch.arange(len(lens), device=device), torch.tensor(lens, device=device))
    mask = (seg[:, None] == seg[None, :])[None, None]  # [1, 1, total, total]: a token sees its own segment
    kw = {"layout": "thd", "cu_seqlens_q": cu, "cu_seqlens_k": cu, "max_seqlen_q": max(lens)}
    host = dict(kw, cu_seqlens_q=cu.cpu(), cu_seqlens_k=cu.cpu())  # offsets known on the host
    q4, k4, v4 = q[None], k[None], v[None]
    torch._dynamo.reset()
    compiled = torch.compile(_sdpa, dynamic=False)

    def per_segment():
        for a, e in zip(offsets, offsets[1:]):
            _sdpa(q4[:, a:e], k4[:, a:e], v4[:, a:e])

    providers = {
        "sgl_diffusion": lambda: attention(q, k, v, **kw),
        "sgl_diffusion(triton)": lambda: attention(q, k, v, backend="triton", **kw),
        "sgl_diffusion(host cu_seqlens)": lambda: attention(q, k, v, **host),
        "sdpa": lambda: _sdpa(q4, k4, v4, mask),
        "torch.compile": lambda: compiled(q4, k4, v4, mask),
        "sdpa(valid keys)": per_segment,
    }

    def check():
        ref = providers["sdpa"]()[0]
        for which in ("sgl_diffusion", "sgl_diffusion(triton)", "sgl_diffusion(host cu_seqlens)"):
            testing.assert_close(providers[which]().float(), ref.float(), atol=2e-2, rtol=2**-6)

    return bench.BenchCase(
        name=name, shape=f"[{total}, {H}, {Dh}] segments {list(lens)}", dtype=str(dtype).removeprefix("torch."),
        bytes=bench.tensor_bytes(q, k, v, q), providers=providers, check=check,
        extra={"flops": 4 * H * Dh * sum(n * n for n in lens)},
    )


def attention_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                    names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    for name in names or [*SHAPES, *VARLEN_SHAPES]:
        if name in VARLEN_SHAPES:
            yield _varlen_case(name, device, dtype)
            continue
        if name not in SHAPES:
            raise ValueError(f"unknown attention bench case {name!r}; known: {', '.join([*SHAPES, *VARLEN_SHAPES])}")
        B, S, H, Dh, pad = SHAPES[name]
        g = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(B, S, H, Dh, device=device, dtype=dtype, generator=g) for _ in range(3))
        kv_lens = torch.full((B,), S - pad, dtype=torch.int32, device=device) if pad else None
        torch._dynamo.reset()
        providers = _providers(q, k, v, kv_lens, S, pad)

        def check(providers=providers, dtype=dtype):
            ref = providers["sdpa"]()
            for which in ("sgl_diffusion", "sgl_diffusion(triton)", "sgl_diffusion(host kv_lens)"):
                if which not in providers:
                    continue
                testing.assert_close(providers[which]().float(), ref.float(), atol=2e-2, rtol=2**-6)

        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {H}, {Dh}]" + (f" kv_lens=S-{pad}" if pad else ""),
            dtype=str(dtype).removeprefix("torch."), bytes=bench.tensor_bytes(q, k, v, q), providers=providers,
            check=check, extra={"flops": 4 * B * H * S * (S - pad) * Dh},
        )


MERGE_SHAPES: dict[str, tuple[int, int, int, int]] = {"flux": (1, 4608, 24, 128), "wan-720p": (1, 75600, 40, 128)}


def merge_attention_states_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                                 names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_attention import merge_attention_states, merge_attention_states_reference

    for name in names or list(MERGE_SHAPES):
        if name not in MERGE_SHAPES:
            raise ValueError(f"unknown merge_attention_states bench case {name!r}; known: {', '.join(MERGE_SHAPES)}")
        B, S, H, D = MERGE_SHAPES[name]
        g = torch.Generator(device=device).manual_seed(0)
        o1, o2 = (torch.randn(B, S, H, D, device=device, dtype=dtype, generator=g) for _ in range(2))
        l1, l2 = (torch.randn(B, H, S, device=device, generator=g) for _ in range(2))
        torch._dynamo.reset()
        compiled = torch.compile(merge_attention_states_reference, dynamic=False)

        def check(o1=o1, l1=l1, o2=o2, l2=l2):
            got, ref = merge_attention_states(o1, l1, o2, l2), merge_attention_states_reference(o1, l1, o2, l2)
            testing.assert_close(got[0], ref[0])
            testing.assert_close(got[1], ref[1])

        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {H}, {D}]", dtype=str(dtype).removeprefix("torch."),
            bytes=bench.tensor_bytes(o1, o2, o1, l1, l2, l1),
            providers={"sgl_diffusion": lambda a=(o1, l1, o2, l2): merge_attention_states(*a),
                       "eager": lambda a=(o1, l1, o2, l2): merge_attention_states_reference(*a),
                       "torch.compile": lambda a=(o1, l1, o2, l2), c=compiled: c(*a)},
            check=check,
        )


# quantized_attention: name -> (B, S, H, Dh, padded keys per sample); q, k, v drawn as real activations are
# shaped (k with a per-channel offset, the outlier channels DiTs carry)
QUANT_SHAPES: dict[str, tuple[int, int, int, int, int]] = {
    "flux": (1, 4608, 24, 128, 0),
    "wan-720p": (1, 75600, 40, 128, 0),
    "hunyuan-720p": (1, 119056, 24, 128, 200),
}


def quantized_attention_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                              names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    """``quantized_attention`` (int8 q / k; ``qk=fp8`` and ``qk=fp8, pv=fp8`` beside it) against the dense
    providers of the same run: the ``attention`` op, our dense Triton kernel and PyTorch's SDPA; ``extra``
    holds the flops and the int8 and all-e4m3 outputs' ``attention_error`` against fp32 attention on the
    first 2048 queries."""
    from sgl_diffusion_attention import attention, attention_error, quantized_attention

    for name in names or list(QUANT_SHAPES):
        if name not in QUANT_SHAPES:
            raise ValueError(f"unknown quantized_attention bench case {name!r}; known: {', '.join(QUANT_SHAPES)}")
        B, S, H, Dh, pad = QUANT_SHAPES[name]
        g = torch.Generator(device=device).manual_seed(0)
        q = torch.randn(B, S, H, Dh, device=device, dtype=dtype, generator=g)
        k = (torch.randn(B, S, H, Dh, device=device, generator=g)
             + 4 * torch.randn(1, 1, H, Dh, device=device, generator=g)).to(dtype)
        v = torch.randn(B, S, H, Dh, device=device, dtype=dtype, generator=g)
        kv_lens = torch.full((B,), S - pad, dtype=torch.int32, device=device) if pad else None
        head = 2048
        err = attention_error(q[:, :head], k, v, quantized_attention(q, k, v, kv_lens=kv_lens)[:, :head],
                              kv_lens=kv_lens)
        err8 = attention_error(q[:, :head], k, v,
                               quantized_attention(q, k, v, kv_lens=kv_lens, qk="fp8", pv="fp8")[:, :head],
                               kv_lens=kv_lens)
        a = (q, k, v)
        providers = {
            "sgl_diffusion": lambda a=a, n=kv_lens: quantized_attention(*a, kv_lens=n),
            "sgl_diffusion(qk=fp8)": lambda a=a, n=kv_lens: quantized_attention(*a, kv_lens=n, qk="fp8"),
            "sgl_diffusion(qk=fp8,pv=fp8)": lambda a=a, n=kv_lens: quantized_attention(*a, kv_lens=n, qk="fp8",
                                                                                        pv="fp8"),
            "attention(dense)": lambda a=a, n=kv_lens: attention(*a, kv_lens=n),
            "attention(triton)": lambda a=a, n=kv_lens: attention(*a, kv_lens=n, backend="triton"),
        }
        if not pad:
            providers["sdpa(dense)"] = lambda a=a: _sdpa(*a)
        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {H}, {Dh}]" + (f" kv_lens=S-{pad}" if pad else ""),
            dtype=str(dtype).removeprefix("torch."), bytes=bench.tensor_bytes(q, k, v, q), providers=providers,
            extra={"flops": 4 * B * H * S * (S - pad) * Dh, "cosine": err.cosine, "rel_l1": err.rel_l1,
                   "max_abs": err.max_abs, "cosine_pv_fp8": err8.cosine, "rel_l1_pv_fp8": err8.rel_l1},
        )
