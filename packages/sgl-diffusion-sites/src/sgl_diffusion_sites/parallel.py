"""``parallelize(model, ulysses=U, ring=R)``: a diffusers video transformer run by ``U * R`` ranks
with sequence parallelism, ``unparallelize(model)`` puts it back.

Every rank holds the whole model. At the transformer's entry each rank keeps its shard of the
image tokens (``usp_shard``: ``torch.tensor_split`` along the sequence, shard ``i * U + u`` on the
rank with ring rank ``i`` and Ulysses rank ``u``) together with its rows of every per-token input
(the rotary tables; Wan 2.2's per-token timesteps); every self-attention runs ``usp_attention``
over the mesh; the output projection's result is gathered back (``usp_gather``), so the model
returns the full output on every rank. Everything else (projections, norms, MLPs, cross-attention
to the text, the text stream of HunyuanVideo) runs unchanged on each rank's tokens: it is per token.

The parallel processors are the mounted processors of ``processors.py`` with their attention routed
to ``usp_attention`` and every other op on its ``torch`` backend (the model's own eager chain);
the shard and gather points are forward hooks on the model's modules, per model in ``_PLANS``.
Inference only (no backward through the collectives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

import sgl_diffusion_attention as _attention

from . import processors as P
from .kernels import Kernels
from .report import MountReport, Site

_STATE_ATTR = "_sgl_diffusion_sites_parallel"


@dataclass(frozen=True)
class _Plan:
    """Where one model is cut: the processors that become parallel (diffusers class -> ours), the module
    whose output is the rotary table (``rope_dim``: its sequence dim), the blocks whose first input is
    the image sequence (the first of them shards it), the module whose output is gathered."""

    processors: dict[str, type]
    rope: str
    rope_dim: int
    block_lists: tuple[str, ...]
    gather: str


_PLANS = {
    "WanTransformer3DModel": _Plan({"WanAttnProcessor": P.MountedWanAttnProcessor}, "rope", 1, ("blocks",),
                                   "proj_out"),
    "HunyuanVideoTransformer3DModel": _Plan(
        {"HunyuanVideoAttnProcessor2_0": P.MountedHunyuanVideoAttnProcessor}, "rope", 0,
        ("transformer_blocks", "single_transformer_blocks"), "proj_out"),
}
PARALLEL_MODELS = tuple(_PLANS)


@dataclass
class _State:
    mesh: Any
    handles: list
    processors: list  # (attention module, original processor)


def _refusal(model: Any) -> str | None:
    name = type(model).__name__
    if name not in _PLANS or not type(model).__module__.startswith("diffusers."):
        return f"{type(model).__module__}.{name} is not one of {', '.join(PARALLEL_MODELS)}"
    if getattr(model, "_sgl_diffusion_sites_mount", None):
        return "the model is mounted (optimize): unmount it first"
    if getattr(model, _STATE_ATTR, None) is not None:
        return "the model is already parallelized: unparallelize it first"
    if name == "HunyuanVideoTransformer3DModel" and model.config.get("image_condition_type") == "token_replace":
        return ("HunyuanVideo with image_condition_type='token_replace' treats the first frame's tokens apart: "
                "not parallelized")
    return None


def _self_attention(attn: torch.nn.Module) -> bool:
    return not getattr(attn, "is_cross_attention", False)


def _mount(model, plan: _Plan, mesh, backend, report: MountReport) -> list:
    kernels = Kernels("exact", "torch")  # every op but the attention: the model's own eager chain
    done = []
    for path, m in model.named_modules():
        proc = getattr(m, "processor", None)
        cls = plan.processors.get(type(proc).__name__) if proc is not None else None
        if cls is None or not type(proc).__module__.startswith("diffusers."):
            continue
        site = Site(path=path, kind="usp_attention", module=type(proc).__name__, status="skipped",
                    backend=backend or "auto")
        report.sites.append(site)
        if not _self_attention(m):
            site.reason = "cross-attention to the replicated text: per query, runs unchanged on each shard"
            continue
        mounted = cls(proc, site, kernels)
        mounted._sgl_usp = (mesh, backend)
        m.set_processor(mounted)
        done.append((m, proc))
        site.status, site.ops, site.contract = "mounted", ("attention.usp_attention",), "close"
    return done


def _hooks(model, plan: _Plan, mesh) -> list:
    shard = _attention.usp_shard
    handles = []

    def rope_out(_module, _args, out):
        return tuple(shard(t, mesh, plan.rope_dim) for t in out)

    def model_in(_module, args, kwargs):  # Wan 2.2's per-token timesteps [B, S]
        ts = kwargs.get("timestep", args[1] if len(args) > 1 else None)
        if isinstance(ts, torch.Tensor) and ts.ndim == 2:
            ts = shard(ts, mesh, 1)
            if "timestep" in kwargs:
                kwargs["timestep"] = ts
            else:
                args = (args[0], ts, *args[2:])
        return args, kwargs

    def first_block_in(_module, args, kwargs):
        if args:
            return (shard(args[0], mesh, 1), *args[1:]), kwargs
        kwargs["hidden_states"] = shard(kwargs["hidden_states"], mesh, 1)
        return args, kwargs

    def gather_out(_module, _args, out):
        return _attention.usp_gather(out, mesh, 1)

    blocks = [b for name in plan.block_lists for b in model.get_submodule(name)]
    handles.append(model.register_forward_pre_hook(model_in, with_kwargs=True))
    handles.append(model.get_submodule(plan.rope).register_forward_hook(rope_out))
    handles.append(blocks[0].register_forward_pre_hook(first_block_in, with_kwargs=True))
    handles.append(model.get_submodule(plan.gather).register_forward_hook(gather_out))
    return handles


def parallelize(model: torch.nn.Module, *, ulysses: int = 1, ring: int = 1, mesh=None,
                backend: str | None = None) -> MountReport:
    """Run ``model`` (a diffusers ``WanTransformer3DModel`` or ``HunyuanVideoTransformer3DModel``) on a
    Ulysses x ring mesh; every rank of the mesh calls it, then calls the model with the same full inputs
    and gets the same full output.

    ulysses, ring: the degrees; the groups are built by ``sgl_diffusion_attention.init_usp`` (every
        rank of the world takes part; ``ulysses * ring`` must be the world size). Or ``mesh``: a
        ``UspMesh`` built beforehand (``ulysses`` and ``ring`` are then ignored).
    backend: the local attention's backend (None: ``attention``'s own choice per call).

    Returns a ``MountReport`` with one ``"usp_attention"`` site per attention module (mounted: a
    self-attention; skipped: a cross-attention, which needs nothing). Raises ``ValueError`` for a
    model it does not know, a model mounted by ``optimize`` or already parallelized, and a
    HunyuanVideo image-to-video model with token replacement. Inference only: the collectives have no
    backward. Numerics: every op but the attention is the model's own; the attention is
    ``usp_attention``'s contract (Ulysses only: the local attention over the whole sequence).
    """
    why = _refusal(model)
    if why:
        raise ValueError(f"parallelize({type(model).__name__}): {why}")
    if mesh is None:
        mesh = _attention.init_usp(ulysses=ulysses, ring=ring)
    plan = _PLANS[type(model).__name__]
    report = MountReport(model=type(model).__name__, quality="usp", verify=False, backend=backend or "auto")
    report.notes.append(f"sequence parallel on {mesh.size} ranks (Ulysses {mesh.ulysses} x ring {mesh.ring}); this "
                        f"rank holds shard {mesh.shard}; output gathered after {plan.gather}")
    processors = _mount(model, plan, mesh, backend, report)
    handles = _hooks(model, plan, mesh)
    object.__setattr__(model, _STATE_ATTR, _State(mesh, handles, processors))
    return report


def unparallelize(model: torch.nn.Module) -> bool:
    """Remove what ``parallelize`` added (hooks, processors); True when the model was parallelized."""
    state: _State | None = getattr(model, _STATE_ATTR, None)
    if state is None:
        return False
    for h in state.handles:
        h.remove()
    for m, proc in reversed(state.processors):
        m.set_processor(proc)
    object.__setattr__(model, _STATE_ATTR, None)
    return True


def is_parallelized(model: torch.nn.Module) -> bool:
    return getattr(model, _STATE_ATTR, None) is not None
