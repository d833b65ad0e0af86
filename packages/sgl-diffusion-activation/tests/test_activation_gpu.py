"""GPU lane: production shapes (docs/design.md) against CUDA eager within the declared tolerance
and against the fp64 oracle, CUDA graphs, inductor, more than 2**31 elements.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from act_oracle import check_fp64, every_value, tail_values

import sgl_diffusion_activation as act
from sgl_diffusion_core import REGISTRY, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

FFN = {"flux_mlp": (4608, 12288), "wan_ffn": (75600, 13824)}
EAGER = {"silu": F.silu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu": F.gelu}


def tol(op: str, dtype: torch.dtype) -> tuple[float, float]:
    spec = next(s for s in REGISTRY.specs(f"activation.{op}") if s.backend == "triton")
    return spec.contract.tolerance(dtype)


def assert_close_big(out, ref, op):
    """The declared tolerance, checked on the device (a 1e9-element tensor in fp64 on the host is
    40 GB of temporaries); on failure the offending rows go through ``testing.assert_close`` for
    its report of the worst coordinates."""
    atol, rtol = tol(op, ref.dtype)
    a, e = out.float(), ref.float()
    bad = ((a - e).abs() > atol + rtol * e.abs()) & ~(a.isnan() & e.isnan()) & ~((a == e) & e.isinf())
    if bool(bad.any()):
        rows = bad.reshape(-1, bad.shape[-1]).any(-1).nonzero().flatten()[:64]
        testing.assert_close(out.reshape(-1, out.shape[-1])[rows], ref.reshape(-1, ref.shape[-1])[rows],
                             atol=atol, rtol=rtol)
        raise AssertionError("mismatch found on the device but not on the host")  # unreachable if consistent


def _oracle_rows(out, act_name, a, b=None, rows=2048):
    """The fp64 oracle on a sample of rows (first, last and strided ones): the full tensors are too big for fp64."""
    n = out.shape[0]
    idx = torch.unique(torch.cat([torch.arange(min(rows, n)), torch.arange(max(n - 64, 0), n),
                                  torch.linspace(0, n - 1, 256).long()])).to(out.device)
    check_fp64(out[idx], act_name, a[idx], None if b is None else b[idx])


@pytest.mark.parametrize("case", list(FFN))
@pytest.mark.parametrize("name", ["silu", "gelu_tanh", "gelu"])
def test_glu_production(case, name):
    N, D = FFN[case]
    op = f"{name}_and_mul"
    x = torch.randn(N, 2 * D, device="cuda", dtype=torch.bfloat16)
    out = getattr(act, op)(x)
    ref = EAGER[name](x[:, :D]) * x[:, D:]
    assert_close_big(out, ref, op)
    _oracle_rows(out, name, x[:, :D], x[:, D:])
    split = getattr(act, f"{name}_mul")(x[:, :D], x[:, D:])
    testing.assert_exact(split, out)  # same kernel, same math


@pytest.mark.parametrize("case", list(FFN))
@pytest.mark.parametrize("name", ["silu", "gelu_tanh", "gelu"])
def test_unary_production(case, name):
    N, D = FFN[case]
    x = torch.randn(N, D, device="cuda", dtype=torch.bfloat16)
    out = getattr(act, name)(x)
    assert_close_big(out, EAGER[name](x), name)
    _oracle_rows(out, name, x)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("name", ["silu", "gelu_tanh", "gelu"])
def test_tails_on_gpu(dtype, name):
    """libdevice's exp / erfc (the GPU formulas; the CPU lane runs the interpreter's) against the oracle."""
    x = tail_values(dtype, "cuda").reshape(1, -1)
    check_fp64(getattr(act, name)(x), name, x)
    b = torch.randn_like(x, dtype=torch.float32).to(dtype)
    check_fp64(getattr(act, f"{name}_mul")(x, b), name, x, b)
    bias = torch.randn(x.shape[-1], device="cuda").to(dtype)
    check_fp64(getattr(act, name)(x, bias=bias), name, x.double() + bias.double())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["silu", "gelu_tanh", "gelu"])
def test_every_16_bit_value_on_gpu(dtype, name):
    """Every finite bf16 / fp16 value against the fp64 oracle on the GPU, where the 16-bit outputs
    take the approximate ``exp2`` / reciprocal (gelu: PTX's flush-to-zero forms on CUDA)."""
    x = every_value(dtype, "cuda")
    check_fp64(getattr(act, name)(x), name, x)
    check_fp64(getattr(act, f"{name}_mul")(x, torch.ones_like(x)), name, x)
    atol, rtol = tol(name, dtype)
    testing.assert_close(getattr(act, name)(x), EAGER[name](x), atol=atol, rtol=rtol)


def test_bias_and_out_slice():
    N, D = 4608, 12288
    x = torch.randn(N, 2 * D, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(2 * D, device="cuda", dtype=torch.bfloat16)
    buf = torch.zeros(N, D + 3072, device="cuda", dtype=torch.bfloat16)
    view = buf[:, 3072:]
    assert act.silu_and_mul(x, bias=bias, out=view) is view
    h = x + bias
    assert_close_big(view, F.silu(h[:, :D]) * h[:, D:], "silu_and_mul")
    assert bool((buf[:, :3072] == 0).all())


def test_exact_request_is_eager():
    x = torch.randn(4608, 2 * 12288, device="cuda", dtype=torch.bfloat16)
    testing.assert_exact(act.gelu_tanh_and_mul(x, exact=True),
                         F.gelu(x[:, :12288], approximate="tanh") * x[:, 12288:])


def test_more_than_2_31_elements():
    """Offsets past 2**31 elements: int64 row offsets (x has 2**31 + 2 * 27648 * 3 elements)."""
    D = 13824
    N = 2**31 // (2 * D) + 3
    x = torch.randn(N, 2 * D, device="cuda", dtype=torch.bfloat16)
    assert x.numel() > 2**31
    out = act.silu_and_mul(x)
    tail = slice(N - 64, N)
    atol, rtol = tol("silu_and_mul", torch.bfloat16)
    testing.assert_close(out[tail], F.silu(x[tail, :D]) * x[tail, D:], atol=atol, rtol=rtol)
    del out
    y = act.gelu_tanh(x)
    atol, rtol = tol("gelu_tanh", torch.bfloat16)
    testing.assert_close(y[tail], F.gelu(x[tail], approximate="tanh"), atol=atol, rtol=rtol)


def test_cuda_graph_and_inductor():
    import torch._dynamo

    N, D = 4608, 12288
    x = torch.randn(N, 2 * D, device="cuda", dtype=torch.bfloat16)
    buf = torch.empty(N, D, device="cuda", dtype=torch.bfloat16)

    def ffn(x, buf):
        act.gelu_tanh_and_mul(x, out=buf)
        return act.silu_and_mul(x) + buf

    ref = ffn(x, buf.clone())
    torch._dynamo.reset()
    for mode in (None, "reduce-overhead"):
        f = torch.compile(ffn, fullgraph=True, mode=mode)
        for _ in range(3):
            b2 = torch.empty_like(buf)
            out = f(x, b2)
        testing.assert_exact(out, ref)
        testing.assert_exact(b2, act.gelu_tanh_and_mul(x))
    ffn(x, buf)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        ffn(x, buf)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = ffn(x, buf)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, ffn(x, torch.empty_like(buf)))


def _device_fp8() -> torch.dtype:
    """The FP8 format this GPU stores (core's ``device_fp8_dtype``); skips where it stores none."""
    from sgl_diffusion_core import device_fp8_dtype

    fmt = device_fp8_dtype(torch.device("cuda"))
    if fmt is None:
        pytest.skip("this GPU stores no FP8 format the kernel writes (NVIDIA sm_89+, AMD gfx942 / gfx950)")
    return fmt


@pytest.mark.parametrize("case", list(FFN))
@pytest.mark.parametrize("name", ["gelu_tanh", "silu_and_mul", "gelu_tanh_and_mul"])
def test_fp8_result_production(case, name):
    """The FP8 result at FLUX's and Wan's MLP shapes against the chain then row-wise quantization:
    dequantized values within the op's tolerance plus one FP8 code, scales within its rtol."""
    from sgl_diffusion_core import explain

    fp8 = _device_fp8()
    rows, D = FFN[case]
    torch.manual_seed(0)
    x = torch.randn(1, rows, 2 * D if name.endswith("_mul") else D, device="cuda", dtype=torch.bfloat16)
    fn, ref = getattr(act, name), getattr(act, f"{name}_reference")
    assert explain(fn, x, out_dtype=fp8).chosen == "triton"
    q, s = fn(x, out_dtype=fp8)
    rq, rs = ref(x, out_dtype=fp8)
    contract = next(sp for sp in REGISTRY.specs(f"activation.{name}") if sp.backend == "triton").contract
    for lo in range(0, rows, 8192):  # the host check in slices (fp64 copies of the whole tensor are large)
        sl = slice(lo, lo + 8192)
        testing.assert_fp8_close(q[:, sl], s[:, sl], rq[:, sl], rs[:, sl], tolerance=contract.tolerance(x.dtype),
                                 fp8_tolerance=contract.tolerance(fp8))
