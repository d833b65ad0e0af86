"""The pointwise activations (``activation.py``: silu, gelu_tanh, gelu) on every runnable backend
(CPU lane: Triton interpreter), and what every activation op shares (``out=``, empty inputs,
validation, custom ops, ``torch.compile``, bench cases).

Each result is checked twice: against the eager chain (``*_reference``, the torch backend)
within the backend's declared contract, and, for the close backend, against the fp64 oracle
(``act_checks.py``), a bound of about one output ulp that a sloppy formula cannot meet.

Shape grid: D=1 (degenerate), 7 and 1000 (masked tails), 96, 3000 (several column tiles at
every dtype, the last one masked: bf16 unary tiles are 2048 wide, GLU tiles 1024).
"""

from __future__ import annotations

import pytest
import torch
from act_checks import DTYPES, UNARY, contract_check, packed, rnd, spec, split, unary
from act_oracle import check_fp64, every_value, tail_values

import sgl_diffusion_activation as act
from sgl_diffusion_core import UnsupportedInputError, explain, testing, triton_interpret

OP = "activation.silu"


def test_cpu_lane_runs_triton_in_interpreter(device):
    """The CPU lane must exercise the Triton kernels: without TRITON_INTERPRET=1 they would not run."""
    import importlib.util

    if device.type == "cpu" and importlib.util.find_spec("triton") is not None:
        assert triton_interpret(), "CPU lane without TRITON_INTERPRET=1: Triton kernels would not be tested"

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [1, 7, 1000, 3000])
def test_unary(backend, device, name, dtype, D):
    torch.manual_seed(D)
    x = rnd(2, 3, D, dtype=dtype, device=device)
    unary(name, backend, x)
    unary(name, backend, x, bias=rnd(D, dtype=dtype, device=device, scale=0.5))

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_tails_and_specials(backend, device, name, dtype):
    """Negative tails (eager cancels there), sigmoid's overflow ends, huge values, inf, nan, -0.

    +-inf are held to the fp64 oracle only: CPU eager's gelu returns nan for +inf (its
    vectorized erf), where the oracle and CUDA's erff give inf."""
    x = tail_values(dtype, device).reshape(1, -1)
    unary(name, backend, x[x.isinf().logical_not()].reshape(1, -1))
    out = getattr(act, name)(x, backend=backend)
    if spec(name, backend).contract.kind == "close":
        check_fp64(out, name, x)

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gelu_every_16_bit_value(backend, device, dtype):
    """gelu (erf) of every finite bf16 / fp16 value against the fp64 oracle: the 16-bit outputs'
    own erfc formula (``_math_triton._gelu_fast``), over its whole range, subnormals included."""
    x = every_value(dtype, device)
    out = act.gelu(x, backend=backend)
    if spec("gelu", backend).contract.kind == "close":
        check_fp64(out, "gelu", x)
    contract_check("gelu", backend, out, act.gelu_reference(x))

def test_mixed_dtypes(backend, device):
    """A wider bias promotes the result (eager adds it first, then everything is in the wide dtype)."""
    torch.manual_seed(7)
    x = rnd(4, 128, dtype=torch.bfloat16, device=device)
    assert packed("silu", backend, x, bias=rnd(128, dtype=torch.float32, device=device)).dtype == torch.float32
    x = rnd(4, 64, dtype=torch.float16, device=device)
    assert unary("gelu", backend, x, bias=rnd(64, dtype=torch.float32, device=device)).dtype == torch.float32

def test_views_and_leading_dims(backend, device):
    """Any leading strides: slices, a [B, H, W, C] view whose dims do not coalesce (2 and 3 row dims),
    size-1 dims, 1-D input."""
    torch.manual_seed(3)
    big = rnd(3, 10, 2 * 64 + 5, dtype=torch.bfloat16, device=device)
    x = big[:, 1:8, 3:3 + 2 * 64]  # rows (b, s) with gaps: two row dims
    packed("silu", backend, x)
    unary("gelu_tanh", backend, x[..., :64])
    img = rnd(2, 5, 6, 48, dtype=torch.float16, device=device)[:, 1:4, ::2, :]  # three row dims
    unary("silu", backend, img)
    split("gelu", backend, img, rnd(2, 3, 3, 48, dtype=torch.float16, device=device))
    unary("gelu", backend, rnd(1, 1, 5, 1, 33, dtype=torch.float32, device=device)[0])
    unary("silu", backend, rnd(77, dtype=torch.bfloat16, device=device))
    packed("gelu_tanh", backend, rnd(20, dtype=torch.bfloat16, device=device))

def test_irregular_rows_served_by_torch_only(device):
    """Four leading dims that do not coalesce: the kernel cannot index them; auto selection uses torch
    and an explicit triton request raises."""
    x = torch.randn(3, 4, 5, 6, 32, device=device)[::2, ::2, ::2, ::2]
    assert act.silu(x).shape == x.shape
    if device.type == "cpu" and not triton_interpret():
        return
    with pytest.raises(UnsupportedInputError, match="layout 'irregular-rows'"):
        act.silu(x, backend="triton")
    assert not act.can_use_silu(x, backend="triton")

@pytest.mark.parametrize("op", ["silu", "gelu_tanh_and_mul", "gelu_mul"])
def test_out(backend, device, op):
    torch.manual_seed(4)
    D = 96
    dt = torch.bfloat16
    fn, ref = getattr(act, op), getattr(act, f"{op}_reference")
    if op.endswith("_and_mul"):
        args, shape = (rnd(5, 2 * D, dtype=dt, device=device),), (5, D)
    elif op.endswith("_mul"):
        args, shape = (rnd(5, D, dtype=dt, device=device), rnd(5, D, dtype=dt, device=device)), (5, D)
    else:
        args, shape = (rnd(5, D, dtype=dt, device=device),), (5, D)
    expect = fn(*args, backend=backend)
    contract_check(op, backend, expect, ref(*args))
    out = torch.empty(shape, dtype=dt, device=device)
    assert fn(*args, out=out, backend=backend) is out
    testing.assert_exact(out, expect)
    buf = torch.full((5, 3 * D), 7.0, dtype=dt, device=device)
    view = buf[:, D:2 * D]  # a strided slice: the rest of buf stays untouched
    assert fn(*args, out=view, backend=backend) is view
    testing.assert_exact(view, expect)
    assert bool((buf[:, :D] == 7).all()) and bool((buf[:, 2 * D:] == 7).all())
    with pytest.raises(UnsupportedInputError, match="out has shape"):
        fn(*args, out=torch.empty(5, D + 1, dtype=dt, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match="out has dtype"):
        fn(*args, out=torch.empty(shape, dtype=torch.float32, device=device), backend=backend)
    with pytest.raises(UnsupportedInputError, match="all tensors must be on one device"):
        fn(*args, out=torch.empty(shape, dtype=dt, device="meta"), backend=backend)
    with pytest.raises(UnsupportedInputError, match="rows that share memory"):
        fn(*args, out=torch.empty(1, D, dtype=dt, device=device).expand(5, D), backend=backend)
    with pytest.raises(UnsupportedInputError, match="last dim must be contiguous"):
        fn(*args, out=torch.empty(5, 2 * D, dtype=dt, device=device)[:, ::2], backend=backend)

def test_out_in_place(backend, device):
    """out may be the input itself (each element is read before it is written, by the same program)."""
    x = rnd(4, 300, dtype=torch.bfloat16, device=device)
    expect = act.gelu_tanh(x, backend=backend)
    assert act.gelu_tanh(x, out=x, backend=backend) is x
    testing.assert_exact(x, expect)
    h = rnd(4, 600, dtype=torch.bfloat16, device=device)
    expect = act.silu_and_mul(h, backend=backend)
    act.silu_and_mul(h, out=h[:, :300], backend=backend)
    testing.assert_exact(h[:, :300], expect)

@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64), (3, 0)])
def test_empty(backend, device, shape):
    x = torch.randn(shape, device=device).to(torch.bfloat16)
    assert act.silu(x, backend=backend).shape == x.shape
    y = act.silu_and_mul(x, backend=backend)
    assert y.shape == (*shape[:-1], shape[-1] // 2) and y.dtype == torch.bfloat16
    assert act.gelu_mul(x, x, backend=backend).shape == x.shape
    out = torch.empty(shape, dtype=torch.bfloat16, device=device)
    assert act.gelu(x, out=out, backend=backend) is out

def test_close_by_default(device):
    x = torch.randn(2, 64, device=device)
    e = explain("activation.gelu_tanh", x)
    assert e.chosen == ("triton" if device.type == "cuda" else "torch")
    assert {v.backend: v.contract.split()[0] for v in e.verdicts} == {"triton": "close", "torch": "exact"}

def _unsupported(fragment, fn, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        fn(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not getattr(act, f"can_use_{fn.__name__}")(*args, **kw)

def test_unsupported(device):
    x = torch.randn(4, 32, device=device)
    _unsupported("dtype torch.int64", act.silu, x.long())
    _unsupported("must be a torch.Tensor", act.silu, 1.0)
    _unsupported("last dim must be contiguous", act.gelu, torch.randn(4, 64, device=device)[:, ::2])
    _unsupported("at least one dimension", act.gelu_tanh, torch.tensor(1.0, device=device))
    _unsupported("bias must be a contiguous [D] = [32]", act.silu, x, bias=torch.randn(16, device=device))
    _unsupported("bias must be a contiguous [2*D] = [32]", act.silu_and_mul, x, bias=torch.randn(16, device=device))
    _unsupported("last dim must be even", act.gelu_and_mul, torch.randn(4, 31, device=device))
    _unsupported("must have a's shape", act.silu_mul, x, torch.randn(1, 32, device=device))
    _unsupported("b is required", act.gelu_mul, x, None)
    _unsupported("must have one dtype", act.gelu_tanh_mul, x.to(torch.bfloat16), x)
    other = torch.device("meta") if device.type == "cpu" else torch.device("cpu")
    _unsupported("all tensors must be on one device", act.silu_mul, x, x.to(other))
    _unsupported("unknown backend", act.silu, x, backend="nope")
    _unsupported("dtype float64 is not supported", act.silu, x.double())
    assert act.can_use_silu(x) and act.can_use_silu_mul(x, x) and act.can_use_gelu_and_mul(x)

def test_explicit_backend_never_falls_back(device):
    if device.type == "cpu" and not triton_interpret():
        pytest.skip("the triton backend is not runnable on this lane")
    D = spec("silu", "triton").capabilities.max_last_dim + 2
    x = torch.empty(1, D, device="meta")  # describe only: no data is touched
    verdicts = {v.backend: v for v in explain("activation.silu", x).verdicts}
    assert any("limit" in r for r in verdicts["triton"].reasons)

def test_opcheck(backend, device):
    x = rnd(3, 80, dtype=torch.bfloat16, device=device)
    bias = rnd(80, dtype=torch.bfloat16, device=device)
    ops = torch.ops.sgl_diffusion
    torch.library.opcheck(ops.gelu_tanh.default, (x, bias, backend, None))
    torch.library.opcheck(ops.silu_and_mul.default, (x, None, backend, None))
    torch.library.opcheck(ops.gelu_mul.default, (x, x, backend, None))
    out = torch.empty(3, 40, dtype=torch.bfloat16, device=device)
    torch.library.opcheck(ops.silu_and_mul_out.default, (x, bias, out, backend, None))
    torch.library.opcheck(ops.silu_out.default, (x, None, torch.empty_like(x), backend, None))

def test_compile_fullgraph(backend, device):
    """Functional and out= forms under torch.compile(fullgraph=True): no graph break, same result.
    out= is a slice of a bigger buffer (the mutating custom op, functionalized through the view)."""
    import torch._dynamo

    def mlp(h, buf):
        y = act.gelu_tanh_and_mul(h, backend=backend)
        act.silu_and_mul(h, out=buf[:, 8:8 + h.shape[-1] // 2], backend=backend)
        return act.silu(y, backend=backend) * 2, buf

    torch._dynamo.reset()
    h = rnd(6, 96, dtype=torch.bfloat16, device=device)
    buf_eager = torch.zeros(6, 64, dtype=torch.bfloat16, device=device)
    buf_comp = buf_eager.clone()
    expl = torch._dynamo.explain(mlp)(h, buf_comp.clone())
    assert expl.graph_break_count == 0, expl.break_reasons
    y_ref, _ = mlp(h, buf_eager)
    y, buf_out = torch.compile(mlp, fullgraph=True, backend="aot_eager")(h, buf_comp)
    testing.assert_exact(y, y_ref)
    testing.assert_exact(buf_comp, buf_eager)  # the compiled graph wrote through the view into the caller's buffer
    assert buf_out is buf_comp

@pytest.mark.parametrize("op", ["silu", "gelu_tanh_and_mul", "silu_mul"])
def test_bench_cases_build(device, monkeypatch, op):
    """The GPU bench cases at a tiny shape: built, checked, every provider but torch.compile runs, and
    the bytes are the input read once plus the output written once."""
    import sys

    from sgl_diffusion_core import REGISTRY, bench

    cases = bench.load_cases(REGISTRY.op(f"activation.{op}"))
    module = sys.modules[cases.__module__]
    monkeypatch.setattr(module, "SHAPES", {"tiny": (4, 64)})
    case, *fp8 = list(cases(device))
    case.check()
    in_cols = 128 if op.endswith("_mul") else 64
    assert case.bytes == (4 * in_cols + 4 * 64) * 2
    assert set(case.providers) == {"sgl_diffusion", "eager", "torch.compile"}
    for name in ("sgl_diffusion", "eager"):
        assert case.providers[name]().shape == (4, 64)
    # the FP8 result's case (gelu_tanh_and_mul): input read, codes and row scales written
    assert [c.name for c in fp8] == (["tiny-fp8"] if op == "gelu_tanh_and_mul" else [])
    for c in fp8:
        c.check()
        assert c.bytes == 4 * in_cols * 2 + 4 * 64 + 4 * 4
        q, s = c.providers["sgl_diffusion"]()
        assert q.shape == (4, 64) and s.shape == (4, 1)
        # the row scales: equal on the CPU (one rounding of the same fp32 amax), within one bf16 rounding
        # of the activation on a GPU (the kernel computes the activation in fp32 before its amax)
        torch.testing.assert_close(c.providers["eager"]()[1], s, rtol=0 if device.type == "cpu" else 2**-8, atol=0)
    with pytest.raises(ValueError, match="unknown activation bench case"):
        list(module.silu_cases(device, names=["nope"]))
