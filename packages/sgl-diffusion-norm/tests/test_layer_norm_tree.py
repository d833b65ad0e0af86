"""The compile-time coefficients of the exact LayerNorm kernel's combine tree (``_welford_triton``) against
eager's element counts halved level by level, in every thread layout the kernel builds for: host-side
arithmetic, no kernel launch, so the ROCm layouts the CPU lane cannot run are covered too."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("warp,nwarp", [(32, 4), (64, 2), (64, 4)])
def test_layer_norm_tree_constants_follow_eagers_counts(warp, nwarp):
    """The compile-time coefficients of LayerNorm's combine tree (``tree_segments``) against the counts eager's
    tree halves, computed here level by level as in ``_aten_layer_norm_order``, in the CUDA layout and the ROCm
    ones (64-wide wavefronts, which the CPU lane cannot run): every combine that feeds the result, at full,
    partial and short rows, ``D % 4 != 0`` included."""
    import numpy as np

    from sgl_diffusion_core import testing

    tree_segments = testing.backend_module("norm.layer_norm", "triton_exact").tree_segments

    f32 = np.float32
    nt = warp * nwarp
    for D in (4, 6, 130, 4 * nt - 4, 4 * nt, 4 * nt + 36, 2 * 4 * nt + 4 * warp + 8, 1152, 2240, 2430, 3840):
        F, V = divmod(D, 4 * nt)
        c = np.array([4 * F + min(max(V - 4 * t, 0), 4) for t in range(nt)], f32)

        def expect(cnt):  # [rows, N] counts -> (nA, nB, countA) of the combines of [rows, N/2], and the sums
            h = cnt.shape[1] // 2
            cb, ca = cnt[:, :h], cnt[:, h:]
            tot = (ca + cb).astype(f32)
            coef = np.where(tot > 0, f32(1) / np.where(tot > 0, tot, f32(1)), f32(0)).astype(f32)
            return ((ca * coef).astype(f32), (cb * coef).astype(f32), ca), tot

        def expand(runs, n):
            vals, start = [], 0
            for end, *v in runs:
                vals += [v] * (end - start)
                start = end
            assert start == n
            return np.array(vals, f32)

        cnt = c.reshape(nwarp, warp)
        while cnt.shape[1] > 1:
            h = cnt.shape[1] // 2
            (na, nb, ca), cnt = expect(cnt)
            got = expand(tree_segments(F, V, warp, nwarp, h, False), nt).reshape(nwarp, warp, 3)[:, :h]
            assert np.array_equal(got, np.stack([na, nb, ca], axis=-1)), (D, "intra", h)
        cnt = cnt.reshape(1, nwarp)
        while cnt.shape[1] > 1:
            h = cnt.shape[1] // 2
            (na, nb, ca), cnt = expect(cnt)
            got = expand(tree_segments(F, V, warp, nwarp, h, True), h).reshape(1, h, 3)
            assert np.array_equal(got, np.stack([na, nb, ca], axis=-1)), (D, "inter", h)
        assert cnt[0, 0] == D
