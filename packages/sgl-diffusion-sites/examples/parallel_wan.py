"""A diffusers Wan transformer run sequence-parallel on every GPU of a node with ``parallelize``.

    torchrun --standalone --nproc_per_node=2 packages/sgl-diffusion-sites/examples/parallel_wan.py \
        --ulysses 2 --ring 1 [--model Wan-AI/Wan2.1-T2V-14B-Diffusers] [--check]

Every rank loads the same transformer (``--model``: a diffusers repository or folder with a
``transformer/`` subfolder; without it, a 2-block Wan2.1-14B-shaped model with random weights),
calls it with the same full inputs and gets the same full output; in between, each rank holds
``1 / (ulysses * ring)`` of the video tokens and every self-attention runs ``usp_attention``.
``--check`` also runs the model unparallelized on every rank and prints the largest difference.
``--device cpu`` runs the same over gloo on the CPU with a tiny model.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist

import sgl_diffusion_sites as sites


def _model(args, dev: torch.device, dtype: torch.dtype):
    from diffusers import WanTransformer3DModel

    if args.model:
        model = WanTransformer3DModel.from_pretrained(args.model, subfolder="transformer", torch_dtype=dtype)
    else:
        torch.manual_seed(0)  # random weights, the same on every rank
        tiny = dev.type == "cpu"
        model = WanTransformer3DModel(
            patch_size=(1, 2, 2), num_attention_heads=2 if tiny else 40, attention_head_dim=16 if tiny else 128,
            in_channels=4 if tiny else 16, out_channels=4 if tiny else 16, text_dim=32 if tiny else 4096,
            freq_dim=32 if tiny else 256, ffn_dim=64 if tiny else 13824, num_layers=2, cross_attn_norm=True,
            qk_norm="rms_norm_across_heads", rope_max_seq_len=32 if tiny else 1024).to(dtype)
    model = model.to(dev).eval()
    c = model.config
    latent = (1, c.in_channels, 3, 8, 8) if dev.type == "cpu" else (1, c.in_channels, 21, 60, 104)  # 480p
    g = torch.Generator(device=dev).manual_seed(1)
    kw = {"hidden_states": torch.randn(latent, generator=g, device=dev).to(dtype),
          "timestep": torch.tensor([500], device=dev),
          "encoder_hidden_states": torch.randn(1, 16 if dev.type == "cpu" else 512, c.text_dim, generator=g,
                                               device=dev).to(dtype),
          "return_dict": False}
    return model, kw


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ulysses", type=int, default=None, help="default: every rank")
    p.add_argument("--ring", type=int, default=1)
    p.add_argument("--model", default=None)
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--check", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    if args.device == "cuda":
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    ring = args.ring
    ulysses = args.ulysses or dist.get_world_size() // ring
    model, kw = _model(args, dev, torch.bfloat16)
    with torch.no_grad():
        want = model(**kw)[0] if args.check else None
        report = sites.parallelize(model, ulysses=ulysses, ring=ring)
        t0 = time.perf_counter()
        out = model(**kw)[0]
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        seconds = time.perf_counter() - t0
    if dist.get_rank() == 0:
        print(report)
        print(f"output {list(out.shape)} in {seconds * 1e3:.1f} ms (first call) on {dist.get_world_size()} ranks")
        if want is not None:
            print(f"largest difference to the unparallelized model: {float((out.float() - want.float()).abs().max())}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
