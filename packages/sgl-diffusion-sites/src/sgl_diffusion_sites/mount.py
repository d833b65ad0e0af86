"""``optimize(model)`` / ``unmount(model)``: walk a diffusers transformer and mount fused sites.

Recognition is by exact class (``type(m).__name__`` and its diffusers module), never by
``isinstance``: a subclass may have changed ``forward``, and a site re-expresses one known
``forward``. Mounting replaces a module in its parent by a mounted twin (``wrappers.py``) that
shares the original's state, or sets a processor on an attention module; every replacement is
recorded on the model so ``unmount`` restores the original objects in reverse order.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from sgl_diffusion_core import BitExactFusionGate

from . import processors as P
from . import quantized as Q
from . import sliding_tile as ST
from . import wrappers as W
from .fp8 import distance, fp8_targets, mount_fp8_linears, output_tensor
from .kernels import UNDER_COMPILE, Kernels, compile_ops
from .report import MountReport, Site
from .steps import HookMount, layer_of

SUPPORTED_MODELS = (
    "FluxTransformer2DModel",
    "WanTransformer3DModel",
    "SD3Transformer2DModel",
    "QwenImageTransformer2DModel",
    "HunyuanVideoTransformer3DModel",
)

_STATE_ATTR = "_sgl_diffusion_sites_mount"


@dataclass(frozen=True)
class _Rule:
    kind: str
    mixin: type | None  # None: a known chain with no site yet (reported as skipped)
    ops_exact: tuple[str, ...]
    ops_close: tuple[str, ...]
    exact_ok: bool = True  # False: no exact kernel exists; exact mode skips it
    skip_reason: str = ""


_MOD = ("modulate.scale_shift",)
_LNMOD = ("norm.ln_modulate",)
_GR = ("modulate.gated_residual",)

# diffusers class name -> rule
_RULES: dict[str, _Rule] = {
    "AdaLayerNormZero": _Rule("adaln_zero", W.MountedAdaLNZero, _MOD, _LNMOD),
    "AdaLayerNormZeroSingle": _Rule("adaln_zero", W.MountedAdaLNZeroSingle, _MOD, _LNMOD),
    "AdaLayerNormContinuous": _Rule("adaln_continuous", W.MountedAdaLNContinuous, _MOD, _LNMOD),
    "FluxTransformerBlock": _Rule("block_residuals", W.MountedFluxBlock, _GR + _MOD, _GR + _LNMOD),
    "FluxSingleTransformerBlock": _Rule("block_residuals", W.MountedFluxSingleBlock, _GR, _GR),
    "WanTransformerBlock": _Rule("block_residuals", W.MountedWanBlock, _GR + _MOD, _GR + _LNMOD),
    # blocks whose inline chains (modulate, gated residuals) have no site yet
    "SD35AdaLayerNormZeroX": _Rule("adaln_zero", W.MountedSD35AdaLNZeroX, _MOD, _MOD),
    "JointTransformerBlock": _Rule("block_residuals", W.MountedSD3Block, _GR + _MOD, _GR + _LNMOD),
    "QwenImageTransformerBlock": _Rule("block_residuals", W.MountedQwenImageBlock, _GR + _MOD, _GR + _LNMOD),
    "HunyuanVideoTransformerBlock": _Rule("block_residuals", W.MountedHunyuanVideoBlock, _GR + _MOD, _GR + _LNMOD),
    "HunyuanVideoSingleTransformerBlock": _Rule("block_residuals", W.MountedHunyuanVideoSingleBlock, _GR, _GR),
}

_GELU_EXACT_SKIP = ("the gelu_tanh kernel is close only (no exact kernel): the eager activation is kept "
                    "in exact mode; quality='close' mounts it")


def _is_diffusers(m: torch.nn.Module) -> bool:
    return type(m).__module__.startswith("diffusers.")


def _rule_for(m: torch.nn.Module) -> _Rule | None:
    name = type(m).__name__
    if name == "GELU" and _is_diffusers(m):
        if getattr(m, "approximate", None) != "tanh":
            return None
        return _Rule("ff_gelu_tanh", W.MountedGELUProj, (), ("activation.gelu_tanh",), exact_ok=False,
                     skip_reason=_GELU_EXACT_SKIP)
    if type(m) is torch.nn.GELU:
        if m.approximate != "tanh":
            return None
        return _Rule("ff_gelu_tanh", W.MountedGELUTanh, (), ("activation.gelu_tanh",), exact_ok=False,
                     skip_reason=_GELU_EXACT_SKIP)
    if name in _RULES and _is_diffusers(m):
        return _RULES[name]
    return None


@dataclass
class _Mount:
    parent: torch.nn.Module
    name: str  # a child module's name, or "processor" for an attention processor
    original: Any
    mounted: Any

    def restore(self) -> None:
        if self.name == "processor":
            self.parent.set_processor(self.original)
            return
        self.original.training = self.mounted.training
        setattr(self.parent, self.name, self.original)

    def apply(self) -> None:
        if self.name == "processor":
            self.parent.set_processor(self.mounted)
            return
        self.mounted.training = self.original.training
        setattr(self.parent, self.name, self.mounted)


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rpartition(".")
    return parent, name


def optimize(model: torch.nn.Module, *, quality: str = "exact", verify: bool = True,
             backend: str | None = None, under_compile: str = "auto", attention: bool | str = True,
             tile: tuple[int, int, int] = (4, 4, 4), window: tuple[int, int, int] | None = None,
             dense_steps: int = 0, dense_layers: tuple[int, ...] = ()) -> MountReport:
    """Mount the family's fused ops on the sites of a diffusers transformer it recognizes.

    quality: ``"exact"`` (default): every mounted site is ``torch.equal`` to the unmounted
        module (same device, dtype, inputs); with ``verify=True`` each site checks that per
        call signature through a ``BitExactFusionGate`` (fused and eager on first sight of a
        signature; a mismatch makes that signature eager for good, with one
        ``FusionFallbackWarning``, while every other site stays mounted). ``"close"``: also the
        close kernels (one-pass norm + modulate, activations) under their declared tolerances;
        no gate. ``"fp8"``: close, and the attention and MLP linears of every transformer block run
        as FP8 linears (``sgl_diffusion_sites.fp8``: weights per output channel, inputs per row; the
        bf16 weights wait in host memory until ``unmount``); :func:`measure_quality` gives the
        output's PSNR and cosine similarity against the unmounted model on the caller's inputs.
    verify: exact mode only; ``False`` trusts the ops' exact contracts without checking.
    backend: ``None`` (each op picks its best backend for the inputs: on CPU that is the
        eager ``torch`` chain) or a backend name every op is asked for (``"triton"`` runs the
        Triton kernels, under ``TRITON_INTERPRET=1`` on the CPU); an op that cannot serve an
        input with it runs its eager chain there.
    under_compile: what ``torch.compile`` traces at a mounted site (eager calls are not affected).
        ``"auto"`` (default): the ops inductor fuses itself (``scale_shift``, ``gated_residual``,
        ``gelu_tanh``: plain elementwise arithmetic) trace their eager chain, so inductor fuses them
        with the model's norms and the next residual; the others (RoPE, QK-norm, the one-pass
        norm + modulate, the joint concatenation) stay custom ops; a site left with none traces its
        original module. ``"fused"``: every verified op stays a custom op. ``"eager"``: every site
        traces its original module (the mount is invisible to ``torch.compile``).
    attention: close mode: the processors run ``sgl_diffusion_attention.attention`` (a key-padding prefix
        mask as ``kv_lens``); ``False`` and exact mode keep the model's. Each is an ``"attention"`` site.
        ``"sliding_tile"`` (Wan): the video self-attention is block-sparse over 3-D ``tile``s, each query
        tile seeing the ``window`` (tiles per axis) around it, after ``dense_steps`` dense denoising
        steps, except in the blocks ``dense_layers`` lists (``sgl_diffusion_sites.sliding_tile``); the
        notes give the map's density. ``"int8"`` / ``"fp8"`` (every supported model): the mounted
        attention runs ``quantized_attention`` (int8 q and k; or e4m3 q, k, p and v) after
        ``dense_steps`` dense denoising steps, except in the blocks ``dense_layers`` lists
        (``sgl_diffusion_sites.quantized``); measure its distance with :func:`measure_quality`.

    Returns a :class:`MountReport` listing every site considered. Never raises for a model
    it does not know: the report says nothing was mounted and why. A model already mounted is
    unmounted first. ``unmount(model)`` restores the original modules. A module that had been
    compiled (``Module.compile()``, diffusers' ``compile_repeated_blocks``) is mounted uncompiled
    (the report says so: compile it again with :func:`compile_repeated_blocks`); ``unmount`` puts
    the compiled original back. A ``torch.compile(model)`` wrapper is mounted on its ``_orig_mod``.
    """
    if _unwrap(model) is not model:
        inner = optimize(_unwrap(model), quality=quality, verify=verify, backend=backend,
                         under_compile=under_compile, attention=attention, tile=tile, window=window,
                         dense_steps=dense_steps, dense_layers=dense_layers)
        if inner.mounted:
            inner.notes.append(_compiled_model_note("a torch.compile wrapper (OptimizedModule): mounted on its "
                                                    "_orig_mod", inner))
        return inner
    name = type(model).__name__
    report = MountReport(model=name, quality=str(quality), verify=bool(verify), backend=backend or "auto",
                         under_compile=str(under_compile))
    refusal = _refusal(model, quality, under_compile)
    if refusal:
        report.notes.append(refusal)
        return report
    if getattr(model, _STATE_ATTR, None):
        unmount(model)
        report.notes.append("the model was already mounted: unmounted first")

    policy = _attention_policy(model, report, attention, tile, window, dense_steps, dense_layers)
    if policy is False:
        return report
    kernels = Kernels(quality, backend, under_compile)
    report.op_calls = kernels.counts
    mounts: list[Any] = []  # _Mount and fp8.Fp8Mount records, restored in reverse order
    compiled: list[str] = []  # replaced modules that had been compiled
    try:
        _mount_all(model, report, kernels, verify, bool(attention), mounts, compiled, policy)
    except Exception as exc:  # mounting never raises: undo what was mounted and report why
        _undo(mounts, report, exc)
        return report
    _compiled_notes(model, report, compiled)
    object.__setattr__(model, _STATE_ATTR, mounts)
    object.__setattr__(model, "_sgl_diffusion_sites_report", report)
    return report


def _undo(mounts: list[Any], report: MountReport, exc: Exception) -> None:
    """A failed mount: every record restored in reverse order, every site marked skipped, one warning."""
    for mt in reversed(mounts):
        mt.restore()
    for s in report.sites:
        if s.mounted:
            s.status, s.reason, s.gate = "skipped", "mounting failed (see notes); unmounted", None
    report.notes.append(f"mounting failed, nothing left mounted: {type(exc).__name__}: {exc}")
    warnings.warn(f"sgl_diffusion_sites.optimize({report.model}): {report.notes[-1]}", RuntimeWarning, stacklevel=3)


def _attention_policy(model: torch.nn.Module, report: MountReport, attention: object, tile: object, window: object,
                      dense_steps: object, dense_layers: object = ()) -> ST.SlidingTile | Q.Quantized | None | bool:
    """The attention policy of ``attention="sliding_tile"``, ``"int8"`` or ``"fp8"`` (None: dense attention, with
    a note where one was asked for), or False when the arguments are wrong (the note says why; nothing is
    mounted)."""
    if isinstance(attention, str) and attention not in ("sliding_tile", *Q.FORMATS):
        report.notes.append(f"attention={attention!r} is not True, False, 'sliding_tile', 'int8' or 'fp8': "
                            "nothing mounted")
        return False
    if not isinstance(attention, str):
        return None
    if report.quality == "exact":
        report.notes.append(f"attention={attention!r} needs quality='close' or 'fp8' (exact mode keeps the model's "
                            "attention)")
        return None
    try:
        if attention in Q.FORMATS:
            return Q.policy_for(attention, dense_steps, dense_layers, report.notes)
        policy = ST.policy_for(model, tile, window, dense_steps, dense_layers, report.notes)
    except ValueError as exc:
        report.notes.append(f"{exc}: nothing mounted")
        return False
    if isinstance(policy, str):
        report.notes.append(policy)
        return None
    return policy


def _mount_all(model: torch.nn.Module, report: MountReport, kernels: Kernels, verify: bool, attention: bool,
               mounts: list[Any], compiled: list[str], policy: ST.SlidingTile | Q.Quantized | None = None) -> None:
    """Every site of the model, in mounting order (FP8 linears first: a GELU projection becomes one FP8
    linear, not a close-kernel site)."""
    if policy is not None:  # the step (and grid) hook first: unmount removes it last
        hook = HookMount(model, policy)
        hook.apply()
        mounts.append(hook)
    if report.quality == "fp8":
        blocks = [(p, m) for p, m in model.named_modules()
                  if p and getattr(_rule_for(m), "kind", None) == "block_residuals"]
        mounts.extend(mount_fp8_linears(blocks, report))
    found = [(p, m) for p, m in model.named_modules() if p and _rule_for(m) is not None]
    for path, m in found:
        _mount_site(model, path, m, report, kernels, verify, mounts, compiled)
    _mount_processors(model, report, kernels, verify, mounts, attention, policy)


def _compiled_notes(model: torch.nn.Module, report: MountReport, compiled: list[str]) -> None:
    if compiled:
        report.notes.append(
            f"{len(compiled)} mounted module(s) had been compiled (Module.compile / diffusers' "
            f"compile_repeated_blocks; first: {compiled[0]}): their mounted twins run uncompiled; compile them again "
            "after one eager call (which verifies the exact sites): sgl_diffusion_sites.compile_repeated_blocks("
            "model, ...); unmount puts the compiled originals back")
    if W.is_compiled(model) and report.mounted:
        report.notes.append(_compiled_model_note("compiled (Module.compile)", report))


def _refusal(model: Any, quality: str, under_compile: str) -> str | None:
    """Why ``optimize`` mounts nothing on this model with these arguments, or None."""
    name = type(model).__name__
    if quality not in ("exact", "close", "fp8"):
        return f"quality={quality!r} is not 'exact', 'close' or 'fp8': nothing mounted"
    if under_compile not in UNDER_COMPILE:
        return f"under_compile={under_compile!r} is not one of {', '.join(map(repr, UNDER_COMPILE))}: nothing mounted"
    if not isinstance(model, torch.nn.Module):
        return f"{name} is not a torch.nn.Module: nothing mounted"
    if name not in SUPPORTED_MODELS or not _is_diffusers(model):
        return (f"{type(model).__module__}.{name} is not one of the supported diffusers transformers "
                f"({', '.join(SUPPORTED_MODELS)}): nothing mounted")
    if getattr(model, "_sgl_diffusion_sites_parallel", None) is not None:
        return "the model is parallelized (parallelize): nothing mounted; unparallelize it first"
    return None


def _mount_site(model: torch.nn.Module, path: str, m: torch.nn.Module, report: MountReport, kernels: Kernels,
                verify: bool, mounts: list[_Mount], compiled: list[str]) -> None:
    """Record the site of module ``m`` at ``path`` in the report and mount it when its rule allows."""
    rule = _rule_for(m)
    assert rule is not None
    exact = report.quality == "exact"
    site = Site(path=path, kind=rule.kind, module=type(m).__name__, status="skipped", backend=report.backend)
    report.sites.append(site)
    if rule.mixin is None or (exact and not rule.exact_ok):
        site.reason = rule.skip_reason
        return
    site.ops = rule.ops_exact if exact else rule.ops_close
    site.compile_ops = compile_ops(site.ops, report.under_compile)
    site.contract = "exact" if exact else "close"
    if exact and verify:
        site.gate = BitExactFusionGate(f"sgl_diffusion_sites:{type(model).__name__}.{path}")
    parent_path, attr = _split(path)
    parent = model.get_submodule(parent_path) if parent_path else model
    if W.is_compiled(m):
        compiled.append(path)
    mounted = W.mount_module(m, rule.mixin, site, kernels)
    setattr(parent, attr, mounted)
    mounts.append(_Mount(parent, attr, m, mounted))
    site.status = "mounted"


def _compiled_model_note(what: str, report: MountReport) -> str:
    note = (f"the model is {what}: dynamo traces it again, with the mounted sites, at its next call "
            f"(under_compile={report.under_compile!r})")
    if report.verify and report.quality == "exact":
        note += ("; the exact sites verify in eager calls only: run one call under "
                 "torch.compiler.set_stance('force_eager') first, until then they trace their original chain")
    return note


def _block_class_names(model: torch.nn.Module) -> set[str]:
    return set(getattr(model, "_repeated_blocks", None) or ())


def compile_repeated_blocks(model: torch.nn.Module, *args: Any, **kwargs: Any) -> list[str]:
    """Regional compilation of a diffusers model, mounted or not: ``Module.compile(*args, **kwargs)`` (in
    place) of every module whose class is named in ``model._repeated_blocks`` — or, for a mounted
    twin (``Mounted<Class>``), whose original's class is. Arguments go to ``torch.compile`` verbatim
    (``fullgraph=True``, ``mode=``, ``backend=``, ...).

    diffusers' own ``model.compile_repeated_blocks`` matches class names exactly, so it finds no
    mounted block. Compile after the mount and after one eager call: exact sites verify in eager
    calls only (a site still pending when the graph is traced traces its original chain; a warning
    names how many). ``unmount`` drops the compiled twins and puts the originals back as they were.
    Returns the paths of the compiled modules; raises ``ValueError`` (as diffusers does) when the
    model names no repeated blocks or none is found.
    """
    names = _block_class_names(model)
    if not names:
        raise ValueError(f"{type(model).__name__} names no _repeated_blocks: nothing to compile regionally")
    paths = []
    for path, m in model.named_modules():
        orig = W.original_of(m)
        if type(m).__name__ in names or (orig is not None and type(orig).__name__ in names):
            m.compile(*args, **kwargs)
            paths.append(path)
    if not paths:
        raise ValueError(f"no module of the classes {sorted(names)} (mounted or not) in {type(model).__name__}")
    report = mount_report(model)
    if report is not None:
        inside = [s for s in report.mounted if any(s.path == p or s.path.startswith(p + ".") for p in paths)]
        pending = [s.path for s in inside if s.compile_ops and s.gate is not None and s.gate_state() == "pending"]
        if pending:
            warnings.warn(
                f"sgl_diffusion_sites.compile_repeated_blocks: {len(pending)} mounted site(s) with ops that stay fused "
                f"under compile are not verified yet (first: {pending[0]}): the compiled graphs trace their original "
                "chain; run one eager call before the first compiled one", RuntimeWarning, stacklevel=2)
        how = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
        report.notes.append(f"compile_repeated_blocks: {len(paths)} module(s) compiled: Module.compile({how})")
    return paths


_PROCESSORS: dict[str, type] = {
    "FluxAttnProcessor": P.MountedFluxAttnProcessor,
    "WanAttnProcessor": P.MountedWanAttnProcessor,
    "HunyuanVideoAttnProcessor2_0": P.MountedHunyuanVideoAttnProcessor,
    "QwenDoubleStreamAttnProcessor2_0": P.MountedQwenImageAttnProcessor,
    "JointAttnProcessor2_0": P.MountedSD3AttnProcessor,
}


def _mount_processors(model: torch.nn.Module, report: MountReport, kernels: Kernels, verify: bool,
                      mounts: list[_Mount], attention: bool, policy: ST.SlidingTile | Q.Quantized | None = None
                      ) -> None:
    """Attention processors with a QK-norm: each wrapper's ``plan`` says what it fuses there (RoPE, QK-norm
    + RoPE, QK-norm, the joint text + image concatenation) or why the processor stays eager; after each
    processor's site, its ``"attention"`` site (:func:`_attention_site`)."""
    exact = kernels.exact
    for path, m in model.named_modules():
        proc = getattr(m, "processor", None)
        if proc is None or getattr(m, "norm_q", None) is None:
            continue
        cls = _PROCESSORS.get(type(proc).__name__) if type(proc).__module__.startswith("diffusers.") else None
        site = Site(path=path, kind=cls.kind if cls is not None else "qk_norm_rope", module=type(proc).__name__,
                    status="skipped", backend=report.backend)
        report.sites.append(site)
        if cls is None:
            site.reason = ("no processor site for this processor yet: its QK-norm (and RoPE and joint text + "
                           "image concat, where it has them) stay eager")
            report.sites.append(_attention_site(path, m, proc, "its processor has no site (above)", kernels))
            continue
        plan = cls.plan(m, exact)
        if isinstance(plan, str):
            site.reason = plan
            report.sites.append(_attention_site(path, m, proc, "its processor is not mounted: " + plan, kernels))
            continue
        site.ops = plan
        site.compile_ops = compile_ops(plan, kernels.under_compile)
        site.contract = "exact" if exact else "close"
        if exact and verify:
            site.gate = BitExactFusionGate(f"sgl_diffusion_sites:{report.model}.{path}.processor")
        why = (_EXACT_ATTENTION if exact else None if attention else
               "attention=False: the model's own attention (SDPA through diffusers' dispatch) is kept")
        attn_site = _attention_site(path, m, proc, why, kernels)
        report.sites.append(attn_site)
        mounted = cls(proc, site, kernels, attention=attn_site if attn_site.mounted else None)
        if policy is not None and attn_site.mounted and layer_of(path) not in policy.dense_layers:
            if isinstance(policy, Q.Quantized):
                mounted._sgl_q8 = policy
                attn_site.ops = ("attention.quantized_attention", "attention.attention")
            elif cls is P.MountedWanAttnProcessor:
                mounted._sgl_tile = policy
                attn_site.ops = ("attention.block_sparse_attention", "attention.attention")
            attn_site.compile_ops = compile_ops(attn_site.ops, kernels.under_compile)
        m.set_processor(mounted)
        mounts.append(_Mount(m, "processor", proc, mounted))
        site.status = "mounted"


_EXACT_ATTENTION = ("quality='exact' keeps the model's attention (eager SDPA through diffusers' dispatch, "
                    "torch.equal); quality='close' mounts sgl_diffusion_attention.attention")


def _attention_site(path: str, attn: torch.nn.Module, proc: Any, why: str | None, kernels: Kernels) -> Site:
    """The ``"attention"`` site of one attention module: mounted (``why`` None: the processor routes its
    attention through ``sgl_diffusion_attention.attention``) or skipped with the reason. Its ``backend``:
    the mount's forced backend where the attention op has it and it serves a dense call of the module's
    heads, head dim, dtype and device, else ``"auto"`` (the op's own choice per call)."""
    site = Site(path=path, kind="attention", module=type(proc).__name__, status="skipped", backend="auto")
    if why is None and getattr(proc, "_attention_backend", None) is not None:
        why = (f"a diffusers attention backend is set on the processor ({proc._attention_backend}): "
               "its dispatch is kept")
    if why is not None:
        site.reason = why
        return site
    site.ops = ("attention.attention",)
    site.compile_ops = compile_ops(site.ops, kernels.under_compile)
    site.contract, site.status = "close", "mounted"
    if kernels.backend is not None and _attention_serves(attn, kernels.backend):
        site.backend = kernels.backend
    return site


def _attention_serves(attn: torch.nn.Module, backend: str) -> bool:
    """Whether the attention op's ``backend`` serves a dense ``[1, 1, H, Dh]`` call of this module's heads,
    head dim, dtype and device (a probe: no data is read)."""
    import sgl_diffusion_attention as A

    p = next(attn.parameters(), None)
    heads = getattr(attn, "heads", 0)
    to_q = getattr(attn, "to_q", None)
    inner = getattr(to_q, "out_features", 0)
    if p is None or not heads or not inner or p.device.type == "meta":
        return False
    q = torch.empty(1, 1, heads, inner // heads, dtype=p.dtype, device=p.device)
    try:
        return bool(A.can_use_attention(q, q, q, backend=backend))
    except Exception:  # a backend name the attention op does not have
        return False


def _unwrap(model: Any) -> Any:
    """The module a ``torch.compile(model)`` wrapper (``OptimizedModule``) holds, else model itself."""
    inner = model.__dict__.get("_modules", {}).get("_orig_mod") if hasattr(model, "__dict__") else None
    return inner if type(model).__name__ == "OptimizedModule" and isinstance(inner, torch.nn.Module) else model


def unmount(model: torch.nn.Module) -> bool:
    """Put back every original module ``optimize`` replaced; True when something was mounted."""
    model = _unwrap(model)
    mounts: list[_Mount] | None = getattr(model, _STATE_ATTR, None)
    if not mounts:
        return False
    for mt in reversed(mounts):
        mt.restore()
    object.__setattr__(model, _STATE_ATTR, [])
    return True


def measure_quality(model: torch.nn.Module, *args: Any, **kwargs: Any) -> dict[str, float]:
    """Run a mounted model on the caller's inputs, then the same model unmounted (its original modules and
    bf16 weights put back for that call, then mounted again), and compare the two outputs (a tuple's
    first element or ``.sample``): ``{"psnr_db", "cosine", "max_abs"}``, also kept in the model's
    :class:`MountReport` (``quality_metrics``). Raises ``ValueError`` when the model is not mounted."""
    inner = _unwrap(model)
    mounts = getattr(inner, _STATE_ATTR, None)
    if not mounts:
        raise ValueError(f"{type(inner).__name__} is not mounted: measure_quality compares a mounted model "
                         "against itself unmounted")
    with torch.no_grad():
        out = output_tensor(model(*args, **kwargs)).clone()
        for mt in reversed(mounts):
            mt.restore()
        try:
            ref = output_tensor(model(*args, **kwargs))
        finally:
            for mt in mounts:
                mt.apply()
    metrics = distance(out, ref)
    report = getattr(inner, "_sgl_diffusion_sites_report", None)
    if report is not None:
        report.quality_metrics = metrics
    return metrics


def fp8_linear_paths(model: torch.nn.Module) -> list[str]:
    """The paths of the ``nn.Linear`` layers ``optimize(model, quality="fp8")`` turns into FP8 linears (a
    tanh-GELU projection: its ``.proj``), without mounting anything: what a comparison with another FP8
    scheme should convert."""
    paths = []
    for path, block in _unwrap(model).named_modules():
        if path and getattr(_rule_for(block), "kind", None) == "block_residuals":
            paths += [f"{path}.{name}" + (".proj" if epilogue else "") for name, _, epilogue in fp8_targets(block)]
    return paths


def is_mounted(model: torch.nn.Module) -> bool:
    return bool(getattr(_unwrap(model), _STATE_ATTR, None))


def mount_report(model: torch.nn.Module) -> MountReport | None:
    """The report of the last ``optimize`` on this model (gate states are live), or None."""
    rep: Any = getattr(_unwrap(model), "_sgl_diffusion_sites_report", None)
    return rep if is_mounted(model) else None


def mount_plan(source: Any, *, quality: str = "exact", under_compile: str = "auto",
               attention: bool = True) -> MountReport:
    """What ``optimize`` would mount on a model, without its weights and without running it.

    source: a model instance, one of ``SUPPORTED_MODELS`` (built from its default config), a
    diffusers ``config.json`` or a directory holding one (a pipeline's ``transformer/``
    folder). The model is built on the meta device (no memory, no download), mounted and
    unmounted; gates stay ``pending``. A model already mounted is left as it is (its live
    report is returned). Never raises: a problem is a note in the report.
    """
    if isinstance(source, torch.nn.Module):
        model = source
    else:
        try:
            model = _build_meta(source)
        except Exception as exc:
            report = MountReport(model=str(source), quality=str(quality), verify=True, backend="auto",
                                 under_compile=str(under_compile))
            report.notes.append(f"cannot build {source!r} on the meta device: {type(exc).__name__}: {exc}")
            return report
    live = mount_report(model)
    if live is not None:  # leave a mounted model as it is
        return live
    report = optimize(model, quality=quality, under_compile=under_compile, attention=attention)
    unmount(model)
    report.notes.append("plan only: mounted and unmounted again, nothing ran (gates pending)")
    return report


def _build_meta(source: Any) -> torch.nn.Module:
    import json
    from pathlib import Path

    import diffusers

    config: dict[str, Any] = {}
    name = str(source)
    path = Path(name)
    if path.is_dir():
        path = path / "config.json"
    if path.is_file():
        config = json.loads(path.read_text())
        name = config.get("_class_name", "")
    if name not in SUPPORTED_MODELS:
        raise ValueError(f"{name!r} is not one of {', '.join(SUPPORTED_MODELS)} (nor a config.json naming one)")
    cls = getattr(diffusers, name)
    with torch.device("meta"):
        return cls.from_config({k: v for k, v in config.items() if not k.startswith("_")})
