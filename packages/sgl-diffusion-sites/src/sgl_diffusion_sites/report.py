"""``Site`` and ``MountReport``: what ``optimize`` mounted on a model, what it skipped, and why."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import torch

from sgl_diffusion_core import BitExactFusionGate, call_signature, is_compiling


def _needs_grad(args: tuple, module: torch.nn.Module | None) -> bool:
    for a in args:
        if isinstance(a, torch.Tensor) and a.requires_grad:
            return True
        if isinstance(a, (tuple, list)) and _needs_grad(tuple(a), None):
            return True
    return module is not None and any(p.requires_grad for p in module.parameters())


@dataclass(eq=False)
class Site:
    """One place in a model where an eager chain can be replaced by fused ops.

    ``path``: the module's dotted name in the model (``"transformer_blocks.0.norm1"``);
    ``kind``: what is fused there (``"adaln_zero"``, ``"adaln_continuous"``, ``"block_residuals"``,
    ``"ff_gelu_tanh"``, ``"qk_norm_rope"``, ``"attention"``, ...); ``status``: ``"mounted"`` or ``"skipped"``;
    ``reason``: why skipped (empty when mounted); ``ops``: the family ops the mounted path
    calls; ``backend``: the backend asked of them (``"auto"``: each op's own choice);
    ``contract``: ``"exact"`` (``torch.equal`` to the eager module, verified per call
    signature by ``gate``) or ``"close"`` (the ops' declared tolerances, no gate);
    ``compile_ops``: the ops of ``ops`` that stay custom ops while ``torch.compile`` traces (the
    mount's ``under_compile`` policy; the others trace their eager chain). A mounted site with none
    traces its original module (or processor) under compile; eager calls are not affected.
    """

    path: str
    kind: str
    module: str
    status: str
    reason: str = ""
    ops: tuple[str, ...] = ()
    backend: str = "auto"
    contract: str = "-"
    compile_ops: tuple[str, ...] = ()
    gate: BitExactFusionGate | None = field(default=None, repr=False)

    @property
    def mounted(self) -> bool:
        return self.status == "mounted"

    def gate_state(self) -> str:
        """``"-"`` (no gate), ``"pending"`` (not called yet), ``"verified"``, ``"fallback"`` or
        ``"mixed"`` (some signatures verified, some fell back)."""
        if self.gate is None:
            return "off" if self.mounted and self.contract == "exact" else "-"
        states = set(self.gate.states().values())
        if not states:
            return "pending"
        if len(states) == 1:
            return states.pop()
        return "mixed" if "fallback" in states else "pending"

    def under_compile(self) -> str:
        """What ``torch.compile`` traces here: ``"fused"`` (every op of the site as its custom op),
        ``"eager"`` (the original module's chain), ``"partly"`` (``compile_ops`` fused, the rest eager),
        ``"-"`` (not mounted)."""
        if not self.mounted:
            return "-"
        if not self.compile_ops:
            return "eager"
        return "fused" if set(self.compile_ops) == set(self.ops) else "partly"

    def run(self, fused: Callable[[], Any], reference: Callable[[], Any], *sig_args: Any,
            module: torch.nn.Module | None = None) -> Any:
        """The site's forward: through its gate (exact, verified per call signature) or fused (no gate).

        With autograd recording (grad mode on and an input or a parameter of ``module`` that
        requires grad) it runs ``reference``: the fused ops have no backward. While
        ``torch.compile`` traces, a site with no ``compile_ops`` (policy ``under_compile``) traces
        ``reference``, the original module's chain, so inductor fuses it with its neighbours.
        """
        if torch.is_grad_enabled() and _needs_grad(sig_args, module):
            return reference()
        if not self.compile_ops and is_compiling():
            return reference()
        if self.gate is None:
            return fused()
        # under torch.compile / CUDA graph capture the gate runs only already verified
        # signatures fused (pending ones run the reference; it never syncs there)
        sig: Hashable = call_signature(*sig_args)
        return self.gate.run(fused, reference, sig=sig)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "module": self.module,
            "status": self.status,
            "reason": self.reason,
            "ops": list(self.ops),
            "backend": self.backend,
            "contract": self.contract,
            "gate": self.gate_state(),
            "under_compile": self.under_compile(),
            "compile_ops": list(self.compile_ops),
        }


@dataclass(eq=False)
class MountReport:
    """Every site ``optimize`` considered on one model: printable (``str``) and as data (``to_dict``)."""

    model: str
    quality: str
    verify: bool
    backend: str
    under_compile: str = "auto"
    sites: list[Site] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # op -> [fused calls, eager-chain calls where the backend could not serve], live (eager mode)
    op_calls: dict[str, list[int]] = field(default_factory=dict)
    # the mounted model's output against the unmounted one (measure_quality): psnr_db, cosine, max_abs
    quality_metrics: dict[str, float] = field(default_factory=dict)

    @property
    def mounted(self) -> list[Site]:
        return [s for s in self.sites if s.mounted]

    @property
    def skipped(self) -> list[Site]:
        return [s for s in self.sites if not s.mounted]

    def by_kind(self) -> dict[str, dict[str, int]]:
        """``{kind: {"mounted": n, "skipped": m}}``."""
        out: dict[str, dict[str, int]] = {}
        for s in self.sites:
            row = out.setdefault(s.kind, {"mounted": 0, "skipped": 0})
            row["mounted" if s.mounted else "skipped"] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "quality": self.quality,
            "verify": self.verify,
            "backend": self.backend,
            "under_compile": self.under_compile,
            "mounted": len(self.mounted),
            "skipped": len(self.skipped),
            "notes": list(self.notes),
            "op_calls": {op: {"fused": n[0], "eager": n[1]} for op, n in sorted(self.op_calls.items())},
            "quality_metrics": dict(self.quality_metrics),
            "sites": [s.to_dict() for s in self.sites],
        }

    def __str__(self) -> str:
        head = (f"sgl-diffusion-sites: {self.model}, quality={self.quality}, verify={self.verify}, "
                f"backend={self.backend}, under_compile={self.under_compile}: {len(self.mounted)} mounted, "
                f"{len(self.skipped)} skipped")
        lines = [head]
        lines += [f"  note: {n}" for n in self.notes]
        if self.quality_metrics:
            m = self.quality_metrics
            lines.append(f"  output against the unmounted model: PSNR {m['psnr_db']:.1f} dB, cosine {m['cosine']:.5f}, "
                         f"max |error| {m['max_abs']:.3g}")
        if self.op_calls:
            lines.append("  op calls so far (fused / eager chain): " + ", ".join(
                f"{op} {n[0]}/{n[1]}" for op, n in sorted(self.op_calls.items())))
        if self.sites:
            cols = ("path", "kind", "status", "contract", "gate", "compile", "backend", "ops / reason")
            rows = [
                (s.path or "<root>", s.kind, s.status, s.contract, s.gate_state(), _compile_col(s), s.backend,
                 ", ".join(s.ops) if s.mounted else s.reason)
                for s in self.sites
            ]
            widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols[:-1])]
            fmt = "  " + "  ".join(f"{{:<{w}}}" for w in widths) + "  {}"
            lines.append(fmt.format(*cols))
            lines += [fmt.format(*r) for r in rows]
        return "\n".join(lines)


def _compile_col(s: Site) -> str:
    """The table's ``compile`` column: fused / eager / the ops kept fused."""
    state = s.under_compile()
    return ", ".join(s.compile_ops) + " fused" if state == "partly" else state
