"""The exact variants (``exact=True``, backend ``triton_exact``) and their BitExactFusionGate, CPU lane.

What the CPU lane can and cannot show. The exact kernel reproduces the rounding points of the
eager chains and, for the statistics, the reduction order of PyTorch's *CUDA* kernels; CPU
eager sums in its own order (and the interpreter is not the GPU), so on CPU:

* with inputs whose sums are exact in every order (small integers), the statistics agree and
  the gate must *verify*: every elementwise rounding point (normalized value, weight product,
  bias, ``scale_offset + scale``, product, shift, final cast) is then checked bit for bit;
* with random fp32 inputs the orders usually differ: the documented outcome is ``verified`` or
  ``fallback`` (one ``FusionFallbackWarning``, eager from then on), and in both cases the
  op's result is ``torch.equal`` to eager. Which one happens is recorded, not assumed.

The GPU lane (test_row_norm_exact_gpu.py) checks the production widths.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import FusionFallbackWarning, explain, testing, triton_interpret

K = testing.backend_module("norm.rms_norm", "triton_exact")  # the exact kernels and their rules

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() or triton_interpret()),
    reason="the exact Triton kernel needs a GPU or the interpreter (TRITON_INTERPRET=1)",
)

OPS = {
    "layer_norm": (norm.layer_norm, norm.layer_norm_reference, False),
    "rms_norm": (norm.rms_norm, norm.rms_norm_reference, False),
    "ln_modulate": (norm.ln_modulate, norm.ln_modulate_reference, True),
    "rms_modulate": (norm.rms_modulate, norm.rms_modulate_reference, True),
}


@pytest.fixture(autouse=True)
def fresh_gates():
    for op in OPS:
        norm.exact_gate(f"norm.{op}").reset()
    yield


def _args(op, x, scale, shift, weight, bias):
    fn, ref, modulated = OPS[op]
    if modulated:
        kw = {"weight": weight} if op == "rms_modulate" else {"weight": weight, "bias": bias}
        return (x, scale, shift), kw
    return (x, weight, bias), {}


def _run_exact(op, x, scale=None, shift=None, weight=None, bias=None):
    """Call the exact backend; return (out, eager, gate state, fallback warnings)."""
    fn, ref, _ = OPS[op]
    args, kw = _args(op, x, scale, shift, weight, bias)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*args, backend="triton_exact", exact=True, **kw)
    expected = ref(*args, **kw)
    states = set(norm.exact_gate(f"norm.{op}").states().values())
    falls = [w for w in rec if issubclass(w.category, FusionFallbackWarning)]
    return out, expected, states, falls


def _ints(*shape, lo=-8, hi=8, dtype=torch.bfloat16, device="cpu", gen=None):
    return torch.randint(lo, hi + 1, shape, generator=gen).to(dtype).to(device)


@pytest.mark.parametrize("op", ["rms_norm", "rms_modulate"])
@pytest.mark.parametrize("D", [7, 256, 1000, 2432])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_rms_rounding_points_verify_on_exactly_summable_rows(device, op, D, dtype):
    """Small integers: sum of squares exact in any order, so the gate verifies iff every
    elementwise rounding point matches eager (fp32 weight: the diffusers fp32 result dtype)."""
    if device.type != "cpu":
        pytest.skip("the CPU-order argument; the GPU lane checks real data")
    g = torch.Generator().manual_seed(D)
    x = _ints(2, 3, D, dtype=dtype, gen=g)
    sc = (torch.randn(2, 1, D, generator=g) * 0.5).to(dtype)
    sh = torch.randn(2, 1, D, generator=g).to(dtype)
    for weight in (None, torch.randn(D, generator=g).to(dtype), torch.randn(D, generator=g)):
        norm.exact_gate(f"norm.{op}").reset()
        out, expected, states, falls = _run_exact(op, x, sc, sh, weight)
        testing.assert_exact(out, expected)
        assert states == {"verified"} and not falls, (states, [str(w.message) for w in falls])


@pytest.mark.parametrize("layout", ["sample", "token-strided", "frame", "channel-fp32"])
def test_modulation_rounding_points_verify(device, layout):
    if device.type != "cpu":
        pytest.skip("the CPU-order argument; the GPU lane checks real data")
    g = torch.Generator().manual_seed(5)
    B, S, D = 2, 6, 512
    x = _ints(B, S, D, gen=g)
    r = lambda *s, dt=torch.bfloat16: torch.randn(*s, generator=g).to(dt)  # noqa: E731
    sc, sh = {
        "sample": lambda: (r(B, 1, D), r(B, D)),
        "token-strided": lambda: (lambda p: (p[..., :D], p[..., 2 * D:3 * D]))(r(B, S, 3 * D)),
        "frame": lambda: (r(B, 3, 1, D), r(1, 3, 1, D)),
        "channel-fp32": lambda: (r(D, dt=torch.float32), r(D, dt=torch.float32)),  # Wan keeps mods in fp32
    }[layout]()
    out, expected, states, falls = _run_exact("rms_modulate", x, sc, sh, r(D))
    testing.assert_exact(out, expected)
    assert states == {"verified"} and not falls


@pytest.mark.parametrize("op", ["ln_modulate", "rms_modulate"])
def test_scale_offsets_keep_the_rounding_points(device, op):
    """``scale_offset`` 1 (diffusers' ``1 + scale``) has its own build, where the compiler adds the constant to
    packed bf16 pairs; other offsets take the general one. Small-integer rows (statistics exact in any order)
    and random modulation: the kernel alone is ``torch.equal`` to eager for 1, 0, 0.5 and 1.1 (not a bf16
    value: eager adds the fp32 scalar before rounding). On a GPU the same inputs meet CUDA eager."""
    from sgl_diffusion_core import describe

    g = torch.Generator().manual_seed(11)
    x = _ints(2, 5, 512, gen=g, device=device)
    sc, sh = (torch.randn(2, 1, 512, generator=g).to(torch.bfloat16).to(device) for _ in range(2))
    w = torch.randn(512, generator=g).to(torch.bfloat16).to(device)
    fn, ref, _ = OPS[op]
    geom = describe(f"norm.{op}", x, sc, sh, weight=w).info["geom"]
    kernel = K.prepare_kernel(geom, x, sc, sh, w, None)
    for off in (1.0, 0.0, 0.5, 1.1):
        testing.assert_exact(kernel(x, sc, sh, w, None, 1e-6, off), ref(x, sc, sh, weight=w, scale_offset=off))


def test_bias_only_and_bias_with_weight_rms(device):
    if device.type != "cpu":
        pytest.skip("the CPU-order argument")
    g = torch.Generator().manual_seed(9)
    x = _ints(2, 4, 300, gen=g)
    for w, b in ((None, torch.randn(300, generator=g).to(torch.bfloat16)),
                 (torch.randn(300, generator=g).to(torch.bfloat16), torch.randn(300, generator=g))):
        norm.exact_gate("norm.rms_norm").reset()
        out, expected, states, falls = _run_exact("rms_norm", x, weight=w, bias=b)
        testing.assert_exact(out, expected)
        assert states == {"verified"}


@pytest.mark.parametrize("op", list(OPS))
def test_random_rows_give_eager_bits_whatever_the_gate_decides(device, op):
    """fp32 random rows: the orders of CPU eager and of the kernel usually differ in the last bit.
    Documented outcome: verified or fallback; the result is eager's either way; a fallback warns
    exactly once and is sticky (the second call neither warns nor runs the kernel)."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 1000, generator=g).to(device)
    sc, sh = torch.randn(2, 1, 1000, generator=g).to(device), torch.randn(1000, generator=g).to(device)
    w, b = torch.randn(1000, generator=g).to(device), torch.randn(1000, generator=g).to(device)
    out, expected, states, falls = _run_exact(op, x, sc, sh, w, b)
    testing.assert_exact(out, expected)
    assert len(states) == 1 and states <= {"verified", "fallback"}
    (state,) = states
    assert len(falls) == (state == "fallback")
    if falls:
        assert f"norm.{op}" in str(falls[0].message)
    out2, _, states2, falls2 = _run_exact(op, x, sc, sh, w, b)
    testing.assert_exact(out2, expected)
    assert states2 == states and not falls2


def test_gate_never_verifies_while_tracing(device, monkeypatch):
    """Under torch.compile tracing (or CUDA-graph capture) a pending signature runs eager and stays pending."""
    x = torch.randn(2, 3, 256, device=device)
    plan = testing.backend_prepare("norm.rms_norm", "triton_exact")(testing.geometry("norm.rms_norm", x), x, None, None)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    out = plan(x, None, None, 1e-6, 1.0)
    testing.assert_exact(out, norm.rms_norm_reference(x))
    assert set(norm.exact_gate("norm.rms_norm").states().values()) == set()
    monkeypatch.undo()
    with warnings.catch_warnings():  # random fp32 rows on CPU: a fallback (and its warning) is expected
        warnings.simplefilter("ignore", FusionFallbackWarning)
        plan(x, None, None, 1e-6, 1.0)
    assert set(norm.exact_gate("norm.rms_norm").states().values()) <= {"verified", "fallback"}


def test_signature_includes_eps_and_alignment(device):
    g = torch.Generator().manual_seed(1)
    big = _ints(3, 300, gen=g).to(device)
    for x in (big[:, :256], big[:, 1:257]):  # same shape and strides, different 16-byte alignment
        for eps in (1e-6, 1e-5):
            _run_exact("rms_norm", x)
            norm.rms_norm(x, eps=eps, backend="triton_exact")
    assert len(norm.exact_gate("norm.rms_norm").states()) == 4


def test_default_is_exact_and_selection(device):
    x = torch.randn(2, 3, 64, device=device)
    assert norm.exact_gate("norm.rms_norm") is testing.geometry("norm.rms_norm", x).gate
    want = "triton_exact" if device.type == "cuda" else "torch"
    assert explain("norm.rms_norm", x).chosen == want
    assert explain("norm.rms_norm", x, exact=True).chosen == want
    assert explain("norm.rms_norm", x, exact=False).chosen == ("triton" if device.type == "cuda" else "torch")
    testing.assert_exact(norm.rms_norm(x), norm.rms_norm_reference(x))
    testing.assert_exact(norm.ln_modulate(x, x[:, :1]), norm.ln_modulate_reference(x, x[:, :1]))


@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64)])
def test_exact_empty(device, shape):
    x = torch.randn(shape, device=device)
    out = norm.layer_norm(x, backend="triton_exact")
    assert out.shape == x.shape


@pytest.mark.parametrize("op", ["rms_norm", "rms_modulate", "layer_norm"])
def test_build_choices_keep_the_bits(op):
    """The exact kernel's build choices (unroll factors, RMSNorm rows per program, the load forms)
    change its speed, never its arithmetic: every choice gives the default's bits, including a
    last program with fewer rows than ROWS."""
    from sgl_diffusion_core import describe

    prepare = K.prepare_kernel
    torch.manual_seed(11)
    x = torch.randn(1, 7, 520, dtype=torch.float32)
    mod = torch.randn(1, 2, 520) * 0.5
    w = 1 + 0.1 * torch.randn(520)
    if op == "rms_modulate":
        args, kw, tensors = (x, mod[:, :1], mod[:, 1:]), {"weight": w}, (x, mod[:, :1], mod[:, 1:], w, None)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
    geom = describe(f"norm.{op}", *args, **kw).info["geom"]
    ref = prepare(geom, *tensors)(*tensors, 1e-6, 1.0)
    choices = [{"UNROLL": 1, "UNROLL_OUT": 1}, {"UNROLL": 3, "UNROLL_OUT": 2}]
    choices += (
        [{"VEC": False}, {"HOLD": False},
         {"HOLD": False, "UNROLL": 1, "UNROLL_OUT": 1}]
        if op == "layer_norm"
        else [{"ROWS": 2}, {"ROWS": 4, "UNROLL": 1}]
    )
    for tuning in choices:
        testing.assert_exact(prepare(geom, *tensors, tuning=tuning)(*tensors, 1e-6, 1.0), ref)
    if op == "layer_norm":
        with pytest.raises(ValueError, match="one row per program"):
            prepare(geom, *tensors, tuning={"ROWS": 2})


@pytest.mark.parametrize("D", [1536, 2432])
def test_layer_norm_load_forms_keep_the_bits(D):
    """The exact LayerNorm kernel's statistics loop reads a chunk as four strided slot loads or
    one vector load split in registers (``VEC``), and drops the masks of the chunks that lie inside
    the row (``FULL``: 1536 = 3 full chunks of 512; 2432 = 4 full chunks and a partial fifth): the
    same bits each way."""
    from sgl_diffusion_core import describe

    prepare = K.prepare_kernel
    torch.manual_seed(D)
    x = (torch.randn(1, 3, D) * 2 + 0.5).to(torch.bfloat16)
    w, b = (1 + 0.1 * torch.randn(D)).to(torch.bfloat16), (0.1 * torch.randn(D)).to(torch.bfloat16)
    geom = describe("norm.layer_norm", x, w, b).info["geom"]
    tensors = (x, None, None, w, b)
    ref = prepare(geom, *tensors, tuning={"VEC": False, "FULL": 0})(*tensors, 1e-6, 1.0)
    for hold in (False, True):  # few rows: held by default; the re-reading path pinned too
        for tuning in ({}, {"VEC": True}, {"VEC": True, "FULL": 0}, {"VEC": True, "FULL": 1}):
            tuning = {**tuning, "HOLD": hold}
            testing.assert_exact(prepare(geom, *tensors, tuning=tuning)(*tensors, 1e-6, 1.0), ref)


def _aten_layer_norm_order(x: torch.Tensor, eps: float, warp: int = 32, nwarp: int = 4) -> torch.Tensor:
    """An independent model of CUDA eager's LayerNorm statistics order (vectorized path): per-thread
    Welford over 4-element slots of ``4 * warp * nwarp``-wide chunks, then ``cuWelfordCombine``
    halving within warps and across warps; every fp32 step rounded, each contracted ``a * b + c``
    rounded once (fp64 product and sum: a true FMA, the kernel's ``tl.fma``, but where the fp64 sum
    lands exactly on an fp32 tie, which random rows do not meet). Rows of fp32 ``x``;
    returns ``rstd * (x - mean)`` with the interpreter's ``rsqrt`` (``1 / sqrt`` in fp32)."""
    import numpy as np

    f32 = np.float32

    def fma(a, b, c):
        return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f32)

    nt = warp * nwarp
    out = []
    for row in x.numpy().astype(f32):
        D = row.size
        m = np.zeros(nt, f32)
        s = np.zeros(nt, f32)
        c = np.zeros(nt, f32)
        for k in range(-(-D // (4 * nt))):
            for ii in range(4):
                idx = k * 4 * nt + 4 * np.arange(nt) + ii
                ok = idx < D
                v = np.where(ok, row[np.minimum(idx, D - 1)], f32(0))
                rc = np.float32(1.0) / np.float32(k * 4 + ii + 1)
                delta = (v - m).astype(f32)
                nm = fma(delta, np.full(nt, rc, f32), m)
                ns = fma(delta, (v - nm).astype(f32), s)
                m, s, c = np.where(ok, nm, m), np.where(ok, ns, s), np.where(ok, c + 1, c).astype(f32)

        def halve(m, s, c):
            h = m.shape[1] // 2
            mb, ma, sb, sa, cb, ca = m[:, :h], m[:, h:], s[:, :h], s[:, h:], c[:, :h], c[:, h:]
            cnt = (ca + cb).astype(f32)
            coef = np.where(cnt > 0, f32(1) / np.where(cnt > 0, cnt, f32(1)), f32(0)).astype(f32)
            na, nb = (ca * coef).astype(f32), (cb * coef).astype(f32)
            delta = (mb - ma).astype(f32)
            mean = fma(na, ma, (nb * mb).astype(f32))
            m2 = fma((((delta * delta).astype(f32)) * ca).astype(f32), nb, (sa + sb).astype(f32))
            return np.where(cnt > 0, mean, f32(0)), np.where(cnt > 0, m2, f32(0)), cnt

        m, s, c = m.reshape(nwarp, warp), s.reshape(nwarp, warp), c.reshape(nwarp, warp)
        while m.shape[1] > 1:
            m, s, c = halve(m, s, c)
        m, s, c = m.reshape(1, nwarp), s.reshape(1, nwarp), c.reshape(1, nwarp)
        while m.shape[1] > 1:
            m, s, c = halve(m, s, c)
        mean, m2 = m[0, 0], s[0, 0]
        var = np.float32(np.float64(m2) / np.float64(D))
        rstd = f32(1) / np.sqrt(f32(var + f32(eps)))
        out.append((rstd * (row - mean).astype(f32)).astype(f32))
    return torch.from_numpy(np.stack(out))


@pytest.mark.parametrize("D", [520, 1536, 2432, 3100])
@pytest.mark.parametrize("vec,hold", [(True, False), (True, True), (False, False)])
def test_layer_norm_kernel_follows_eagers_reduction_order(D, vec, hold):
    """The exact LayerNorm kernel against an independent model of eager's CUDA order (above), on
    random fp32 rows where the order decides the bits: catches a wrong tree, table or slot order
    on the CPU lane (the gate's own CPU checks cannot: there eager sums in another order)."""
    from sgl_diffusion_core import describe

    prepare = K.prepare_kernel
    torch.manual_seed(D)
    x = torch.randn(1, 3, D) * 3 + 0.7
    geom = describe("norm.layer_norm", x).info["geom"]
    tensors = (x, None, None, None, None)
    tuning = {"VEC": vec, "HOLD": hold}  # 3100: 7 chunks = 4 + 2 + 1, held
    got = prepare(geom, *tensors, tuning=tuning)(*tensors, 1e-6, 1.0)
    testing.assert_exact(got.reshape(3, D), _aten_layer_norm_order(x.reshape(3, D), 1e-6))


@pytest.mark.parametrize("D", [1024, 1152])
@pytest.mark.parametrize("op", ["layer_norm", "ln_modulate"])
def test_unmasked_full_chunks_keep_the_bits(op, D):
    """The exact LayerNorm kernel drops the masks (loads, stores, Welford selects) of the chunks
    that lie inside the row (``FULL``: every chunk at 1024, two of three at 1152): the same bits
    as the masked build."""
    from sgl_diffusion_core import describe

    prepare = K.prepare_kernel
    torch.manual_seed(5)
    x = torch.randn(1, 3, D, dtype=torch.bfloat16)
    mod = (torch.randn(1, 2, D) * 0.5).to(torch.bfloat16)
    w = (1 + 0.1 * torch.randn(D)).to(torch.bfloat16)
    if op == "ln_modulate":
        args, kw, tensors = (x, mod[:, :1], mod[:, 1:]), {}, (x, mod[:, :1], mod[:, 1:], None, None)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
    geom = describe(f"norm.{op}", *args, **kw).info["geom"]
    for hold in (False, True):
        ref = prepare(geom, *tensors, tuning={"FULL": 0, "HOLD": hold})(*tensors, 1e-6, 1.0)
        testing.assert_exact(prepare(geom, *tensors, tuning={"HOLD": hold})(*tensors, 1e-6, 1.0), ref)


def test_wide_layer_norm_rows_keep_the_loop():
    """``VEC`` unrolls the statistics at compile time, so only rows of up to 16 chunks take it
    (an sm_90 build at D = 65536 took 69 s); wider rows keep the loop over chunks."""
    from types import SimpleNamespace

    from sgl_diffusion_core import RowGeometry
    from sgl_diffusion_norm._row_norm import chain_dtypes

    launch_constants = K.launch_constants
    dt = torch.bfloat16
    ch = chain_dtypes("layer", dt, None, None, torch.empty(0, dtype=dt), None)
    for D, vec in ((8192, True), (8704, False), (65536, False)):
        geom = SimpleNamespace(x=RowGeometry(1, 64, D, 64 * D, D, (1, 64, D), False), chain=ch, norm="layer",
                               scale=None, shift=None)
        assert launch_constants(geom, None, None, "cuda")["VEC"] is vec, D


def _aten_rms_norm_order(x: torch.Tensor, eps: float, lanes: int = 32) -> torch.Tensor:
    """An independent model of CUDA eager's RMSNorm statistics order (one warp-row of ``lanes``
    threads, 4 fp32 accumulators per thread over ``4 * lanes``-wide chunks, added chunk after
    chunk; ``((a0 + a1) + a2) + a3``; the warp halving tree), with the CPU lane's mean (the sum
    divided by ``D``) and the interpreter's ``rsqrt``. Rows of fp32 ``x``; returns ``x * rstd``."""
    import numpy as np

    f32 = np.float32
    out = []
    for row in x.numpy().astype(f32):
        D = row.size
        acc = np.zeros(4 * lanes, f32)
        for k in range(-(-D // (4 * lanes))):
            v = np.zeros(4 * lanes, f32)
            part = row[k * 4 * lanes:(k + 1) * 4 * lanes]
            v[: part.size] = part
            acc = (acc + (v * v).astype(f32)).astype(f32)
        a = acc.reshape(lanes, 4)
        t = (((a[:, 0] + a[:, 1]).astype(f32) + a[:, 2]).astype(f32) + a[:, 3]).astype(f32)
        while t.size > 1:
            t = (t[: t.size // 2] + t[t.size // 2:]).astype(f32)
        var = f32(np.float64(t[0]) / np.float64(D))
        rstd = f32(1) / np.sqrt(f32(var + f32(eps)))
        out.append((row * rstd).astype(f32))
    return torch.from_numpy(np.stack(out))


@pytest.mark.parametrize("D", [520, 1920, 2432])
@pytest.mark.parametrize("hold", [True, False])
def test_rms_norm_kernel_follows_eagers_reduction_order(D, hold):
    """The exact RMSNorm kernel, the held row (``HOLD``: 520 = 5 chunks of 128 = 4 + 1 and 2432 =
    19 = 16 + 2 + 1, walked as join trees; 1920 = 15 chunks held as 16, the last past the row) and
    the re-reading loop, against an independent model
    of eager's CUDA order on random fp32 rows where the order decides the bits."""
    from sgl_diffusion_core import describe

    prepare = K.prepare_kernel
    reduce_lanes = K.reduce_lanes
    rows = 16  # from 16 rows ATen's block is one warp wide: eager's production layout (32 lanes)
    assert reduce_lanes(rows, D, 32) == (32, True)
    torch.manual_seed(D)
    x = torch.randn(1, rows, D) * 3 + 0.7
    geom = describe("norm.rms_norm", x).info["geom"]
    tensors = (x, None, None, None, None)
    run = prepare(geom, *tensors, tuning={"HOLD": hold})
    got = run(*tensors, 1e-6, 1.0).reshape(rows, D)
    testing.assert_exact(got, _aten_rms_norm_order(x.reshape(rows, D), 1e-6))


def _exact_case(op, D, rows=None):
    """``op``'s geometry and kernel tensors at ``rows`` rows of width ``D``, bf16. By default LayerNorm 5
    rows, RMSNorm 17: from 16 rows ATen's block gives an RMSNorm row one warp (32 lanes, chunks of 128:
    the production layout; at 5 rows 128 lanes, chunks of 512), and 17 leaves a last program with fewer
    rows where a program takes several."""
    from sgl_diffusion_core import describe

    torch.manual_seed(D)
    rows = rows or (17 if op.startswith("rms") else 5)
    x = (torch.randn(1, rows, D) * 2 + 0.5).to(torch.bfloat16)
    mod = (torch.randn(1, 2, D) * 0.5).to(torch.bfloat16)
    w = (1 + 0.1 * torch.randn(D)).to(torch.bfloat16)
    if op.endswith("modulate"):
        kw = {"weight": w} if op == "rms_modulate" else {}
        args, tensors = (x, mod[:, :1], mod[:, 1:]), (x, mod[:, :1], mod[:, 1:], kw.get("weight"), None)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
    return describe(f"norm.{op}", *args, **kw).info["geom"], tensors


# RMSNorm's build choices spread over its widths (each one at one width: they do not depend on it)
HELD_CASES = [("rms_modulate", 2432, ({"ROWS": 2}, {"MOD_AHEAD": 0}, {"MOD_AHEAD": 8}, {"MOD_AHEAD": 32})),
              ("rms_norm", 640, ({"ROWS": 1}, {"ROWS": 4})),
              ("rms_modulate", 2440, ({}, {"MOD_AHEAD": 2})), ("ln_modulate", 2432, ({},)),
              ("layer_norm", 1536, ({},)), ("ln_modulate", 3100, ({},)), ("layer_norm", 3584, ({},)),
              ("ln_modulate", 4096, ({},)), ("rms_modulate", 1920, ({}, {"MOD_AHEAD": 0})),
              ("layer_norm", 7680, ({},))]


@pytest.mark.parametrize("op,D,builds", HELD_CASES, ids=[f"{op}-{D}" for op, D, _ in HELD_CASES])
def test_held_row_keeps_the_bits(op, D, builds):
    """The row held in registers (``HOLD``: read once, its chunks as join trees of up to three
    powers of two: RMSNorm 2432 = 19 chunks of 128 = 16 + 2 + 1, 640 = 4 + 1, 2440 = 16 + 4 with a
    partial last chunk, 1920 = 15 chunks held as 16; LayerNorm 2432 = 5 chunks of 512 with a partial
    last one = 4 + 1, 1536 = 2 + 1, 3584 = 4 + 2 + 1, 3100 = 4 + 2 + 1 with a partial last one, 7680
    = 15 held as 16) gives the bits of the kernel
    that reads x twice (RMSNorm: the loop; LayerNorm: its loads a chunk ahead, the rule), in bf16,
    RMSNorm with 1, 2 and 4 rows per program (a last program with fewer rows) and with the output
    chain's operands loaded ahead (``MOD_AHEAD``: RMSNorm's rule, groups of 4 chunks at 2440 = 20
    chunks and 2432 = 19 = 4 x 4 + 2 + 1; tuned: 19 = 2 x 8 + 2 + 1, and 32 capped at the row's 16 +
    2 + 1) or not, each choice at one of the widths."""
    prepare = K.prepare_kernel
    geom, tensors = _exact_case(op, D)
    ref = prepare(geom, *tensors, tuning={"HOLD": False})(*tensors, 1e-6, 1.0)
    assert K.launch_constants(geom, *tensors[3:], "cpu", {"HOLD": True}, torch.bfloat16)["HOLD1"] > 0
    for extra in builds:
        if extra.get("MOD_AHEAD"):  # the group the build really uses: at most the row, leftovers in smaller groups
            const = K.launch_constants(geom, *tensors[3:], "cpu", {"HOLD": True, **extra}, torch.bfloat16)
            assert const["MOD_AHEAD"] == min(extra["MOD_AHEAD"], 1 << (const["CHUNKS"].bit_length() - 1))
        run = prepare(geom, *tensors, tuning={"HOLD": True, **extra})
        testing.assert_exact(run(*tensors, 1e-6, 1.0), ref)


@pytest.mark.parametrize("op,D,group", [("rms_modulate", 1152, 4), ("rms_modulate", 2432, 4), ("rms_norm", 384, 2),
                                        ("rms_norm", 5120, 4), ("rms_norm", 6144, 4), ("rms_modulate", 5120, 2)])
def test_operands_ahead_rule(op, D, group):
    """Held RMSNorm rows load the output chain's operands 4 chunks ahead at any chunk count (9 and 19
    chunks too: the leftovers go in smaller groups), 2 in a modulated row of more than 32 chunks, and
    never more than the row."""
    geom, tensors = _exact_case(op, D)
    const = K.launch_constants(geom, *tensors[3:], "cuda", {}, torch.bfloat16)
    assert const["HOLD1"] > 0 and const["MOD_AHEAD"] == group


@pytest.mark.parametrize("op,D", [("rms_modulate", 2440), ("layer_norm", 3100), ("ln_modulate", 4096)])
def test_output_pass_rule(op, D):
    """Rows read twice: LayerNorm's output pass loads a chunk ahead (``OUT_AHEAD`` 1), RMSNorm's is the loop."""
    geom, tensors = _exact_case(op, D)
    const = K.launch_constants(geom, *tensors[3:], "cuda", {"HOLD": False}, torch.bfloat16)
    assert const["OUT_AHEAD"] == (0 if op.startswith("rms") else 1)
    assert K.launch_constants(geom, *tensors[3:], "cuda", {"HOLD": True}, torch.bfloat16)["OUT_AHEAD"] == 0


def test_tuning_is_checked():
    """Only the rules' own build choices can be tuned; ``MOD_AHEAD`` is 0 or a power of two."""
    from sgl_diffusion_core import describe

    x = torch.randn(1, 4, 256)
    geom = describe("norm.rms_norm", x).info["geom"]
    for removed in ("WPR", "HW_FMA", "TREE", "MOD_EARLY", "HOLD_BYTES", "OUT_AHEAD"):
        with pytest.raises(ValueError, match="not a tunable"):
            K.prepare_kernel(geom, x, None, None, None, None, tuning={removed: 1})
    for bad in (3, -1, 2.0, True):
        with pytest.raises(ValueError, match="MOD_AHEAD"):
            K.prepare_kernel(geom, x, None, None, None, None, tuning={"MOD_AHEAD": bad})
    xl = torch.randn(1, 4, 1152)  # LayerNorm: 2 of its 3 chunks of 512 lie inside the row
    lgeom = describe("norm.layer_norm", xl).info["geom"]
    for bad in (3, -1, True, 1.0):
        with pytest.raises(ValueError, match="FULL"):
            K.prepare_kernel(lgeom, xl, None, None, None, None, tuning={"FULL": bad})
    with pytest.raises(ValueError, match="MOD_AHEAD loads RMSNorm"):  # LayerNorm has no operands-ahead build
        K.prepare_kernel(lgeom, xl, None, None, None, None, tuning={"HOLD": True, "MOD_AHEAD": 2})
    K.prepare_kernel(lgeom, xl, None, None, None, None, tuning={"HOLD": True, "MOD_AHEAD": 0})
    with pytest.raises(ValueError, match="FULL"):  # RMSNorm reads every chunk masked
        K.prepare_kernel(geom, x, None, None, None, None, tuning={"FULL": 1})
    for bad in (3, 8, 0):  # a LayerNorm program's physical warps: 1, 2 or 4 (its lanes stay 4 x 32)
        with pytest.raises(ValueError, match="WARPS"):
            K.prepare_kernel(lgeom, xl, None, None, None, None, tuning={"WARPS": bad})
    for bad in (3, 8, 0):  # an RMSNorm row's warps: eager's warp-row on 1, 2 or 4
        with pytest.raises(ValueError, match="WARPS"):
            K.prepare_kernel(geom, x, None, None, None, None, tuning={"WARPS": bad})
    for bad in (16, 0, 1):  # the whole row held or x read twice
        with pytest.raises(ValueError, match="HOLD"):
            K.prepare_kernel(geom, x, None, None, None, None, tuning={"HOLD": bad})
    if triton_interpret():  # a launch option: the interpreter ignores warps, but a one-warp program reduces
        # through other code with the same combines: its inter-warp levels in registers (a partial last chunk:
        # several coefficient runs per tree level), and for rows of full chunks its tiles in another row order
        for D in (1152, 1000, 1536):
            xw = torch.randn(1, 4, D)
            wgeom = describe("norm.layer_norm", xw).info["geom"]
            tensors = (xw, None, None, None, None)
            want = K.prepare_kernel(wgeom, *tensors, tuning={"WARPS": 4})(*tensors, 1e-6, 1.0)
            for warps in (1, 2):
                got = K.prepare_kernel(wgeom, *tensors, tuning={"WARPS": warps})(*tensors, 1e-6, 1.0)
                testing.assert_exact(got, want)


def test_exact_tune_sweeps_build_choices(tmp_path, monkeypatch):
    """The benchmark file's ``exact-tune`` (a GPU tuning aid, run here under the interpreter at a small
    size): the rule's build and each tuning, their bits compared with eager, ``torch.compile`` of the
    eager chain beside them (here an identity compiler: its bits are eager's), the record written per
    case; an op without the exact kernel's tunings and an unknown case are refused."""
    import json
    import sys

    from sgl_diffusion_core import REGISTRY, bench

    module = sys.modules[bench.load_cases(REGISTRY.op("norm.rms_norm")).__module__]
    monkeypatch.setattr(torch, "compile", lambda fn: fn)
    out = tmp_path / "sweep.json"
    assert module._main(["exact-tune", "--op", "rms_norm", "--cases", "d256-b1-s16", "--tuning", '{"WARPS": 2}',
                         "--tuning", '{"HOLD": false}', "--rounds", "1", "--rep", "3", "--out", str(out),
                         "--compile"]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["config"], r["default"]) for r in rows] == [
        ("d256-b1-s16", "default", True), ("d256-b1-s16", "WARPS=2", False), ("d256-b1-s16", "HOLD=False", False),
        ("d256-b1-s16", "torch.compile", False)]
    assert all(r["median_us"] > 0 and r["note"] is None for r in rows)
    with pytest.raises(ValueError, match="exact_tune sweeps"):
        module.exact_tune("ln_modulate", torch.device("cpu"), [])
    with pytest.raises(ValueError, match="unknown row-norm bench case"):
        module.exact_tune("rms_norm", torch.device("cpu"), [], ["d256-s16"])
