"""``parallelize(model, ulysses=U, ring=R)``: a diffusers transformer (Wan, HunyuanVideo, Flux) run by
``U * R`` ranks with sequence parallelism, ``unparallelize(model)`` puts it back.

Every rank holds the whole model. At the transformer's entry each rank keeps its shard of the
image tokens (``usp_shard``: ``torch.tensor_split`` along the sequence, shard ``i * U + u`` on the
rank with ring rank ``i`` and Ulysses rank ``u``) together with its rows of every per-token input
(the rotary tables, or Flux's image position ids; Wan 2.2's per-token timesteps); every
self-attention runs ``usp_attention`` (the text of HunyuanVideo and Flux as joint tokens)
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
    """Where one model is cut: the processors that become parallel (diffusers class -> ours); the module
    whose output is the rotary table (``rope_dim``: its sequence dim; None: the model computes the table
    from the position ids its entry hook shards); the block lists whose first block's first input is
    the image sequence (empty: the entry hook shards it); the model's keyword arguments sharded at its
    entry, ``name -> (position, dim)``; the module whose output is gathered."""

    processors: dict[str, type]
    rope: str | None
    rope_dim: int
    block_lists: tuple[str, ...]
    entry: dict[str, tuple[int, int]]
    gather: str
    text_arg: tuple[str, int] | None = None  # the text states (name, position): their length for the processors


_PLANS = {
    # Wan 2.2's per-token timesteps [B, S] (a 1-D timestep is left alone)
    "WanTransformer3DModel": _Plan({"WanAttnProcessor": P.MountedWanAttnProcessor}, "rope", 1, ("blocks",),
                                   {"timestep": (1, 1)}, "proj_out"),
    "HunyuanVideoTransformer3DModel": _Plan(
        {"HunyuanVideoAttnProcessor2_0": P.MountedHunyuanVideoAttnProcessor}, "rope", 0,
        ("transformer_blocks", "single_transformer_blocks"), {}, "proj_out"),
    # the image tokens and their position ids at the entry: the rotary table is then built for
    # the text and this rank's image rows
    "FluxTransformer2DModel": _Plan({"FluxAttnProcessor": P.MountedFluxAttnProcessor}, None, 0, (),
                                    {"hidden_states": (0, 1), "img_ids": (4, -2)}, "proj_out",
                                    ("encoder_hidden_states", 1)),
}
PARALLEL_MODELS = tuple(_PLANS)
_UNSHARDABLE = ("controlnet_block_samples", "controlnet_single_block_samples", "controlnet_blocks_repeat")


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


def _mount(model, plan: _Plan, route: P.UspRoute, report: MountReport) -> list:
    kernels = Kernels("exact", "torch")  # every op but the attention: the model's own eager chain
    done = []
    for path, m in model.named_modules():
        proc = getattr(m, "processor", None)
        cls = plan.processors.get(type(proc).__name__) if proc is not None else None
        if cls is None or not type(proc).__module__.startswith("diffusers."):
            continue
        site = Site(path=path, kind="usp_attention", module=type(proc).__name__, status="skipped",
                    backend=route.backend or "auto")
        report.sites.append(site)
        if not _self_attention(m):
            site.reason = "cross-attention to the replicated text: per query, runs unchanged on each shard"
            continue
        mounted = cls(proc, site, kernels)
        mounted._sgl_usp = route
        m.set_processor(mounted)
        done.append((m, proc))
        site.status, site.ops, site.contract = "mounted", ("attention.usp_attention",), "close"
    return done


def _arg(args: tuple, kwargs: dict, name: str, pos: int):
    return kwargs[name] if name in kwargs else args[pos] if len(args) > pos else None


def _with(args: tuple, kwargs: dict, name: str, pos: int, value) -> tuple[tuple, dict]:
    if name in kwargs or len(args) <= pos:
        return args, {**kwargs, name: value}
    return (*args[:pos], value, *args[pos + 1:]), kwargs


def _hooks(model, plan: _Plan, route: P.UspRoute) -> list:
    shard, mesh = _attention.usp_shard, route.mesh

    def model_in(_module, args, kwargs):
        for name in _UNSHARDABLE:
            if kwargs.get(name) is not None:
                raise ValueError(f"parallelize: {name} (per-token residuals of a ControlNet) is not sharded")
        if plan.text_arg is not None:  # Flux's single blocks see text and image rows concatenated
            text = _arg(args, kwargs, *plan.text_arg)
            route.text_len = text.shape[1] if isinstance(text, torch.Tensor) and text.ndim == 3 else 0
        for name, (pos, dim) in plan.entry.items():
            t = _arg(args, kwargs, name, pos)
            if isinstance(t, torch.Tensor) and (name != "timestep" or t.ndim == 2):
                args, kwargs = _with(args, kwargs, name, pos, shard(t, mesh, dim))
        return args, kwargs

    def rope_out(_module, _args, out):
        return tuple(shard(t, mesh, plan.rope_dim) for t in out)

    def first_block_in(_module, args, kwargs):
        return _with(args, kwargs, "hidden_states", 0, shard(_arg(args, kwargs, "hidden_states", 0), mesh, 1))

    def gather_out(_module, _args, out):
        return _attention.usp_gather(out, mesh, 1)

    handles = [model.register_forward_pre_hook(model_in, with_kwargs=True),
               model.get_submodule(plan.gather).register_forward_hook(gather_out)]
    if plan.rope is not None:
        handles.append(model.get_submodule(plan.rope).register_forward_hook(rope_out))
    blocks = [b for name in plan.block_lists for b in model.get_submodule(name)]
    if blocks:
        handles.append(blocks[0].register_forward_pre_hook(first_block_in, with_kwargs=True))
    return handles


def parallelize(model: torch.nn.Module, *, ulysses: int = 1, ring: int = 1, mesh=None,
                backend: str | None = None) -> MountReport:
    """Run ``model`` (a diffusers ``WanTransformer3DModel``, ``HunyuanVideoTransformer3DModel`` or
    ``FluxTransformer2DModel``, ``PARALLEL_MODELS``) on a Ulysses x ring mesh; every rank of the mesh
    calls it, then calls the model with the same full inputs and gets the same full output.

    ulysses, ring: the degrees; the groups are built by ``sgl_diffusion_attention.init_usp`` (every
        rank of the world takes part; ``ulysses * ring`` must be the world size). Or ``mesh``: a
        ``UspMesh`` built beforehand (``ulysses`` and ``ring`` are then ignored).
    backend: the local attention's backend (None: ``attention``'s own choice per call).

    Returns a ``MountReport`` with one ``"usp_attention"`` site per attention module (mounted: a
    self-attention; skipped: a cross-attention, which needs nothing). Raises ``ValueError`` for a
    model it does not know, a model mounted by ``optimize`` or already parallelized, and a
    HunyuanVideo image-to-video model with token replacement; a Flux call with ControlNet residuals
    raises. Inference only: the collectives have no backward. Numerics: every op but the attention is
    the model's own; the attention is ``usp_attention``'s contract (Ulysses only: the local attention
    over the whole sequence).
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
    route = P.UspRoute(mesh, backend)
    processors = _mount(model, plan, route, report)
    handles = _hooks(model, plan, route)
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
