"""What the fresh-venv install scenarios (``test_fresh_venvs*.py``) share: the family as
``tools/workspace.py`` discovers it, the SMOKE cases (small CPU inputs for every op), and the
helpers every script run inside a venv starts with (``script``).

Nothing here runs at import but ``workspace.discover()`` (reads ``packages/*/pyproject.toml``).
"""

from __future__ import annotations

import json
from pathlib import Path

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import workspace

SMOKE_FILE = Path(__file__).name  # where a new op's SMOKE entry goes (the tests' messages name it)

PACKAGES = workspace.discover()
CORE = PACKAGES[workspace.CORE]
UMBRELLA = PACKAGES.get(workspace.UMBRELLA)
DOMAINS = [p for p in PACKAGES.values() if not p.is_core and not p.is_umbrella]
FAMILY_IMPORTS = sorted(set(workspace.PLANNED_IMPORT_NAMES) | {p.import_name for p in PACKAGES.values()})

# op id -> Python source run inside a venv, defining CASE = (op, reference, args, kwargs) with
# small CPU inputs; the op is called once per registered backend (backend=...). Only the
# package's top level is used. A new op needs an entry here (the tests say so).
SMOKE: dict[str, str] = {
    "norm.ln_modulate": """
import torch
from sgl_diffusion_norm import ln_modulate, ln_modulate_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (ln_modulate, ln_modulate_reference, (x, scale, shift), {})
""",
    # --- per-head and VAE norms ---
    "norm.qk_norm": """
import torch
from sgl_diffusion_norm import qk_norm, qk_norm_reference
g = torch.Generator().manual_seed(0)
qkv = torch.randn(2, 8, 3 * 4 * 72, generator=g).to(torch.bfloat16).view(2, 8, 3, 4, 72)
w = torch.randn(72, generator=g).to(torch.bfloat16)
CASE = (qk_norm, qk_norm_reference, (qkv[:, :, 0], qkv[:, :, 1], w, w), {})
""",
    "norm.channel_rms_norm": """
import torch
from sgl_diffusion_norm import channel_rms_norm, channel_rms_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 12, 2, 4, 6, generator=g).to(torch.bfloat16).to(memory_format=torch.channels_last_3d)
gamma = torch.rand(12, 1, 1, 1, generator=g).to(torch.bfloat16)
CASE = (channel_rms_norm, channel_rms_norm_reference, (x, gamma), {"silu": True})
""",
    "norm.group_norm_silu": """
import torch
from sgl_diffusion_norm import group_norm_silu, group_norm_silu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 12, 2, 4, 6, generator=g).to(torch.bfloat16).to(memory_format=torch.channels_last_3d)
w, b = (torch.randn(12, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (group_norm_silu, group_norm_silu_reference, (x, 4, w, b), {})
""",
    # ---- row-norm family ----
    "norm.layer_norm": """
import torch
from sgl_diffusion_norm import layer_norm, layer_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
w, b = (torch.randn(96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (layer_norm, layer_norm_reference, (x, w, b), {})
""",
    "norm.rms_norm": """
import torch
from sgl_diffusion_norm import rms_norm, rms_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
w = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (rms_norm, rms_norm_reference, (x, w), {})
""",
    "norm.rms_modulate": """
import torch
from sgl_diffusion_norm import rms_modulate, rms_modulate_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (rms_modulate, rms_modulate_reference, (x, scale, shift), {})
""",
    "norm.gated_residual_norm_modulate": """
import torch
from sgl_diffusion_norm import gated_residual_norm_modulate, gated_residual_norm_modulate_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate, scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(3))
args = (residual, update, gate, scale, shift)
CASE = (gated_residual_norm_modulate, gated_residual_norm_modulate_reference, args, {})
""",
    # ---- end of the row-norm family ----
    "modulate.scale_shift": """
import torch
from sgl_diffusion_modulate import scale_shift, scale_shift_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (scale_shift, scale_shift_reference, (x, scale, shift), {})
""",
    "modulate.gated_residual": """
import torch
from sgl_diffusion_modulate import gated_residual, gated_residual_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate = torch.randn(2, 1, 96, generator=g).to(torch.bfloat16)
CASE = (gated_residual, gated_residual_reference, (residual, update, gate), {})
""",
    "modulate.indexed_scale_shift": """
import torch
from sgl_diffusion_modulate import indexed_scale_shift, indexed_scale_shift_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 2, 96, generator=g).to(torch.bfloat16) for _ in range(2))
index = torch.randint(0, 2, (2, 8), generator=g)
CASE = (indexed_scale_shift, indexed_scale_shift_reference, (x, scale, shift, index), {})
""",
    "modulate.indexed_gated_residual": """
import torch
from sgl_diffusion_modulate import indexed_gated_residual, indexed_gated_residual_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate = torch.randn(2, 96, generator=g).to(torch.bfloat16)
index = torch.randint(0, 2, (8,), generator=g, dtype=torch.int32)
CASE = (indexed_gated_residual, indexed_gated_residual_reference, (residual, update, gate, index), {})
""",
    "rope.apply_rope": """
import torch
from sgl_diffusion_rope import apply_rope, apply_rope_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16)
ang = torch.rand(8, 8, generator=g) * 6
CASE = (apply_rope, apply_rope_reference, (x, ang.cos(), ang.sin()), {"interleaved": True})
""",
    "rope.apply_rope_qk": """
import torch
from sgl_diffusion_rope import apply_rope_qk, apply_rope_qk_reference
g = torch.Generator().manual_seed(0)
q, k = (torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16) for _ in range(2))
ang = torch.rand(8, 8, generator=g) * 6
CASE = (apply_rope_qk, apply_rope_qk_reference, (q, k, ang.cos(), ang.sin()), {})
""",
    "rope.rope_3d": """
import torch
from sgl_diffusion_rope import rope_3d, rope_3d_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 2 * 3 * 4, 2, 32, generator=g).to(torch.bfloat16)
CASE = (rope_3d, rope_3d_reference, (x, (2, 3, 4), (8, 12, 12)), {})
""",
    "rope.qk_norm_rope": """
import torch
from sgl_diffusion_rope import qk_norm_rope, qk_norm_rope_reference
g = torch.Generator().manual_seed(0)
q, k = (torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16) for _ in range(2))
w = torch.rand(16, generator=g).to(torch.bfloat16) + 0.5
ang = torch.rand(8, 8, generator=g) * 6
CASE = (qk_norm_rope, qk_norm_rope_reference, (q, k, w, w, ang.cos(), ang.sin()), {"inplace": False})
""",
    "activation.silu": """
import torch
from sgl_diffusion_activation import silu, silu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (silu, silu_reference, (x,), {"bias": bias})
""",
    "activation.gelu_tanh": """
import torch
from sgl_diffusion_activation import gelu_tanh, gelu_tanh_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (gelu_tanh, gelu_tanh_reference, (x,), {"bias": bias})
""",
    "activation.gelu": """
import torch
from sgl_diffusion_activation import gelu, gelu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (gelu, gelu_reference, (x,), {"bias": bias})
""",
    "activation.silu_and_mul": """
import torch
from sgl_diffusion_activation import silu_and_mul, silu_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (silu_and_mul, silu_and_mul_reference, (x,), {})
""",
    "activation.gelu_tanh_and_mul": """
import torch
from sgl_diffusion_activation import gelu_tanh_and_mul, gelu_tanh_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (gelu_tanh_and_mul, gelu_tanh_and_mul_reference, (x,), {})
""",
    "activation.gelu_and_mul": """
import torch
from sgl_diffusion_activation import gelu_and_mul, gelu_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (gelu_and_mul, gelu_and_mul_reference, (x,), {})
""",
    "activation.silu_mul": """
import torch
from sgl_diffusion_activation import silu_mul, silu_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (silu_mul, silu_mul_reference, (a, b), {})
""",
    "activation.gelu_tanh_mul": """
import torch
from sgl_diffusion_activation import gelu_tanh_mul, gelu_tanh_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (gelu_tanh_mul, gelu_tanh_mul_reference, (a, b), {})
""",
    "activation.gelu_mul": """
import torch
from sgl_diffusion_activation import gelu_mul, gelu_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (gelu_mul, gelu_mul_reference, (a, b), {})
""",
    "layout.ulysses_pack_qkv": """
import torch
from sgl_diffusion_layout import ulysses_pack_qkv, ulysses_pack_qkv_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 4, 16, generator=g).to(torch.bfloat16) for _ in range(3))
CASE = (ulysses_pack_qkv, ulysses_pack_qkv_reference, (q, k, v, 2), {})
""",
    "layout.ulysses_unpack_qkv": """
import torch
from sgl_diffusion_layout import ulysses_unpack_qkv, ulysses_unpack_qkv_reference
buf = torch.randn(2, 8, 2, 48, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_unpack_qkv, ulysses_unpack_qkv_reference, (buf, 2, 2), {})
""",
    "layout.ulysses_pack_out": """
import torch
from sgl_diffusion_layout import ulysses_pack_out, ulysses_pack_out_reference
o = torch.randn(2, 8, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_pack_out, ulysses_pack_out_reference, (o, 2), {})
""",
    "layout.ulysses_unpack_out": """
import torch
from sgl_diffusion_layout import ulysses_unpack_out, ulysses_unpack_out_reference
buf = torch.randn(2, 8, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_unpack_out, ulysses_unpack_out_reference, (buf, 2, 2), {})
""",
    "layout.usp_merge_heads": """
import torch
from sgl_diffusion_layout import usp_merge_heads, usp_merge_heads_reference
x = torch.randn(2, 4, 2, 3, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (usp_merge_heads, usp_merge_heads_reference, (x,), {})
""",
    "layout.usp_split_heads": """
import torch
from sgl_diffusion_layout import usp_split_heads, usp_split_heads_reference
y = torch.randn(2, 4, 6, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (usp_split_heads, usp_split_heads_reference, (y, 2), {})
""",
    "layout.build_varlen_meta": """
import torch
from sgl_diffusion_layout import build_varlen_meta, build_varlen_meta_reference
mask = torch.tensor([[True, True, False, True], [False, False, False, False], [True] * 4])

def meta(mask, **kw):  # max_seqlen is a Python int: compared as a tensor
    i, c, m, v = build_varlen_meta(mask, **kw)
    return i, c, torch.tensor(m), v

def meta_ref(mask):
    i, c, m, v = build_varlen_meta_reference(mask)
    return i, c, torch.tensor(m), v

CASE = (meta, meta_ref, (mask,), {})
""",
    "layout.varlen_pack_qkv": """
import torch
from sgl_diffusion_layout import varlen_pack_qkv, varlen_pack_qkv_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 3, 16, generator=g).to(torch.bfloat16) for _ in range(3))
idx = torch.tensor([0, 1, 3, 4, 6])
CASE = (varlen_pack_qkv, varlen_pack_qkv_reference, (q, k, v, idx), {})
""",
    "layout.varlen_scatter": """
import torch
from sgl_diffusion_layout import varlen_scatter, varlen_scatter_reference
out = torch.randn(5, 3, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
inv = torch.tensor([0, 1, -1, 2, 3, -1, 4, -1])
CASE = (varlen_scatter, varlen_scatter_reference, (out, inv, 2, 4), {})
""",
    "layout.joint_qkv_cat": """
import torch
from sgl_diffusion_layout import joint_qkv_cat, joint_qkv_cat_reference
g = torch.Generator().manual_seed(0)
img = [torch.randn(1, 6, 2, 16, generator=g).to(torch.bfloat16) for _ in range(3)]
txt = [torch.randn(1, 3, 2, 16, generator=g).to(torch.bfloat16) for _ in range(3)]
CASE = (joint_qkv_cat, joint_qkv_cat_reference, (*img, *txt), {})
""",
    "layout.joint_split": """
import torch
from sgl_diffusion_layout import joint_split, joint_split_reference
out = torch.randn(1, 9, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (joint_split, joint_split_reference, (out, 3, 6), {"copy": True})
""",
    "layout.causal_conv3d_cat_pad": """
import torch
from sgl_diffusion_layout import causal_conv3d_cat_pad, causal_conv3d_cat_pad_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 4, 2, 5, 6, generator=g).to(torch.bfloat16).contiguous(memory_format=torch.channels_last_3d)
cache = torch.randn(1, 4, 2, 5, 6, generator=g).to(torch.bfloat16)
CASE = (causal_conv3d_cat_pad, causal_conv3d_cat_pad_reference, (x, cache, (1, 1, 1, 1, 0, 0)), {})
""",
    "layout.nearest_upsample": """
import torch
from sgl_diffusion_layout import nearest_upsample, nearest_upsample_reference
x = torch.randn(1, 3, 2, 4, 5, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
x = x.contiguous(memory_format=torch.channels_last_3d)
CASE = (nearest_upsample, nearest_upsample_reference, (x, (1, 2, 2)), {})
""",
    "attention.attention": """
import torch
from sgl_diffusion_attention import attention, attention_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 40, 2, 32, generator=g).to(torch.bfloat16) for _ in range(3))
kv_lens = torch.tensor([40, 23], dtype=torch.int32)
CASE = (attention, attention_reference, (q, k, v), {"kv_lens": kv_lens, "return_lse": True})
""",
    "attention.merge_attention_states": """
import torch
from sgl_diffusion_attention import merge_attention_states, merge_attention_states_reference
g = torch.Generator().manual_seed(0)
o1, o2 = (torch.randn(2, 9, 2, 32, generator=g).to(torch.bfloat16) for _ in range(2))
lse1, lse2 = (torch.randn(2, 2, 9, generator=g) * 3 for _ in range(2))
CASE = (merge_attention_states, merge_attention_states_reference, (o1, lse1, o2, lse2), {})
""",
    "attention.usp_attention": """
import torch
from sgl_diffusion_attention import usp_attention, usp_attention_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 24, 2, 32, generator=g).to(torch.bfloat16) for _ in range(3))
jq, jk, jv = (torch.randn(2, 5, 2, 32, generator=g).to(torch.bfloat16) for _ in range(3))
joint = {"joint_q": jq, "joint_k": jk, "joint_v": jv, "joint_strategy": "rear"}
CASE = (usp_attention, usp_attention_reference, (q, k, v), {**joint, "kv_lens": torch.tensor([29, 26])})
""",
    "attention.block_sparse_attention": """
import torch
from sgl_diffusion_attention import block_sparse_attention, block_sparse_attention_reference, video_block_map
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 37, 2, 32, generator=g).to(torch.bfloat16) for _ in range(3))
block_map = video_block_map((2, 4, 4), tile=(1, 2, 2), window=(1, 1, 1), text_tokens=5, block=16)
CASE = (block_sparse_attention, block_sparse_attention_reference, (q, k, v, block_map), {"return_lse": True})
""",
    "attention.quantized_attention": """
import torch
from sgl_diffusion_attention import quantized_attention, quantized_attention_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 37, 2, 64, generator=g).to(torch.bfloat16) for _ in range(3))
kv_lens = torch.tensor([37, 20], dtype=torch.int32)
CASE = (quantized_attention, quantized_attention_reference, (q, k, v), {"kv_lens": kv_lens, "return_lse": True})
""",
    "ext.rasterize": """
import torch
from sgl_diffusion_ext import rasterize, rasterize_reference
g = torch.Generator().manual_seed(0)
pos = torch.cat([torch.rand(2, 12, 2, generator=g) * 2 - 1, torch.rand(2, 12, 1, generator=g),
                 torch.ones(2, 12, 1)], dim=2)
tri = torch.randint(0, 12, (8, 3), generator=g, dtype=torch.int32)
CASE = (rasterize, rasterize_reference, (pos, tri, (9, 13)), {})
""",
    "ext.interpolate": """
import torch
from sgl_diffusion_ext import interpolate, interpolate_reference, rasterize_reference
g = torch.Generator().manual_seed(0)
pos = torch.cat([torch.rand(12, 2, generator=g) * 2 - 1, torch.zeros(12, 1), torch.ones(12, 1)], dim=1)
tri = torch.randint(0, 12, (8, 3), generator=g, dtype=torch.int32)
face_id, bary, _ = rasterize_reference(pos, tri, 10)
CASE = (interpolate, interpolate_reference, (torch.randn(12, 3, generator=g), face_id, bary, tri), {})
""",
    "ext.uv_rasterize": """
import torch
from sgl_diffusion_ext import uv_rasterize, uv_rasterize_reference
g = torch.Generator().manual_seed(0)
uv = torch.rand(10, 2, generator=g)
uv_tri = torch.randint(0, 10, (6, 3), generator=g, dtype=torch.int32)
CASE = (uv_rasterize, uv_rasterize_reference, (uv, uv_tri, (8, 12)), {})
""",
    "ext.uv_inpaint": """
import torch
from sgl_diffusion_ext import uv_inpaint, uv_inpaint_reference
g = torch.Generator().manual_seed(0)
texture = torch.rand(11, 14, 3, generator=g)
mask = torch.rand(11, 14, generator=g) > 0.56
CASE = (uv_inpaint, uv_inpaint_reference, (texture, mask), {"method": "diffuse", "iterations": 3})
""",
    "ext.vertex_inpaint": """
import torch
from sgl_diffusion_ext import vertex_inpaint, vertex_inpaint_reference
g = torch.Generator().manual_seed(0)
# a fan of four faces around one unpainted centre vertex: both sweep orders give the same colours
vtx_pos = torch.rand(5, 3, generator=g)
vtx_uv = torch.tensor([[0.5, 0.5], [0.05, 0.05], [0.95, 0.05], [0.95, 0.95], [0.05, 0.95]])
idx = torch.tensor([[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]], dtype=torch.int32)
texture = torch.rand(8, 8, 3, generator=g)
mask = torch.zeros(8, 8, dtype=torch.bool)
mask[0, 0] = mask[0, 7] = mask[7, 7] = mask[7, 0] = True
CASE = (vertex_inpaint, vertex_inpaint_reference, (texture, mask, vtx_pos, vtx_uv, idx, idx), {})
""",
    "quant.quantize_fp8": """
import torch
from sgl_diffusion_quant import quantize_fp8, quantize_fp8_reference
x = torch.randn(6, 40, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (quantize_fp8, quantize_fp8_reference, (x,), {"granularity": "row"})
""",
    "quant.fp8_linear": """
import torch
from sgl_diffusion_quant import fp8_linear, fp8_linear_reference, quantize_fp8
g = torch.Generator().manual_seed(0)
xq, xs = quantize_fp8(torch.randn(2, 5, 32, generator=g).to(torch.bfloat16))
wq, ws = quantize_fp8(torch.randn(24, 32, generator=g))
CASE = (fp8_linear, fp8_linear_reference, (xq, xs, wq, ws, torch.randn(24, generator=g)), {"epilogue": "gelu_tanh"})
""",
}

# Runs in the venv, after `P = {...}` (params) is prepended: helpers for the op checks.
HELPERS = """
import importlib, importlib.util, json, os, sys

def smoke(op):
    src = P["smoke"].get(op)
    if src is None:
        return None
    ns = {}
    exec(src, ns)
    return ns["CASE"]

def flat(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]

def compare(spec, y, ref):
    import torch
    ys, refs = flat(y), flat(ref)
    if len(ys) != len(refs):
        return {"ok": False, "why": f"{len(ys)} outputs, reference has {len(refs)}"}
    worst = 0.0
    for a, b in zip(ys, refs):
        if a.shape != b.shape or a.dtype != b.dtype:
            return {"ok": False, "why": f"output {tuple(a.shape)} {a.dtype}, reference {tuple(b.shape)} {b.dtype}"}
        if a.numel():
            worst = max(worst, float((a.float() - b.float()).abs().max()))
        if spec.contract.kind == "exact":
            if not torch.equal(a, b):
                return {"ok": False, "why": f"exact contract, max abs err {worst}"}
        else:
            atol, rtol = spec.contract.tolerance(a.dtype)
            if not torch.allclose(a.float(), b.float(), atol=atol, rtol=rtol):
                return {"ok": False, "why": f"close contract (atol={atol}, rtol={rtol}), max abs err {worst}"}
    return {"ok": True, "max_abs_err": worst}

def domain_ops(core, dist):
    return [op for op in core.REGISTRY.ops() if core.REGISTRY.op(op).distribution == dist]

def try_import(name):
    try:
        importlib.import_module(name)
        return "imported"
    except ModuleNotFoundError as e:
        return f"ModuleNotFoundError: {e.name}"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
"""


def script(params: dict, body: str) -> str:
    """The source run in a venv: ``P`` (the parameters, decoded from JSON), the helpers, ``body``."""
    return f"import json\nP = json.loads({json.dumps(json.dumps(params))})\n" + HELPERS + body


def family_of(pkg: workspace.Package) -> set[str]:
    """``pkg`` and every family distribution it depends on (what pip installs with it)."""
    out, todo = {pkg.dist}, [pkg]
    while todo:
        for dep in todo.pop().deps:
            if dep.extra is None and dep.name not in out:
                out.add(dep.name)
                todo.append(PACKAGES[dep.name])
    return out
