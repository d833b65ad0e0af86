"""Capabilities, feature tags and contracts of the attention ops' backends (data; imported by each op module).

Backend selection sees an attention call through the tags ``describe_attention`` puts in
``InputDesc.layouts``: the memory layout, each feature the call asks for (``kv_lens``, varlen,
``return_lse``, GQA) and the head dim. A backend serves a call when it lists every tag of it;
a tag it does not list is the reason ``explain`` and ``UnsupportedInputError`` give.
"""

from __future__ import annotations

from dataclasses import replace

from sgl_diffusion_core import Capabilities, Contract

DISTRIBUTION = "sgl-diffusion-attention"
BENCH = "benchmarks/attention_bench.py"

BSHD = "bshd"
BHSD = "bhsd"
VARLEN = "varlen (layout='thd' with cu_seqlens)"
KV_LENS = "kv_lens (padded keys)"
KV_LENS_HOST = "kv_lens on the CPU for a GPU call"
CU_SEQLENS_HOST = "cu_seqlens on the CPU for a GPU call"
DENSE = "every key valid (no kv_lens)"
LSE = "return_lse"
GQA = "GQA (k/v with fewer heads than q)"
LONG_ROWS = "a sample spanning 2**31 elements or more"
# dense CUDA inputs torch's own predicate (torch.backends.cuda.can_use_*_attention) refuses: every
# backend but that SDPA kernel serves them
TORCH_REFUSES = {
    "sdpa_cudnn": "inputs torch's cuDNN SDPA check refuses",
    "sdpa_flash": "inputs torch's flash SDPA check refuses",
    "sdpa_efficient": "inputs torch's memory-efficient SDPA check refuses",
}


def head_dim_tag(dh: int) -> str:
    return f"head_dim={dh}"


# head dims the Triton kernel serves (a power-of-two tile of the head dim, 96 masked in a 128 tile)
TRITON_HEAD_DIMS = (32, 64, 96, 128, 256)
# head dims declared for PyTorch's SDPA kernels (torch's own check is consulted on top, on CUDA)
SDPA_HEAD_DIMS = (32, 64, 96, 128, 256)

_HALF = ("bfloat16", "float16")
_ARCH = (("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950"))

TRITON_CAPS = Capabilities(
    platforms=("cuda", "hip"),
    dtypes=_HALF,
    min_arch=_ARCH,
    layouts=(BSHD, BHSD, VARLEN, KV_LENS, KV_LENS_HOST, CU_SEQLENS_HOST, DENSE, LSE, GQA, *TORCH_REFUSES.values(),
             *(head_dim_tag(d) for d in TRITON_HEAD_DIMS)),
    interpretable=True,
    requires=("triton",),
)
TORCH_CAPS = Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu"))  # every tag: the definition


def sdpa_caps(name: str) -> Capabilities:
    """One SDPA backend: dense bshd / bhsd inputs (with or without the lse) with as many k/v heads as q
    heads, on CUDA."""
    others = tuple(v for k, v in TORCH_REFUSES.items() if k != name)
    return Capabilities(platforms=("cuda",), dtypes=_HALF, min_arch=(("cuda", 80),),
                        layouts=(BSHD, BHSD, DENSE, LONG_ROWS, LSE, *others,
                                 *(head_dim_tag(d) for d in SDPA_HEAD_DIMS)))


# flash_attn: an installed FlashAttention-2 (the flash-attn package): dense and varlen, GQA, the lse, on CUDA
FLASH_CAPS = Capabilities(platforms=("cuda",), dtypes=_HALF, min_arch=(("cuda", 80),),
                          layouts=(BSHD, BHSD, VARLEN, DENSE, LSE, GQA, *TORCH_REFUSES.values(),
                                   *(head_dim_tag(d) for d in (32, 64, 96, 128, 256))),
                          requires=("flash_attn",))
FLASH_NOTE = ("an installed FlashAttention-2 (flash_attn): bshd as it is (bhsd as transposed views), GQA, varlen, the "
              "lse where the function returns it as [B, H, S] ([H, total] for varlen); never executed here (no "
              "flash-attn in the test environments): backend=None times it against the others and rejects a "
              "deviating version")


# sdpa_valid_keys: kv_lens (bshd / bhsd) and varlen calls only (no lse, as many k/v heads as q heads), on CUDA
# (no kernel of its own: during CUDA-graph capture its runner launches the triton backend's)
VALID_KEYS_CAPS = Capabilities(platforms=("cuda",), dtypes=_HALF, min_arch=(("cuda", 80),),
                               layouts=(BSHD, BHSD, VARLEN, KV_LENS, KV_LENS_HOST, CU_SEQLENS_HOST, LONG_ROWS,
                                        *(head_dim_tag(d) for d in SDPA_HEAD_DIMS)))


# Output tolerances of the close backends, per output dtype: fp32 math, the probabilities rounded to the
# input dtype before the product with v (as every flash kernel does), one final rounding. The float32
# entry is the log-sum-exp's (always fp32; the bound is 1e-3 absolute, in natural log).
ATTENTION_TOLERANCES = {"bfloat16": (1e-2, 2**-7), "float16": (2e-3, 2**-9), "float32": (1e-3, 0.0)}
ATTENTION_CLOSE = Contract.close(ATTENTION_TOLERANCES)
# merge: fp32 math, one rounding of o; the lse (fp32) to 1e-5
MERGE_CLOSE = Contract.close({"float32": (1e-5, 1e-5)})

MERGE_TRITON_CAPS = replace(TRITON_CAPS, dtypes=("bfloat16", "float16", "float32"), layouts=(), max_last_dim=512)
MERGE_TORCH_CAPS = TORCH_CAPS

TRITON_NOTE = ("flash-attention forward: online softmax in fp32 (exp2, log2(e) folded into the scale), "
               "K/V loop bounded by the sample's kv_len or varlen segment, GQA by head index, any strides")
TORCH_NOTE = "the definition: fp32 scores, masked keys -inf, fp32 softmax, one rounding; query chunks bound memory"
SDPA_NOTE = ("the {} kernel's own ATen op, as scaled_dot_product_attention dispatches to it for an inference call "
             "(the lse kept with return_lse); bshd inputs as transposed views (no copy); kv_lens, varlen and GQA go "
             "to the triton backend")
VALID_KEYS_NOTE = ("kv_lens (or varlen's cu_seqlens) read on the host (one device-to-host copy per call; none "
                   "for those given on the CPU), then PyTorch's SDPA over each run of samples (segments) with one "
                   "length, on their valid keys only (views: no copy of q, k or v); during CUDA-graph capture, where "
                   "the host cannot read them, the triton kernel (the definition without Triton or for rows too long "
                   "for it); measured or named only")
MERGE_TRITON_NOTE = "one program per (sample, head, token block): weights from the two lse, fp32, one rounding"
MERGE_TORCH_NOTE = "the definition: logaddexp and exp(lse_i - lse) weights in fp32, one rounding"
# where each backend ran against the definition: the CPU lane, and the GPU lane on an H100 (sm_90)
EXECUTED_TRITON = ("sm_90", "cpu-interpreter")
EXECUTED_TORCH = ("sm_90", "cpu")
EXECUTED_SDPA = ("sm_90",)
EXECUTED_VALID_KEYS = ("sm_90", "cpu")  # on the CPU lane with PyTorch's CPU SDPA

# usp_attention: its backends are the local attention's. Outputs: each ring block's partial output is
# rounded to the input dtype by the local attention, the partials are merged in fp32 and rounded once
# more: twice the attention bound per dtype (fp32: the torch definition's fp32 math, reordered by the
# merges).
USP_TOLERANCES = {"bfloat16": (2e-2, 2**-6), "float16": (4e-3, 2**-8), "float32": (1e-5, 1e-5)}
USP_CLOSE = Contract.close(USP_TOLERANCES)
USP_NOTE = ("each rank's local attention is attention(backend='{}') (None: attention's own choice); "
            "Ulysses all-to-all and ring P2P through torch.distributed")


def usp_backends() -> list[tuple[str, Capabilities, Contract, int]]:
    """``(name, capabilities, contract, priority)`` of each backend of ``usp_attention``: one per
    backend of ``attention``, with its capabilities (the local call's features are the tags)."""
    sdpa = [(name, sdpa_caps(name), USP_CLOSE, prio)
            for name, prio in (("sdpa_cudnn", 40), ("sdpa_flash", 30), ("sdpa_efficient", 20))]
    return [*sdpa, ("triton", TRITON_CAPS, USP_CLOSE, 10), ("torch", TORCH_CAPS, USP_CLOSE, 0)]

# block_sparse_attention: bshd, the lse, GQA; the same head dims and close tolerances as attention's kernel
SPARSE_BENCH = "benchmarks/block_sparse_bench.py"
SPARSE_TRITON_CAPS = replace(TRITON_CAPS, layouts=(BSHD, LSE, GQA, *(head_dim_tag(d) for d in TRITON_HEAD_DIMS)))
SPARSE_TRITON_NOTE = ("the dense kernel's online softmax over the key blocks the map lists per query block "
                      "(kernel tiles dividing the map's blocks), GQA by head index, any strides")
SPARSE_TORCH_NOTE = "the definition: dense fp32 attention under the map's token mask; a query with no key: 0, lse -inf"
