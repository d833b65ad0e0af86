"""channel_rms_norm against its fp32 eager chain (the torch backend) and the formula in fp64.

Two checks per case: the contract (``close`` tolerance of the triton spec / ``torch.equal`` for the
torch backend, against ``channel_rms_norm_reference``), and |out - fp64 formula| <= one rounding
unit (+ fp32 slack), so a wrong formula (sqrt(C) missing, eps inside the sqrt, the mean instead of
the sum of squares) cannot hide in the contract tolerance.

Shape grid (CPU lane, Triton interpreter). The launch rule picks the rows kernel on channels_last x
with dense rows, the stream kernel on other channels_last views (its grid is one program here, so
every case with more than one tile runs the loop and its two-tiles-ahead loads), and on contiguous
x the chunk kernel under the slab (C <= 128), mid (C <= 384) or wide rule; ``test_launch_configs``
runs each kernel under explicit configurations. The stream kernel's and the base tile's tiles per C:
  C = 1     degenerate: x / max(|x|, eps) * gamma (stream: second channel tile, one masked row)
  C = 6     stream: 4 + 2 channel rows; v1: one register tile
  C = 96    Wan-VAE width: stream 64 + 32 rows; v1 contiguous 3 channel chunks of 32 (two-pass)
  C = 200   stream 128 + 128 rows (56 masked); v1 contiguous: masked last chunk
  C = 2100  channels_last wider than the stream kernel's 1024 rows: the v1 chunked path
  spatial 3 x 5 x 7 = 105 positions: not a multiple of BLOCK_P (masked tail); T = 1 / H = 1 size-1 dims
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F
import triton

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing, triton_interpret
from sgl_diffusion_norm._channels import split_channels

OP = "norm.channel_rms_norm"
DTYPES = [torch.bfloat16, torch.float16, torch.float32]
UNIT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def spec(backend):
    return next(s for s in REGISTRY.specs(OP) if s.backend == backend)


def truth(x, gamma, bias, eps, silu):
    C = x.shape[1]
    v = (C, *([1] * (x.dim() - 2)))
    xd = x.double()
    y = xd / xd.pow(2).sum(1, keepdim=True).sqrt().clamp_min(eps) * C**0.5 * gamma.double().reshape(v)
    scale = y.abs()
    if bias is not None:
        y = y + bias.double().reshape(v)
        scale = scale + bias.double().abs().reshape(v)
    if silu:
        y = F.silu(y)
    return y, float(scale.max()) if scale.numel() else 0.0


def assert_within(out, t, atol, rtol):
    err = (out.double() - t).abs()
    bad = ~(err <= atol + rtol * t.abs())
    if bool(bad.any()):
        i = int(torch.where(bad, err, torch.zeros_like(err)).flatten().argmax())
        raise AssertionError(f"{int(bad.sum())} of {out.numel()} elements off the fp64 formula "
                             f"(atol={atol:g}, rtol={rtol:g}); worst: actual {out.flatten()[i].item()!r}, "
                             f"fp64 {t.flatten()[i].item()!r}")


def run_both(backend, x, gamma, bias=None, *, eps=1e-12, silu=False):
    out = norm.channel_rms_norm(x, gamma, bias, eps=eps, silu=silu, backend=backend)
    ref = norm.channel_rms_norm_reference(x, gamma, bias, eps=eps, silu=silu)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert out.stride() == ref.stride()
    if x.is_contiguous() or x.is_contiguous(memory_format=torch.channels_last) or (
            x.dim() == 5 and x.is_contiguous(memory_format=torch.channels_last_3d)):
        assert layout(out) == layout(x), "the result must keep x's memory format"
    if spec(backend).contract.kind == "exact":
        testing.assert_exact(out, ref)
    else:
        atol, rtol = spec(backend).contract.tolerance(out.dtype)
        testing.assert_close(out, ref, atol=atol, rtol=rtol)
    t, scale = truth(x, gamma, bias, eps, silu)
    assert_within(out, t, 1e-5 * scale + (2.0**-24 if out.dtype == torch.float16 else 0.0),
                  UNIT[out.dtype] + 4e-6)
    return out


def layout(t):
    """Strides of the dims of size > 1 (a size-1 dim's stride carries no layout)."""
    return tuple(st for n, st in zip(t.shape, t.stride()) if n > 1)


def to_format(x, channels_last):
    if not channels_last:
        return x
    return x.to(memory_format=torch.channels_last_3d if x.dim() == 5 else torch.channels_last)


def test_cpu_lane_runs_triton_in_interpreter(device):
    import importlib.util

    if device.type == "cpu" and importlib.util.find_spec("triton") is not None:
        assert triton_interpret(), "CPU lane without TRITON_INTERPRET=1: Triton kernels would not be tested"


@pytest.mark.parametrize("C", [1, 6, 96, 200])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_5d(backend, device, C, channels_last, dtype):
    torch.manual_seed(C)
    shape = (2, C, 3, 5, 7) if C < 128 else (1, C, 2, 3, 7)  # keep the interpreter's work small
    x = to_format((torch.randn(shape, device=device) * 2).to(dtype), channels_last)
    gamma = (torch.rand(C, 1, 1, 1, device=device) * 2).to(dtype)
    bias = (torch.randn(C, 1, 1, 1, device=device) * 0.5).to(dtype)
    run_both(backend, x, gamma, bias, silu=True)
    run_both(backend, x, gamma, None, silu=False)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("C", [6, 96])
def test_4d_and_gamma_shapes(backend, device, channels_last, C):
    torch.manual_seed(1)
    x = to_format(torch.randn(2, C, 9, 13, device=device).to(torch.bfloat16), channels_last)
    for g in (torch.rand(C, 1, 1, device=device), torch.rand(C, device=device)):
        run_both(backend, x, g.to(torch.bfloat16), silu=True)
    # fp32 gamma / bias against bf16 activations (math in fp32, result in x's dtype)
    run_both(backend, x, torch.rand(C, device=device), torch.randn(C, 1, 1, device=device), silu=True)


def test_wide_channels_last_chunked(backend, device):
    C = 2100
    x = to_format(torch.randn(1, C, 1, 2, 3, device=device).to(torch.bfloat16), True)
    run_both(backend, x, torch.rand(C, device=device).to(torch.bfloat16), silu=True)


def test_size_one_dims_and_views(backend, device):
    torch.manual_seed(2)
    g = torch.rand(8, 1, 1, 1, device=device).to(torch.bfloat16)
    for shape in [(1, 8, 1, 1, 1), (1, 8, 1, 4, 1), (3, 8, 2, 1, 5)]:
        for cl in (False, True):
            run_both(backend, to_format(torch.randn(shape, device=device).to(torch.bfloat16), cl), g, silu=True)
    big = torch.randn(3, 12, 4, 5, 6, device=device).to(torch.bfloat16)
    run_both(backend, big[1:, 2:10, 1:3], g)  # batch, channel and frame slices: spatial still merges
    big_cl = to_format(big, True)
    run_both(backend, big_cl[:, 2:10], g, silu=True)  # a channel slice of channels_last_3d (row stride 12)


# The Triton kernels under explicit launch configurations: the chunk kernel (one tile / chunked
# two-pass; its output pass prefetching, or the slab held in registers), the stream kernel with one
# and two tiles ahead, tiles of 1 / 2 / 3 positions (tile boundaries inside a sample and across
# samples), a second channel tile of several rows or of one masked row (C a power of two), and a
# grid aiming at 1 or 3 programs (several tiles per program, a last program with fewer tiles).
def _triton_launch():
    K = testing.backend_module(OP, "triton")

    def launch(x, gamma, bias, *, silu, config, eps=1e-12):
        geom = testing.geometry(OP, x, gamma, bias, silu=silu)
        return K.prepare(geom, x, gamma, bias, config=config)(x, gamma, bias, eps, silu)

    return K, launch


def _configs(C, channels_last, K):
    cfg_cls = K.ChannelConfig
    v1 = K._channel_config_v1(C, 2, channels_last, "cpu")
    out = [v1]
    if C > 1 or not channels_last:  # the rule's rows kernel needs dense rows: C = 1 has none (config_for)
        out.append(cfg_cls.from_heuristic(C, 2, channels_last, "cpu"))
    # v1 over 2-channel chunks (C = 5: a masked last chunk), and its output pass with the next chunk's
    # loads issued first
    out.append(cfg_cls(block_c=2, block_p=v1.block_p, chunks=-(-C // 2), num_warps=1))
    out.append(cfg_cls(block_c=2, block_p=v1.block_p, chunks=-(-C // 2), num_warps=1, prefetch=True))
    if not channels_last:  # the mid / wide rules' tiles at these widths; the slab held in 2-3 register tiles
        out += [K._mid_config(C, 2, "cpu"), K._wide_config(C, 2, "cpu")]
        bc = 1 << (max(1, -(-C // 3)) - 1).bit_length()  # a power of two: 3 / 2 / 3 chunks at C = 5 / 8 / 96
        if C > 1:
            out.append(cfg_cls(block_c=bc, block_p=v1.block_p, chunks=-(-C // bc), num_warps=1, hold=True))
        return out
    a, b = split_channels(C)
    out.append(K._stream_config(C, 2, "cpu"))
    for block_p, ahead, programs in ((1, 1, 3), (2, 2, 1), (4, 2, 3), (2, 1, 1)):
        out.append(cfg_cls(block_c=a, block_p=block_p, chunks=1, num_warps=1, stream=True, block_c2=b,
                           ahead=ahead, programs=programs))
    if C > 1:  # the rows kernel (C = 1 is no channels_last layout): 1 / 2 / 4 rows
        out += [cfg_cls(block_c=1, block_p=r, chunks=1, num_warps=1, rows=r) for r in (1, 2, 4)]
    return out


@pytest.mark.parametrize("C", [1, 5, 8, 96])
@pytest.mark.parametrize("channels_last", [False, True])
def test_launch_configs(device, C, channels_last):
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    K, launch = _triton_launch()
    torch.manual_seed(C)
    shape = (2, C, 1, 3, 5) if C < 96 else (2, C, 1, 1, 5)  # 15 / 5 positions per sample, T = 1
    x = to_format(torch.randn(shape, device=device).to(torch.bfloat16), channels_last)
    gamma = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
    bias = (torch.randn(C, device=device) * 0.5).to(torch.bfloat16)
    ref = norm.channel_rms_norm_reference(x, gamma, bias, silu=True)
    atol, rtol = spec("triton").contract.tolerance(x.dtype)
    for cfg in _configs(C, channels_last, K):
        out = launch(x, gamma, bias, silu=True, config=cfg)
        assert out.stride() == ref.stride(), cfg
        testing.assert_close(out, ref, atol=atol, rtol=rtol)
        t, scale = truth(x, gamma, bias, 1e-12, True)
        assert_within(out, t, 1e-5 * scale, UNIT[out.dtype] + 4e-6)


def test_rows_kernel_strided_samples_and_fast_silu(device):
    """The rows kernel where samples do not follow each other (a time slice of channels_last_3d:
    sample stride != P * C, the 64-bit row split) and with SiLU's fast forms, against the same
    reference; a rows launch on contiguous x is refused."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    K, launch = _triton_launch()
    cfg_cls = K.ChannelConfig
    torch.manual_seed(3)
    C = 12
    big = to_format(torch.randn(2, C, 4, 3, 5, device=device).to(torch.bfloat16), True)
    x = big[:, :, 1:3]
    gamma = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
    bias = (torch.randn(C, device=device) * 0.5).to(torch.bfloat16)
    g = testing.geometry(OP, x, gamma, bias).x
    assert g.sb != g.P * g.C and g.channels_last
    ref = norm.channel_rms_norm_reference(x, gamma, bias, silu=True)
    atol, rtol = spec("triton").contract.tolerance(x.dtype)
    for cfg in (cfg_cls(block_c=1, block_p=4, chunks=1, num_warps=1, rows=4),
                cfg_cls(block_c=1, block_p=4, chunks=1, num_warps=1, rows=4, fast=True)):
        out = launch(x, gamma, bias, silu=True, config=cfg)
        assert out.stride() == ref.stride(), cfg
        testing.assert_close(out, ref, atol=atol, rtol=rtol)
    xc = torch.randn(1, C, 1, 2, 3, device=device).to(torch.bfloat16)
    with pytest.raises(ValueError, match="rows kernel"):
        launch(xc, gamma, bias, silu=True, config=cfg_cls(block_c=1, block_p=4, chunks=1, num_warps=1, rows=4))


def test_hold_chunk_count_is_checked(device):
    """The held slab is two or three register tiles: a hold configuration of one or five chunks is
    refused with a ValueError before any launch."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    K, launch = _triton_launch()
    x = torch.randn(1, 10, 1, 2, 3, device=device).to(torch.bfloat16)
    gamma = torch.ones(10, device=device, dtype=torch.bfloat16)
    for block_c, chunks in ((16, 1), (2, 5)):
        cfg = K.ChannelConfig(block_c=block_c, block_p=8, chunks=chunks, num_warps=1, hold=True)
        with pytest.raises(ValueError, match="hold keeps 2 or 3 channel chunks"):
            launch(x, gamma, None, silu=True, config=cfg)


def test_cluster_config(device, monkeypatch):
    """``ctas``: the held slab as a cluster of CTAs (CUDA sm_90+; the interpreter ignores
    ``num_ctas`` and runs the program's whole slab). The rule: the mid rule's held slab on CUDA
    sm_90+ with bf16 values and a Triton it was measured with."""
    K, launch = _triton_launch()
    applies = K.cluster_rule_applies
    assert applies(90, "3.6.0") and applies(100, "3.6.1")
    assert not applies(80, "3.6.0") and not applies(90, "3.9.0")
    assert not applies("gfx942", "3.6.0") and not applies(None, "3.6.0")
    cfg_cls = K.ChannelConfig
    monkeypatch.setattr(K, "_CLUSTER_TRITON", (".".join(triton.__version__.split(".")[:2]),))
    rule = cfg_cls.from_heuristic(384, 2, False, "cuda", 90, dtype="bfloat16")
    assert (rule.ctas, rule.block_p, rule.block_c, rule.hold) == (2, 128, 128, True)
    assert rule.launch_options("cuda") == {"num_warps": 8, "num_stages": 1, "num_ctas": 2}
    assert rule.v1_constexprs()["OPS_AHEAD"]
    for args, dt in (((384, 2, False, "cuda", 80), "bfloat16"), ((384, 4, False, "cuda", 90), "float32"),
                     ((384, 2, False, "cuda", 90), "float16"), ((384, 2, False, "cuda", 90), None),
                     ((384, 2, False, "hip", "gfx942"), "bfloat16"), ((192, 2, False, "cuda", 90), "bfloat16"),
                     ((384, 2, True, "cuda", 90), "bfloat16")):
        assert cfg_cls.from_heuristic(*args, dtype=dt).ctas == 1, (args, dt)
    monkeypatch.setattr(K, "_CLUSTER_TRITON", ())
    assert cfg_cls.from_heuristic(384, 2, False, "cuda", 90, dtype="bfloat16").ctas == 1


def test_cluster_form_matches_the_hold_kernel(device):
    """The cluster form (``ctas > 1``: gamma / bias loaded a chunk ahead; with SiLU's fast forms its
    exponent as its own FMA) changes when the operands are loaded, not the arithmetic, unless the fast
    SiLU is folded: bit for bit the plain hold kernel's result with the precise forms or without SiLU,
    with and without bias, at 2 and 3 chunks with a masked last chunk; with the fast forms within the
    contract's tolerance of the fp32 chain and within one rounding of the fp64 formula."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run here")
    K, launch = _triton_launch()
    torch.manual_seed(13)
    for C, chunks in ((7, 2), (10, 3)):
        x = (torch.randn(2, C, 1, 3, 7, device=device) * 3).to(torch.bfloat16)
        gamma = (torch.rand(C, device=device) + 0.5).to(torch.bfloat16)
        bias = (torch.randn(C, device=device) * 2).to(torch.bfloat16)
        atol, rtol = spec("triton").contract.tolerance(x.dtype)
        for b in (bias, None):
            for fast in (False, True):
                hold = K.ChannelConfig(block_c=4, block_p=8, chunks=chunks, num_warps=1, hold=True, fast=fast)
                cluster = dataclasses.replace(hold, ctas=2)
                assert torch.equal(launch(x, gamma, b, silu=False, config=hold),
                                   launch(x, gamma, b, silu=False, config=cluster)), (C, b is None, fast)
                out = launch(x, gamma, b, silu=True, config=cluster)
                if not fast:
                    assert torch.equal(out, launch(x, gamma, b, silu=True, config=hold)), (C, b is None)
                ref = norm.channel_rms_norm_reference(x, gamma, b, silu=True)
                testing.assert_close(out, ref, atol=atol, rtol=rtol)
                t, scale = truth(x, gamma, b, 1e-12, True)
                assert_within(out, t, 1e-5 * scale, UNIT[out.dtype] + 4e-6)


def test_split_channels():
    split = split_channels
    assert split(96) == (64, 32) and split(192) == (128, 64) and split(384) == (256, 128)
    assert split(100) == (64, 64) and split(128) == (128, 1) and split(1) == (1, 1) and split(7) == (4, 4)


def test_zero_input_uses_eps(backend, device):
    """All-zero positions: the norm is 0 < eps, so y = 0 * ... + bias (no NaN)."""
    C = 16
    x = torch.zeros(1, C, 2, 3, 4, device=device).to(torch.bfloat16)
    b = torch.randn(C, device=device).to(torch.bfloat16)
    out = run_both(backend, x, torch.rand(C, device=device).to(torch.bfloat16), b)
    testing.assert_exact(out, b.reshape(1, C, 1, 1, 1).expand_as(out).contiguous())
    tiny = torch.full((1, C, 1, 1, 2), 1e-20, device=device)  # ||x|| = 4e-20: eps=1e-12 dominates
    run_both(backend, tiny, torch.ones(C, device=device))


def test_empty(backend, device):
    g = torch.rand(8, device=device)
    for shape in [(0, 8, 2, 3, 4), (2, 8, 0, 3, 4), (1, 8, 3, 0)]:
        x = torch.randn(shape, device=device)
        out = norm.channel_rms_norm(x, g, backend=backend)
        assert out.shape == x.shape


def _assert_unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        norm.channel_rms_norm(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not norm.can_use_channel_rms_norm(*args, **kw)


def test_unsupported_inputs(device):
    x = torch.randn(1, 8, 2, 3, 4, device=device)
    g = torch.rand(8, device=device)
    _assert_unsupported("must be [B, C, H, W] or [B, C, T, H, W]", x[0, 0], g)
    _assert_unsupported("gamma must be a contiguous", x, torch.rand(7, device=device))
    _assert_unsupported("gamma must be a contiguous", x, torch.rand(8, 1, 1, device=device))  # 4-D shape on 5-D x
    _assert_unsupported("bias must be a contiguous", x, g, torch.rand(1, 8, device=device))
    _assert_unsupported("gamma is required", x, None)
    _assert_unsupported("spatial dims must merge", x[..., :3], g)
    _assert_unsupported("dtype torch.int32", x.to(torch.int32), g)
    _assert_unsupported("must be a torch.Tensor", x, 1.0)
    other = torch.device("meta") if device.type == "cpu" else torch.device("cpu")
    _assert_unsupported("all tensors must be on one device", x, g.to(other))
    _assert_unsupported("unknown backend", x, g, backend="nope")


def test_exact_request(device):
    x = torch.randn(1, 8, 2, 3, 4, device=device).to(torch.bfloat16)
    g = torch.rand(8, device=device)
    assert explain(OP, x, g, exact=True).chosen == "torch"
    testing.assert_exact(norm.channel_rms_norm(x, g, exact=True), norm.channel_rms_norm_reference(x, g))
    if "triton" in testing.runnable_backends(OP, device):
        _assert_unsupported("exact", x, g, backend="triton", exact=True)


def test_opcheck(backend, device):
    x = torch.randn(2, 4, 2, 3, 2, device=device).to(torch.bfloat16)
    g = torch.rand(4, 1, 1, 1, device=device).to(torch.bfloat16)
    op = torch.ops.sgl_diffusion.channel_rms_norm.default
    torch.library.opcheck(op, (to_format(x, True), g, g, 1e-6, True, None, backend))


@pytest.mark.parametrize("channels_last", [False, True])
def test_compile_fullgraph_no_graph_break(backend, device, channels_last):
    import torch._dynamo

    def block(x, g):
        return norm.channel_rms_norm(x, g, silu=True, backend=backend) * 2.0

    torch._dynamo.reset()
    x = to_format(torch.randn(1, 16, 2, 3, 4, device=device).to(torch.bfloat16), channels_last)
    g = torch.rand(16, 1, 1, 1, device=device).to(torch.bfloat16)
    expl = torch._dynamo.explain(block)(x, g)
    assert expl.graph_break_count == 0, expl.break_reasons
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    testing.assert_exact(compiled(x, g), block(x, g))


def test_eager_call_skips_custom_op_dispatch(device, monkeypatch):
    x = torch.randn(1, 4, 2, 2, 2, device=device)
    calls = []
    op = torch.ops.sgl_diffusion.channel_rms_norm
    monkeypatch.setattr(torch.ops.sgl_diffusion, "channel_rms_norm", lambda *a: calls.append(a) or op(*a),
                        raising=False)
    norm.channel_rms_norm(x, torch.ones(4, device=device))
    assert calls == []
