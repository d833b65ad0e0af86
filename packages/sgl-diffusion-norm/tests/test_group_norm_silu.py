"""group_norm_silu against its fp32 eager chain (the torch backend), the VAE's own storage-dtype
chain, and the formula in fp64.

Checks per case: the contract (``close`` tolerance of the triton spec / ``torch.equal`` for torch,
against ``group_norm_silu_reference``), and |out - fp64 formula| <= one rounding unit + fp32 slack
(a conditioning term for data far from zero), so a wrong formula (unbiased variance, eps outside the
sqrt, statistics over the wrong channels) cannot hide in the contract tolerance.

Under the interpreter the statistics split aims at 4 programs and finalize steps of 2 partials
(``group_norm_silu_triton``), so these small shapes run several tiles per program and Chan's
update between finalize steps. The generic tests run the launch rule (the statistics tiles of
whole groups on contiguous x, the rows statistics kernel on channels_last x, then the flat apply
kernel on contiguous x / the rows apply kernel on channels_last x); ``test_launch_configs`` runs
the statistics tiles with the tile apply kernel and the rule with several apply blocks.
Shape grid:
  C=6, G=3     2 channels per group (the smallest non-trivial group)
  C=96, G=32   3 channels per group (Wan VAE, non-power-of-two)
  C=192, G=32  6 channels per group
  C=384, G=32  12 channels per group
  spatial 3 x 5 x 7 = 105 positions (masked tails; 2 x 3 x 7 at C=384), T = 1 / H = 1 size-1
  dims, 4-D (C=24, G=8: 3 channels per group, fp16 and fp32) and 5-D
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

import sgl_diffusion_norm as norm
from sgl_diffusion_core import (
    REGISTRY,
    UnsupportedInputError,
    explain,
    next_pow2,
    testing,
    triton_interpret,
)

OP = "norm.group_norm_silu"
UNIT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def spec(backend):
    return next(s for s in REGISTRY.specs(OP) if s.backend == backend)


def truth(x, G, w, b, eps, silu):
    """GroupNorm(+SiLU) in fp64, and the conditioning |mean| / std of the worst group."""
    B, C = x.shape[:2]
    xd = x.double().reshape(B, G, -1)
    mean = xd.mean(-1, keepdim=True)
    var = (xd - mean).pow(2).mean(-1, keepdim=True)
    cond = float((mean.abs() / var.clamp_min(1e-30).sqrt()).max()) if xd.numel() else 0.0
    y = ((xd - mean) / (var + eps).sqrt()).reshape(x.shape)
    view = (1, C, *([1] * (x.dim() - 2)))
    scale = float(w.double().abs().max()) if w is not None else 1.0
    if w is not None:
        y = y * w.double().reshape(view)
    if b is not None:
        y = y + b.double().reshape(view)
    if silu:
        y = F.silu(y)
    return y, cond, scale


def assert_within(out, t, atol, rtol):
    err = (out.double() - t).abs()
    bad = ~(err <= atol + rtol * t.abs())
    if bool(bad.any()):
        i = int(torch.where(bad, err, torch.zeros_like(err)).flatten().argmax())
        raise AssertionError(f"{int(bad.sum())} of {out.numel()} elements off the fp64 formula "
                             f"(atol={atol:g}, rtol={rtol:g}); worst: actual {out.flatten()[i].item()!r}, "
                             f"fp64 {t.flatten()[i].item()!r}")


def layout(t):
    return tuple(st for n, st in zip(t.shape, t.stride()) if n > 1)


def to_format(x, channels_last):
    if not channels_last:
        return x
    return x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)


def run_both(backend, x, G, w=None, b=None, *, eps=1e-5, silu=True):
    out = norm.group_norm_silu(x, G, w, b, eps=eps, silu=silu, backend=backend)
    ref = norm.group_norm_silu_reference(x, G, w, b, eps=eps, silu=silu)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert layout(out) == layout(ref)
    if x.is_contiguous() or x.is_contiguous(memory_format=torch.channels_last) or (
            x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d)):
        assert layout(out) == layout(x), "the result must keep x's memory format"
    atol, rtol = spec(backend).contract.tolerance(out.dtype)
    if spec(backend).contract.kind == "exact":
        testing.assert_exact(out, ref)
    else:
        testing.assert_close(out, ref, atol=atol, rtol=rtol)
    t, cond, scale = truth(x, G, w, b, eps, silu)
    slack = 4e-6 * (float(t.abs().max()) + scale * (4 + cond)) if t.numel() else 0.0
    assert_within(out, t, slack + (2.0**-24 if out.dtype == torch.float16 else 0.0), UNIT[out.dtype] + 4e-6)
    same = (w is None or w.dtype == x.dtype) and (b is None or b.dtype == x.dtype)
    close_tol = testing.tolerance(out.dtype)  # the close contract's table (the torch spec's is exact)
    if same and out.numel():  # the VAE's own chain in the storage dtype (two roundings) is within close
        lit = F.silu(F.group_norm(x, G, w, b, eps)) if silu else F.group_norm(x, G, w, b, eps)
        testing.assert_close(out, lit, atol=close_tol[0], rtol=close_tol[1])
    return out


def test_cpu_lane_runs_triton_in_interpreter(device):
    import importlib.util

    if device.type == "cpu" and importlib.util.find_spec("triton") is not None:
        assert triton_interpret(), "CPU lane without TRITON_INTERPRET=1: Triton kernels would not be tested"


@pytest.mark.parametrize("C,G", [(6, 3), (96, 32), (192, 32), (384, 32)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_5d_bf16(backend, device, C, G, channels_last):
    torch.manual_seed(C)
    shape = (2, C, 3, 5, 7) if C <= 96 else (1, C, 2, 3, 7)
    x = to_format((torch.randn(shape, device=device) * 2 + 0.5).to(torch.bfloat16), channels_last)
    w = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
    b = (torch.randn(C, device=device) * 0.5).to(torch.bfloat16)
    run_both(backend, x, G, w, b)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("channels_last", [False, True])
def test_other_dtypes_4d(backend, device, dtype, channels_last):
    torch.manual_seed(5)
    C, G = 24, 8  # 3 channels per group
    x = to_format(torch.randn(2, C, 9, 11, device=device).to(dtype), channels_last)
    run_both(backend, x, G, torch.rand(C, device=device).to(dtype), torch.randn(C, device=device).to(dtype))
    run_both(backend, x, G, None, None, silu=False)


@pytest.mark.parametrize("shape,G", [((1, 512, 4, 4), 32), ((1, 64, 16, 16), 4), ((2, 64, 8, 16), 2)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_4d_power_of_two_full_tiles(backend, device, shape, G, channels_last):
    """The structure of the 4-D VAE case (1, 512, 128, 128) / 32 groups, which failed on the first
    GPU run: 16 (or 32) channels per group, so channel blocks hold whole groups with no masked
    lane, P a power of two (every spatial tile full) and, under the interpreter's split, one tile
    per stats program (a single pass of the loop, span = tile)."""
    torch.manual_seed(11)
    C = shape[1]
    x = to_format((torch.randn(shape, device=device) * 2 + 0.5).to(torch.bfloat16), channels_last)
    w = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
    b = (torch.randn(C, device=device) * 0.5).to(torch.bfloat16)
    run_both(backend, x, G, w, b, eps=1e-6)
    run_both(backend, x.float(), G, None, None, eps=1e-6, silu=False)


# The Triton kernels under explicit launch configurations: the statistics tiles with the tile apply
# kernel (the rule's base), tiles of 1 / 4 / 8 positions and of one or two whole groups (blocks
# with masked channel rows at C = 5 / 6 / 21), grids of 1 to 3 statistics programs (several tiles
# per program, a last program with fewer), the rule's flat / rows apply kernels, and the rows
# kernels' channel tiles (one padded tile, or two).
def _triton_launch():
    K = testing.backend_module(OP, "triton")

    def launch(x, G, w, b, *, config, eps=1e-5, silu=True):
        geom = testing.geometry(OP, x, G, w, b, silu=silu)
        return K.prepare(geom, x, w, b, config=config)(x, w, b, G, eps, silu)

    return K, launch


@pytest.mark.parametrize("C,G", [(6, 3), (5, 5), (12, 4), (24, 8), (21, 7)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_launch_configs(device, C, G, channels_last):
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    K, launch = _triton_launch()
    torch.manual_seed(C + G)
    shape = (2, C, 1, 3, 7) if C < 24 else (2, C, 1, 1, 5)  # 21 / 5 positions per sample, T = 1
    x = to_format((torch.randn(shape, device=device) * 2 + 0.5).to(torch.bfloat16), channels_last)
    w = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
    b = (torch.randn(C, device=device) * 0.5).to(torch.bfloat16)
    ref = norm.group_norm_silu_reference(x, G, w, b)
    atol, rtol = spec("triton").contract.tolerance(x.dtype)
    t, cond, scale = truth(x, G, w, b, 1e-5, True)
    slack = 4e-6 * (float(t.abs().max()) + scale * (4 + cond))
    Cg = C // G
    configs = [K._group_config(C, G, 2, channels_last, "cpu")]
    for gpb, block_p, programs in ((1, 4, 3), (2, 1, 2), (1, 8, 1)):
        configs.append(K.GroupConfig(gpb=min(gpb, G), block_c=next_pow2(min(gpb, G) * Cg), block_p=block_p,
                                     num_warps=1, stats_programs=programs, finalize_block=2))
    # the v2 rule (v1 statistics, the flat / rows apply kernels) and its apply pass at 1 / 4 / 8
    # positions per program (programs crossing no sample boundary, a partial last block)
    v2 = K.GroupConfig.from_heuristic(C, G, 2, channels_last, "cpu")
    assert (v2.apply_rows if channels_last else v2.apply_flat) > 0
    field = "apply_rows" if channels_last else "apply_flat"
    configs += [v2, *(dataclasses.replace(v2, **{field: n}, apply_warps=1) for n in (1, 4, 8))]
    if channels_last:  # the rows statistics kernel: 1 / 2 / 8 positions per step (several spans)
        assert v2.stats_rows > 0
        configs += [dataclasses.replace(v2, stats_rows=n) for n in (1, 2, 8)]
        # the rows kernels' channel tiles: two dense ones (C = 21: 16 + 8 with three masked
        # channels and a group straddling the tiles) and one padded tile (the rule's choice at these
        # C: their smaller dense tiles have rows under 128 bytes)
        assert not v2.split
        configs += [dataclasses.replace(v2, split=True), dataclasses.replace(v2, split=True, stats_rows=2),
                    dataclasses.replace(v2, split=False, stats_rows=2)]
        # the rows apply over several steps per program (a partial last step and program; more
        # steps than a sample has)
        configs += [dataclasses.replace(v2, apply_rows=2, apply_iters=3, apply_warps=1),
                    dataclasses.replace(v2, apply_rows=4, apply_iters=64, split=False)]
    for cfg in configs:
        out = launch(x, G, w, b, config=cfg)
        assert out.stride() == ref.stride(), cfg
        testing.assert_close(out, ref, atol=atol, rtol=rtol)
        assert_within(out, t, slack, UNIT[out.dtype] + 4e-6)


def test_mixed_dtypes_and_no_affine(backend, device):
    C, G = 12, 4
    x = torch.randn(1, C, 2, 6, 5, device=device).to(torch.bfloat16)
    run_both(backend, x, G, torch.rand(C, device=device), torch.randn(C, device=device))  # fp32 affine
    run_both(backend, x, G, None, torch.randn(C, device=device).to(torch.bfloat16))
    run_both(backend, x, G, silu=False)


def test_large_mean_groups(backend, device):
    """|mean| = 100 x std in fp32: shifted sums and Chan's combination keep the variance, so the
    Triton result stays within fp32 slack of the fp64 formula. The eager ``F.group_norm`` on the
    CPU does not (measured: errors ~1e-2 here), so the torch backend is held to its definition
    only (``torch.equal`` to the reference chain), and triton to the fp64 formula only."""
    torch.manual_seed(7)
    C, G = 96, 32
    x = torch.randn(1, C, 4, 6, 10, device=device) + 100.0
    w = torch.rand(C, device=device)
    for cl in (False, True):
        xf = to_format(x, cl)
        out = norm.group_norm_silu(xf, G, w, None, backend=backend)
        if spec(backend).contract.kind == "exact":
            testing.assert_exact(out, norm.group_norm_silu_reference(xf, G, w, None))
            continue
        t, cond, scale = truth(xf, G, w, None, 1e-5, True)
        assert cond > 50
        assert_within(out, t, 1e-6 * scale * cond, 1e-5)


def test_size_one_and_one_group(backend, device):
    torch.manual_seed(8)
    for shape, G in [((1, 6, 1, 1, 1), 3), ((3, 6, 1, 4, 1), 6), ((1, 8, 2, 3, 4), 1), ((2, 6, 5, 7), 3)]:
        for cl in (False, True):
            x = to_format(torch.randn(shape, device=device).to(torch.bfloat16), cl)
            run_both(backend, x, G, torch.rand(shape[1], device=device).to(torch.bfloat16), None)


def test_views(backend, device):
    torch.manual_seed(9)
    big = torch.randn(3, 16, 4, 5, 6, device=device).to(torch.bfloat16)
    run_both(backend, big[1:, 2:14, 1:3], 4)  # batch, channel and frame slices: spatial still merges
    run_both(backend, to_format(big, True)[:, 4:10], 3)  # channel slice of channels_last_3d


def test_constant_group(backend, device):
    """A constant group has variance 0: y = (x - mean) * rsqrt(eps) = 0 exactly, then bias."""
    x = torch.full((1, 6, 2, 3, 4), 3.0, device=device).to(torch.bfloat16)
    b = torch.randn(6, device=device).to(torch.bfloat16)
    out = run_both(backend, x, 3, None, b, silu=False)
    testing.assert_exact(out, b.reshape(1, 6, 1, 1, 1).expand_as(out).contiguous())


def test_empty(backend, device):
    for shape in [(0, 6, 2, 3, 4), (2, 6, 0, 3, 4), (1, 6, 3, 0)]:
        x = torch.randn(shape, device=device)
        out = norm.group_norm_silu(x, 3, backend=backend)
        assert out.shape == x.shape


def _assert_unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        norm.group_norm_silu(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not norm.can_use_group_norm_silu(*args, **kw)


def test_unsupported_inputs(device):
    x = torch.randn(1, 12, 2, 3, 4, device=device)
    _assert_unsupported("must be divisible by num_groups=5", x, 5)
    _assert_unsupported("num_groups must be a positive int", x, 0)
    _assert_unsupported("num_groups must be a positive int", x, 2.0)
    _assert_unsupported("must be [B, C, H, W] or [B, C, T, H, W]", x[0, 0], 3)
    _assert_unsupported("weight must be a contiguous [C]", x, 3, torch.rand(11, device=device))
    _assert_unsupported("bias must be a contiguous [C]", x, 3, None, torch.rand(12, 1, 1, 1, device=device))
    _assert_unsupported("spatial dims must merge", x[..., :3], 3)
    _assert_unsupported("dtype torch.int32", x.to(torch.int32), 3)
    _assert_unsupported("must be a torch.Tensor", [1.0], 3)
    other = torch.device("meta") if device.type == "cpu" else torch.device("cpu")
    _assert_unsupported("all tensors must be on one device", x, 3, torch.rand(12, device=other))
    _assert_unsupported("unknown backend", x, 3, backend="nope")


def test_exact_request(device):
    x = torch.randn(1, 12, 2, 3, 4, device=device).to(torch.bfloat16)
    assert explain(OP, x, 3, exact=True).chosen == "torch"
    testing.assert_exact(norm.group_norm_silu(x, 3, exact=True), norm.group_norm_silu_reference(x, 3))
    if "triton" in testing.runnable_backends(OP, device):
        _assert_unsupported("exact", x, 3, backend="triton", exact=True)


def test_opcheck(backend, device):
    x = to_format(torch.randn(2, 6, 2, 3, 2, device=device).to(torch.bfloat16), True)
    w = torch.rand(6, device=device).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.sgl_diffusion.group_norm_silu.default, (x, w, w, 3, 1e-5, True, None, backend))


@pytest.mark.parametrize("channels_last", [False, True])
def test_compile_fullgraph_no_graph_break(backend, device, channels_last):
    import torch._dynamo

    def block(x, w, b):
        return norm.group_norm_silu(x, 4, w, b, backend=backend) + 1.0

    torch._dynamo.reset()
    x = to_format(torch.randn(1, 8, 2, 3, 4, device=device).to(torch.bfloat16), channels_last)
    w = torch.rand(8, device=device).to(torch.bfloat16)
    expl = torch._dynamo.explain(block)(x, w, w)
    assert expl.graph_break_count == 0, expl.break_reasons
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(x, w, w), block(x, w, w))


def test_eager_call_skips_custom_op_dispatch(device, monkeypatch):
    x = torch.randn(1, 4, 2, 2, 2, device=device)
    calls = []
    op = torch.ops.sgl_diffusion.group_norm_silu
    monkeypatch.setattr(torch.ops.sgl_diffusion, "group_norm_silu", lambda *a: calls.append(a) or op(*a),
                        raising=False)
    norm.group_norm_silu(x, 2)
    assert calls == []
