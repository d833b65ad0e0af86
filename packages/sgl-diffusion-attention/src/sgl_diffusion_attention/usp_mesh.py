"""The Ulysses x ring mesh of sequence-parallel attention, built from ``torch.distributed``'s world.

``init_usp(ulysses=U, ring=R)`` splits the ``U * R`` ranks of a process group (default: the
world) into ``R`` Ulysses groups of ``U`` consecutive ranks (the all-to-all stays inside a node
when ``U`` GPUs share one) and ``U`` ring groups of ranks ``U`` apart. The rank with ring rank
``i`` and Ulysses rank ``u`` holds shard ``i * U + u`` of the sequence: ``usp_shard`` cuts it,
``usp_gather`` puts the shards back together. ``usp_attention`` takes the two groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _usp_comm as C

ALSO_EXPORTS = ("UspMesh", "init_usp", "usp_shard", "usp_gather")


@dataclass(frozen=True)
class UspMesh:
    """The two process groups of one rank (``None``: a degree of 1) and this rank's place in them.

    ``shard``: the index of this rank's sequence shard, ``ring_rank * ulysses + ulysses_rank``;
    ``size``: ``ulysses * ring`` shards in all."""

    ulysses_group: object | None
    ring_group: object | None
    ulysses: int
    ring: int
    ulysses_rank: int
    ring_rank: int

    @property
    def size(self) -> int:
        return self.ulysses * self.ring

    @property
    def shard(self) -> int:
        return self.ring_rank * self.ulysses + self.ulysses_rank

    def groups(self) -> dict[str, object | None]:
        """``{"ulysses_group": ..., "ring_group": ...}``: the keyword arguments of ``usp_attention``."""
        return {"ulysses_group": self.ulysses_group, "ring_group": self.ring_group}


def _check_degree(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"init_usp: {name} must be an int >= 1, got {value!r}")
    return value


def _from_device_mesh(mesh) -> UspMesh:
    names = tuple(mesh.mesh_dim_names or ())
    if not set(names) <= {"ulysses", "ring"} or not names:
        raise ValueError(f"init_usp: device_mesh must name its dims 'ulysses' and / or 'ring', got {names!r}")
    groups = {n: mesh.get_group(n) for n in names}
    ug, rg = groups.get("ulysses"), groups.get("ring")
    return UspMesh(ug, rg, C.group_size(ug), C.group_size(rg), C.group_rank(ug), C.group_rank(rg))


def init_usp(ulysses: int = 1, ring: int = 1, *, group=None, device_mesh=None) -> UspMesh | None:
    """The Ulysses and ring groups of this rank, from a process group of ``ulysses * ring`` ranks.

    Every rank of the world calls it with the same arguments: it creates the new groups with
    ``torch.distributed.new_group``, a step every rank takes part in; a rank outside ``group``
    (default: the world) gets None. ``ulysses * ring`` must equal the group's size: ``ValueError``
    otherwise, on every rank, before any group is created. A degree of 1 gets no group (``None``).
    ``device_mesh``: a ``torch.distributed.DeviceMesh`` whose dims are named
    ``"ulysses"`` and / or ``"ring"``; its groups are used as they are (``ulysses`` and ``ring``
    are then ignored). Without ``torch.distributed`` initialized, only ``ulysses = ring = 1``
    (one process) is accepted.
    """
    if device_mesh is not None:
        return _from_device_mesh(device_mesh)
    U, R = _check_degree("ulysses", ulysses), _check_degree("ring", ring)
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        if U * R == 1:
            return UspMesh(None, None, 1, 1, 0, 0)
        raise ValueError(f"init_usp(ulysses={U}, ring={R}): torch.distributed is not initialized "
                         "(call torch.distributed.init_process_group first, e.g. under torchrun)")
    ranks = dist.get_process_group_ranks(group) if group is not None else list(range(dist.get_world_size()))
    if U * R != len(ranks):
        raise ValueError(f"init_usp(ulysses={U}, ring={R}): ulysses * ring = {U * R} ranks, but the process "
                         f"group has {len(ranks)}; pick degrees whose product is {len(ranks)}")
    me = ranks.index(dist.get_rank()) if dist.get_rank() in ranks else -1
    ring_rank, ulysses_rank = divmod(me, U) if me >= 0 else (-1, -1)
    ug = rg = None
    if U > 1:
        for i in range(R):
            g = dist.new_group([ranks[i * U + u] for u in range(U)])
            ug = g if i == ring_rank else ug
    if R > 1:
        for u in range(U):
            g = dist.new_group([ranks[i * U + u] for i in range(R)])
            rg = g if u == ulysses_rank else rg
    return UspMesh(ug, rg, U, R, ulysses_rank, ring_rank) if me >= 0 else None


def usp_shard(x: torch.Tensor, mesh: UspMesh, dim: int = 1) -> torch.Tensor:
    """This rank's shard of ``x`` along ``dim`` (a view): ``torch.tensor_split(x, mesh.size, dim)[mesh.shard]``.

    Lengths that do not divide give the first ``n % size`` shards one token more, the split
    ``usp_attention`` accepts."""
    return torch.tensor_split(x, mesh.size, dim)[mesh.shard]


def usp_gather(x: torch.Tensor, mesh: UspMesh, dim: int = 1) -> torch.Tensor:
    """The shards of every rank of the mesh concatenated along ``dim`` in shard order (a collective:
    every rank of the mesh calls it); the inverse of ``usp_shard``. Shards may differ in length."""
    block = torch.cat(C.all_gather_rows(x, mesh.ulysses_group, dim), dim=dim)
    return torch.cat(C.all_gather_rows(block, mesh.ring_group, dim), dim=dim)
