"""BitExactFusionGate: pending -> verified / fallback per signature, never verifying while tracing."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

from sgl_diffusion_core import BitExactFusionGate, FusionFallbackWarning, call_signature


def counting(fn):
    calls = []

    def wrapped():
        calls.append(1)
        return fn()

    wrapped.calls = calls
    return wrapped


def test_verified_then_fused_only():
    x = torch.randn(4, 8)
    gate = BitExactFusionGate("test.double")
    sig = call_signature(x)
    fused, ref = counting(lambda: x * 2), counting(lambda: x + x)
    assert gate.state(sig) == "pending"
    torch.testing.assert_close(gate.run(fused, ref, sig=sig), x * 2, rtol=0, atol=0)
    assert gate.state(sig) == "verified" and len(fused.calls) == 1 and len(ref.calls) == 1
    for _ in range(3):
        gate.run(fused, ref, sig=sig)
    assert len(fused.calls) == 4 and len(ref.calls) == 1  # no more reference runs


def test_fallback_warns_once_and_returns_reference():
    x = torch.randn(16)
    gate = BitExactFusionGate("test.sloppy")
    sig = call_signature(x, 1e-6)
    fused, ref = counting(lambda: x + 1e-3), counting(lambda: x.clone())
    with pytest.warns(FusionFallbackWarning, match="test.sloppy"):
        out = gate.run(fused, ref, sig=sig)
    assert torch.equal(out, x) and gate.state(sig) == "fallback"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(gate.run(fused, ref, sig=sig), x)  # no second warning
    assert len(fused.calls) == 1  # fused never runs again for this signature


def test_signatures_are_independent_and_nan_positions_count_equal():
    gate = BitExactFusionGate("test.nan")
    a, b = torch.tensor([1.0, float("nan")]), torch.randn(3)
    gate.run(lambda: a.clone(), lambda: a.clone(), sig=call_signature(a))
    assert gate.state(call_signature(a)) == "verified"
    with pytest.warns(FusionFallbackWarning):
        gate.run(lambda: b + 1, lambda: b.clone(), sig=call_signature(b))
    assert gate.states() == {call_signature(a): "verified", call_signature(b): "fallback"}
    gate.reset(call_signature(b))
    assert gate.state(call_signature(b)) == "pending"


def test_tuples_of_tensors():
    gate = BitExactFusionGate("test.pair")
    x = torch.randn(5)
    out = gate.run(lambda: (x * 2, x + 1), lambda: (x + x, 1 + x), sig="s")
    assert gate.state("s") == "verified" and torch.equal(out[0], x * 2)


def test_never_verifies_while_tracing():
    x = torch.randn(8)
    gate = BitExactFusionGate("test.compile")
    fused, ref = counting(lambda: x * 2), counting(lambda: x + x)

    def f(x):
        return gate.run(lambda: x * 2, lambda: x + x, sig="traced") + 1

    torch.compile(f, fullgraph=True, backend="eager")(x)
    assert gate.state("traced") == "pending"  # traced with the reference, nothing verified
    gate.run(fused, ref, sig="traced")
    assert gate.state("traced") == "verified"


def test_thread_safety_single_verification():
    gate = BitExactFusionGate("test.threads")
    x = torch.randn(1000)
    ref = counting(lambda: x + x)
    barrier = threading.Barrier(8)

    def worker():
        barrier.wait()
        for _ in range(50):
            gate.run(lambda: x * 2, ref, sig="shared")

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gate.state("shared") == "verified" and len(ref.calls) == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU")
def test_never_verifies_during_cuda_graph_capture():
    gate = BitExactFusionGate("test.graph")
    x = torch.randn(64, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = gate.run(lambda: x * 2, lambda: x + x, sig="captured")
    assert gate.state("captured") == "pending"
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x + x)


def test_signature_keys_are_interned_and_verified_fast_path():
    x = torch.randn(4, 8)
    gate = BitExactFusionGate("test.key")
    key = gate.key(call_signature(x))
    assert gate.key(call_signature(x)) is key and gate.key(call_signature(x[:2])) is not key
    assert repr(key) == repr(call_signature(x))
    sig = (key, True, 1e-6)
    assert not gate.is_verified(sig)
    gate.run(lambda: x * 2, lambda: x + x, sig=sig)
    assert gate.is_verified(sig) and gate.is_verified((gate.key(call_signature(x)), True, 1e-6))
    gate.reset(sig)
    assert not gate.is_verified(sig)
