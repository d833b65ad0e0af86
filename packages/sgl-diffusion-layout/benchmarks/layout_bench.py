"""Benchmark cases of the layout ops at production shapes (docs/design.md).

Providers: ``sgl_diffusion`` (the public op), ``eager`` (the chain itself) and
``torch.compile`` of it (specialized to the shape; dynamo reset per case); the varlen pack
and scatter add ``sgl_diffusion(check_index=False)`` (no host-side index check, the form a
compiled or captured graph runs) and ``sgl_diffusion(check_index='always')`` (one reduction
and host sync per call, what a new index costs once; plain ``sgl_diffusion`` reuses one
index, whose check is remembered after the first call). Bytes: every input element read
once and every output element written once (data movement: the same-run copy of those
bytes is the ceiling).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import bench, testing

# (B, S, H, Dh) of q/k/v: Wan2.1-14B 720p, HunyuanVideo 720p, FLUX 1024^2 (joint)
QKV = {"wan": (1, 75600, 40, 128), "hunyuan": (1, 118800, 24, 128), "flux": (1, 4608, 24, 128)}


def _pick(table: dict, names):
    for name in names or list(table):
        if name not in table:
            raise ValueError(f"unknown bench case {name!r}; known: {', '.join(table)}")
        yield name, table[name]


def _case(name, shape, dtype, nbytes, ours, eager, eq=None, checked=None):
    """``checked(check_index)``: the op with that ``check_index``, for ops that read an index."""
    torch._dynamo.reset()
    compiled = torch.compile(eager, dynamic=False)
    extra = {} if checked is None else {"sgl_diffusion(check_index=False)": lambda: checked(False),
                                        "sgl_diffusion(check_index='always')": lambda: checked("always")}

    def check():
        b = eager()
        for a in (ours(), *(f() for f in extra.values())):
            for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
                if isinstance(x, torch.Tensor):
                    testing.assert_exact(x, y)
                elif x != y:
                    raise AssertionError(f"{name}: {x!r} != {y!r}")

    return bench.BenchCase(
        name=name,
        shape=shape,
        dtype=str(dtype).removeprefix("torch."),
        bytes=nbytes,
        providers={"sgl_diffusion": ours, **extra, "eager": eager, "torch.compile": compiled},
        check=check,
    )


def _rand(shape, device, dtype, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, device=device, dtype=dtype, generator=g)


def _ulysses(op, device, dtype, names, worlds=(1, 8)):
    import sgl_diffusion_layout as u

    for name, (B, S, H, Dh) in _pick(QKV, names):
        for W in worlds:
            if H % W:
                W = 4 if H % 4 == 0 else 1
            q, k, v = (_rand((B, S, H, Dh), device, dtype, seed) for seed in range(3))
            shape = f"[{B}, {S}, {H}, {Dh}] world={W}"
            if op == "ulysses_pack_qkv":
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(q, k, v),
                    lambda q=q, k=k, v=v, W=W: u.ulysses_pack_qkv(q, k, v, W),
                    lambda q=q, k=k, v=v, W=W: u.ulysses_pack_qkv_reference(q, k, v, W),
                )
            elif op == "ulysses_unpack_qkv":
                buf = _rand((W, B * S // W, H, 3 * Dh), device, dtype)
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(buf),
                    lambda buf=buf, W=W, B=B: u.ulysses_unpack_qkv(buf, W, B),
                    lambda buf=buf, W=W, B=B: u.ulysses_unpack_qkv_reference(buf, W, B),
                )
            elif op == "ulysses_pack_out":
                o = _rand((B, S, H // W, Dh), device, dtype)
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(o),
                    lambda o=o, W=W: u.ulysses_pack_out(o, W),
                    lambda o=o, W=W: u.ulysses_pack_out_reference(o, W),
                )
            elif op == "ulysses_unpack_out":
                buf = _rand((W, B * S // W, H // W, Dh), device, dtype)
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(buf),
                    lambda buf=buf, W=W, B=B: u.ulysses_unpack_out(buf, W, B),
                    lambda buf=buf, W=W, B=B: u.ulysses_unpack_out_reference(buf, W, B),
                )
            elif op == "usp_merge_heads":
                x = _rand((W, S // W, B, H // W, Dh), device, dtype)
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(x),
                    lambda x=x: u.usp_merge_heads(x),
                    lambda x=x: u.usp_merge_heads_reference(x),
                )
            else:
                y = _rand((B, S // W, H, Dh), device, dtype)
                yield _case(
                    f"{name}-w{W}",
                    shape,
                    dtype,
                    2 * bench.tensor_bytes(y),
                    lambda y=y, W=W: u.usp_split_heads(y, W),
                    lambda y=y, W=W: u.usp_split_heads_reference(y, W),
                )


def ulysses_pack_qkv_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("ulysses_pack_qkv", device, dtype, names)


def ulysses_unpack_qkv_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("ulysses_unpack_qkv", device, dtype, names)


def ulysses_pack_out_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("ulysses_pack_out", device, dtype, names)


def ulysses_unpack_out_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("ulysses_unpack_out", device, dtype, names)


def usp_merge_heads_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("usp_merge_heads", device, dtype, names)


def usp_split_heads_cases(device, dtype=torch.bfloat16, names=None):
    return _ulysses("usp_split_heads", device, dtype, names)


def _varlen(op, device, dtype, names):
    import sgl_diffusion_layout as vl

    for name, (B, S, H, Dh) in _pick(QKV, names):
        B = 2  # two samples, the second 70% valid (bench of the ragged case)
        mask = torch.ones(B, S, dtype=torch.bool, device=device)
        mask[1, int(0.7 * S) :] = False
        idx, _, _, inv = vl.build_varlen_meta_reference(mask)
        shape = f"[{B}, {S}, {H}, {Dh}] ragged"
        if op == "build_varlen_meta":
            yield _case(
                name,
                f"[{B}, {S}] mask",
                torch.bool,
                mask.numel() + 8 * (idx.numel() + inv.numel()),
                lambda mask=mask: vl.build_varlen_meta(mask),
                lambda mask=mask: vl.build_varlen_meta_reference(mask),
            )
        elif op == "varlen_pack_qkv":
            q, k, v = (_rand((B, S, H, Dh), device, dtype, seed) for seed in range(3))
            nbytes = 2 * 3 * idx.numel() * H * Dh * q.element_size() + 8 * idx.numel()
            yield _case(
                name,
                shape,
                dtype,
                nbytes,
                lambda q=q, k=k, v=v, idx=idx: vl.varlen_pack_qkv(q, k, v, idx),
                lambda q=q, k=k, v=v, idx=idx: vl.varlen_pack_qkv_reference(q, k, v, idx),
                checked=lambda ci, q=q, k=k, v=v, idx=idx: vl.varlen_pack_qkv(q, k, v, idx, check_index=ci),
            )
        else:
            o = _rand((idx.numel(), H, Dh), device, dtype)
            nbytes = bench.tensor_bytes(o) + B * S * H * Dh * o.element_size() + 8 * inv.numel()
            yield _case(
                name,
                shape,
                dtype,
                nbytes,
                lambda o=o, inv=inv, B=B, S=S: vl.varlen_scatter(o, inv, B, S),
                lambda o=o, inv=inv, B=B, S=S: vl.varlen_scatter_reference(o, inv, B, S),
                checked=lambda ci, o=o, inv=inv, B=B, S=S: vl.varlen_scatter(o, inv, B, S, check_index=ci),
            )


def build_varlen_meta_cases(device, dtype=torch.bfloat16, names=None):
    return _varlen("build_varlen_meta", device, dtype, names)


def varlen_pack_qkv_cases(device, dtype=torch.bfloat16, names=None):
    return _varlen("varlen_pack_qkv", device, dtype, names)


def varlen_scatter_cases(device, dtype=torch.bfloat16, names=None):
    return _varlen("varlen_scatter", device, dtype, names)


# (B, S_img, S_txt, H, Dh, text_first): FLUX 1024^2, SD3.5 Large, Qwen-Image ~1328^2 (text first),
# HunyuanVideo 720p x 129 frames (its 256 text tokens after the image tokens)
JOINT = {
    "flux": (1, 4096, 512, 24, 128, True),
    "sd35l": (1, 4096, 333, 38, 64, True),
    "qwen": (1, 6889, 512, 24, 128, True),
    "hunyuan": (1, 118800, 256, 24, 128, False),
}


def joint_qkv_cat_cases(device, dtype=torch.bfloat16, names=None):
    import sgl_diffusion_layout as jt

    for name, (B, Si, St, H, Dh, tf) in _pick(JOINT, names):
        ts = [_rand((B, S, H, Dh), device, dtype, seed) for seed, S in enumerate((Si, Si, Si, St, St, St))]
        yield _case(
            name,
            f"img [{B}, {Si}, {H}, {Dh}] + txt {St}" + ("" if tf else ", image first"),
            dtype,
            2 * bench.tensor_bytes(*ts),
            lambda ts=ts, tf=tf: jt.joint_qkv_cat(*ts, text_first=tf),
            lambda ts=ts, tf=tf: jt.joint_qkv_cat_reference(*ts, text_first=tf),
        )


def joint_split_cases(device, dtype=torch.bfloat16, names=None):
    import sgl_diffusion_layout as jt

    for name, (B, Si, St, H, Dh, tf) in _pick(JOINT, names):
        out = _rand((B, St + Si, H, Dh), device, dtype)
        kw = {"text_first": tf, "copy": True}
        yield _case(
            f"{name}-copy",
            f"[{B}, {St}+{Si}, {H}, {Dh}]" + ("" if tf else ", image first"),
            dtype,
            2 * bench.tensor_bytes(out),
            lambda out=out, St=St, Si=Si, kw=kw: jt.joint_split(out, St, Si, **kw),
            lambda out=out, St=St, Si=Si, kw=kw: jt.joint_split_reference(out, St, Si, **kw),
        )


# Wan / HunyuanVideo VAE activations at 720p: (B, C, T, H, W)
VAE = {"wan-vae-96": (1, 96, 21, 240, 416), "wan-vae-384": (1, 384, 21, 120, 208)}


def causal_conv3d_cat_pad_cases(device, dtype=torch.bfloat16, names=None):
    """x [B, C, T, H, W] with a 2-frame cache and Wan's spatial padding (time padding taken by the cache)."""
    import sgl_diffusion_layout as cp

    for name, (B, C, T, H, W) in _pick(VAE, names):
        for fmt in ("contiguous", "channels_last_3d"):
            mf = torch.channels_last_3d if fmt == "channels_last_3d" else torch.contiguous_format
            x = _rand((B, C, T, H, W), device, dtype).contiguous(memory_format=mf)
            cache = _rand((B, C, 2, H, W), device, dtype, 1).contiguous(memory_format=mf)
            pad = (1, 1, 1, 1, 0, 0)
            nbytes = bench.tensor_bytes(x, cache) + B * C * (T + 2) * (H + 2) * (W + 2) * x.element_size()
            yield _case(
                f"{name}-{fmt}",
                f"[{B}, {C}, {T}, {H}, {W}] + cache 2 {fmt}",
                dtype,
                nbytes,
                lambda x=x, cache=cache, pad=pad: cp.causal_conv3d_cat_pad(x, cache, pad),
                lambda x=x, cache=cache, pad=pad: cp.causal_conv3d_cat_pad_reference(x, cache, pad),
            )


# VAE decoder upsampling: (input shape, factor) — Wan decodes frames as 2-D images ("nearest-exact", 2x)
UPSAMPLE = {"wan-vae-2d": ((21, 384, 120, 208), 2), "video-3d": ((1, 192, 11, 120, 208), (2, 2, 2))}


def nearest_upsample_cases(device, dtype=torch.bfloat16, names=None):
    import sgl_diffusion_layout as up

    for name, (shape, sf) in _pick(UPSAMPLE, names):
        for fmt in ("contiguous", "channels_last"):
            mf = (
                {4: torch.channels_last, 5: torch.channels_last_3d}[len(shape)]
                if fmt == "channels_last"
                else torch.contiguous_format
            )
            x = _rand(shape, device, dtype).contiguous(memory_format=mf)
            factor = sf if isinstance(sf, tuple) else (sf,) * (len(shape) - 2)
            n_out = x.numel()
            for f in factor:
                n_out *= f
            yield _case(
                f"{name}-{fmt}",
                f"{list(shape)} x{sf} {fmt}",
                dtype,
                (x.numel() + n_out) * x.element_size(),
                lambda x=x, sf=sf: up.nearest_upsample(x, sf, mode="nearest-exact"),
                lambda x=x, sf=sf: up.nearest_upsample_reference(x, sf, mode="nearest-exact"),
            )
