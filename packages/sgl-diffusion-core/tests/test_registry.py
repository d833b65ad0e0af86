"""Registry, selection, explain, contracts: a private op with fake backends (no kernels needed)."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import (
    REGISTRY,
    Capabilities,
    Contract,
    InputDesc,
    KernelSpec,
    OpDef,
    UnknownOpError,
    UnsupportedInputError,
    explain,
    module_available,
    register,
    register_op,
    select_impl,
)

OP = "test.scale"


def describe_scale(x, factor=2.0):
    problems = [] if x.dim() >= 1 else ["x must have at least one dim"]
    return InputDesc(platform="cpu" if x.device.type == "cpu" else x.device.type,
                     dtypes=(str(x.dtype).removeprefix("torch."),), last_dim=x.shape[-1] if x.dim() else None,
                     problems=problems)


def impl_fast(x, factor=2.0):
    return x * factor


def impl_ref(x, factor=2.0):
    return x * factor


MOD = __name__
register_op(OpDef(op=OP, distribution="sgl-diffusion-core", describe=f"{MOD}:describe_scale",
                  public=f"{MOD}:impl_ref"))
FAST = register(KernelSpec(op=OP, backend="fast", target=f"{MOD}:impl_fast",
                           capabilities=Capabilities(platforms=("cpu",), dtypes=("float32",), max_last_dim=8),
                           contract=Contract.close(), priority=5))
REF = register(KernelSpec(op=OP, backend="ref", target=f"{MOD}:impl_ref",
                          capabilities=Capabilities(platforms=("cpu", "cuda")), contract=Contract.exact()))


def test_priority_and_capabilities():
    assert select_impl(OP, describe_scale(torch.ones(4))).backend == "fast"
    assert select_impl(OP, describe_scale(torch.ones(9))).backend == "ref"  # over max_last_dim
    assert select_impl(OP, describe_scale(torch.ones(4, dtype=torch.bfloat16))).backend == "ref"
    assert select_impl(OP, describe_scale(torch.ones(4)), exact=True).backend == "ref"


def test_explicit_backend_raises_with_reasons():
    with pytest.raises(UnsupportedInputError) as info:
        select_impl(OP, describe_scale(torch.ones(9)), backend="fast")
    assert "exceeds this backend's limit 8" in str(info.value)
    assert info.value.reasons == {"fast": ["last dim 9 exceeds this backend's limit 8"]}
    with pytest.raises(UnsupportedInputError, match="exact=True"):
        select_impl(OP, describe_scale(torch.ones(4)), backend="fast", exact=True)
    with pytest.raises(UnsupportedInputError, match="unknown backend 'nope'"):
        select_impl(OP, describe_scale(torch.ones(4)), backend="nope")


def test_problems_rule_out_every_backend():
    with pytest.raises(UnsupportedInputError) as info:
        select_impl(OP, describe_scale(torch.tensor(1.0)))
    assert set(info.value.reasons) == {"fast", "ref"}
    assert "at least one dim" in str(info.value)


def test_explain():
    e = explain(OP, torch.ones(9, dtype=torch.bfloat16))
    assert e.chosen == "ref"
    fast = next(v for v in e.verdicts if v.backend == "fast")
    assert not fast.ok and len(fast.reasons) == 2  # dtype and width
    assert "[no] fast" in str(e) and "[ok] ref" in str(e)
    assert explain(OP, torch.ones(4), backend="ref").chosen == "ref"


def test_conflicting_registration_raises_identical_is_noop():
    register(REF)  # same spec again: fine
    with pytest.raises(ValueError, match="conflicting registration"):
        register(KernelSpec(op=OP, backend="ref", target=f"{MOD}:impl_fast",
                            capabilities=REF.capabilities, contract=REF.contract))
    with pytest.raises(ValueError, match="conflicting registration of op"):
        register_op(OpDef(op=OP, distribution="other", describe=f"{MOD}:describe_scale", public=f"{MOD}:impl_ref"))
    with pytest.raises(ValueError, match="register op"):
        register(KernelSpec(op="test.unknown", backend="x", target=f"{MOD}:impl_ref",
                            capabilities=REF.capabilities, contract=REF.contract))


def test_spec_load_and_targets():
    assert FAST.load() is impl_fast
    assert [s.backend for s in REGISTRY.specs(OP)] == ["fast", "ref"]
    with pytest.raises(KeyError, match="unknown op"):
        REGISTRY.op("test.none")


def test_contract_tolerances():
    c = Contract.close({"bfloat16": (0.5, 0.25)})
    assert c.tolerance(torch.bfloat16) == (0.5, 0.25)
    assert c.tolerance("float32") == (1e-5, 1e-5)
    assert Contract.exact().tolerance(torch.float32) == (0.0, 0.0)
    with pytest.raises(KeyError):
        Contract("close", ()).tolerance(torch.float16)
    assert str(Contract.exact()) == "exact"


def test_arch_limits():
    spec = KernelSpec(op=OP, backend="arch", target=f"{MOD}:impl_ref",
                      capabilities=Capabilities(platforms=("cuda", "hip"),
                                                min_arch=(("cuda", 80), ("hip", "gfx942"))),
                      contract=Contract.exact())
    assert spec.reasons(InputDesc(platform="cuda", arch=90)) == []
    assert "below the minimum sm_80" in spec.reasons(InputDesc(platform="cuda", arch=75))[0]
    assert "not one of gfx942" in spec.reasons(InputDesc(platform="hip", arch="gfx90a"))[0]
    assert spec.reasons(InputDesc(platform="hip", arch="gfx942")) == []
    assert "runs on cuda/hip" in spec.reasons(InputDesc(platform="mps"))[0]


def test_interpreter_backend_only_when_asked(monkeypatch):
    spec = KernelSpec(op=OP, backend="tri", target=f"{MOD}:impl_ref",
                      capabilities=Capabilities(platforms=("cuda",), interpretable=True),
                      contract=Contract.exact())
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert spec.reasons(InputDesc(platform="cpu"), explicit=True) == []
    assert "ask for it with backend=" in spec.reasons(InputDesc(platform="cpu"))[0]
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert "TRITON_INTERPRET=1" in spec.reasons(InputDesc(platform="cpu"), explicit=True)[0]


def test_missing_module_is_a_reason():
    spec = KernelSpec(op=OP, backend="mod", target=f"{MOD}:impl_ref",
                      capabilities=Capabilities(platforms=("cpu",), requires=("no_such_module_xyz",)),
                      contract=Contract.exact())
    assert "no_such_module_xyz" in spec.reasons(InputDesc(platform="cpu"))[0]


def test_unimported_domain_is_imported_on_lookup(tmp_path, monkeypatch):
    """`explain("fakedomain.op", ...)` works before anyone imported sgl_diffusion_fakedomain."""
    import sys

    pkg = tmp_path / "sgl_diffusion_fakedomain"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from sgl_diffusion_core import Capabilities, Contract, KernelSpec, OpDef, register, register_op\n"
        f"register_op(OpDef(op='fakedomain.scale', distribution='sgl-diffusion-fakedomain',\n"
        f"                  describe='{MOD}:describe_scale', public='{MOD}:impl_ref'))\n"
        f"register(KernelSpec(op='fakedomain.scale', backend='ref', target='{MOD}:impl_ref',\n"
        "                    capabilities=Capabilities(platforms=('cpu',)), contract=Contract.exact()))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from sgl_diffusion_core import module_available

    module_available.cache_clear()
    assert "sgl_diffusion_fakedomain" not in sys.modules
    assert explain("fakedomain.scale", torch.ones(3)).chosen == "ref"
    assert "sgl_diffusion_fakedomain" in sys.modules
    with pytest.raises(KeyError, match=r"no installed package provides ops named nosuchdomain\.\*") as info:
        REGISTRY.op("nosuchdomain.op")
    assert "sgl-diffusion-nosuchdomain" not in str(info.value)  # no distribution name is made up


PROBE = "test.short_name_probe"  # a short name no other op has
register_op(OpDef(op=PROBE, distribution="sgl-diffusion-core", describe=f"{MOD}:describe_scale",
                  public=f"{MOD}:impl_fast"))
register(KernelSpec(op=PROBE, backend="ref", target=f"{MOD}:impl_ref", capabilities=Capabilities(platforms=("cpu",)),
                    contract=Contract.exact()))


def test_an_op_is_named_by_its_id_short_name_or_function():
    x = torch.ones(4)
    assert explain(PROBE, x).op == explain("short_name_probe", x).op == explain(impl_fast, x).op == PROBE
    ops = ["a.foo", "b.foo", "a.bar"]
    assert REGISTRY.resolve("bar", ops) == "a.bar" and REGISTRY.resolve("b.foo", ops) == "b.foo"
    with pytest.raises(UnknownOpError, match="ambiguous: a.foo, b.foo; give the full id"):
        REGISTRY.resolve("foo", ops)


def test_an_unknown_op_name_lists_the_close_matches():
    with pytest.raises(UnknownOpError) as info:
        explain("short_name_prob", torch.ones(4))
    msg = str(info.value)
    assert msg.startswith("unknown op 'short_name_prob'") and f"close matches: {PROBE}" in msg
    assert "sgl-diffusion-short" not in msg and "sgl_diffusion_short" not in msg  # a short name is not a domain
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    with pytest.raises(UnknownOpError, match="close matches: a.bar"):
        REGISTRY.resolve("a.baz", ["a.foo", "a.bar"])


def test_the_interpreter_without_numpy_names_the_triton_extra(monkeypatch):
    """Triton's interpreter imports numpy, which the triton wheel does not declare: a Triton backend
    asked for on CPU under TRITON_INTERPRET=1 says which extra installs it, instead of failing in Triton."""
    import sys

    spec = KernelSpec(op=OP, backend="tri", target=f"{MOD}:impl_ref",
                      capabilities=Capabilities(platforms=("cuda",), interpretable=True), contract=Contract.exact())
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module_available.cache_clear()
    try:
        with monkeypatch.context() as m:
            m.setitem(sys.modules, "numpy", None)  # what an environment without numpy looks like to find_spec
            reasons = spec.reasons(InputDesc(platform="cpu"), explicit=True, distribution="sgl-diffusion-x")
            assert reasons == ["the Triton interpreter (TRITON_INTERPRET=1) needs numpy, which is not installed "
                               "(pip install 'sgl-diffusion-x[triton]')"]
    finally:
        module_available.cache_clear()
    assert spec.reasons(InputDesc(platform="cpu"), explicit=True) == []
