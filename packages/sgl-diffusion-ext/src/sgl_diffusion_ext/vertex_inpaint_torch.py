"""The torch reference of ``vertex_inpaint``: sequential Gauss-Seidel sweeps in vertex order."""

from __future__ import annotations

import torch

from . import _vertex_graph as G


def gauss_seidel(colour, painted, rowptr, nbr, wt):
    """Sweep the unpainted vertices in index order until a sweep paints none; a vertex painted earlier in a
    sweep already counts for the later ones. Each sum runs over the neighbours in order, ``s + w * c`` and
    ``ws + w`` in fp32, then ``s / ws``."""
    colour, painted = colour.clone(), painted.clone()
    rp, nb_all = rowptr.tolist(), nbr.tolist()
    changed = True
    while changed:
        changed = False
        for v in (~painted).nonzero().flatten().tolist():
            s = torch.zeros(colour.shape[1], dtype=torch.float32, device=colour.device)
            ws = torch.zeros((), dtype=torch.float32, device=colour.device)
            hit = False
            for e in range(rp[v], rp[v + 1]):
                if painted[nb_all[e]]:
                    s = s + wt[e] * colour[nb_all[e]]
                    ws = ws + wt[e]
                    hit = True
            if hit:
                colour[v] = s / ws
                painted[v] = True
                changed = True
    return colour, painted


def vertex_inpaint(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx):
    """The reference of ``vertex_inpaint`` (same arguments and results), Gauss-Seidel order."""
    texel, cv, colour, painted, rowptr, nbr, wt = G.setup(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx)
    colour, painted = gauss_seidel(colour, painted, rowptr, nbr, wt)
    return G.write_back(texture, mask, texel, cv, colour, painted)


def prepare(geom, *tensors):
    """The ``torch`` backend's runner: the reference itself."""

    def run(*args):
        return vertex_inpaint(*args[:6])

    return run
