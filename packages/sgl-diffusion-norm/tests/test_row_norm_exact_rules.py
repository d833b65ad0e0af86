"""The exact row-norm kernels' launch rules (``launch_constants``: warps, held rows, the register cap), read on
the host without running a kernel; test_row_norm_exact.py runs the builds they choose."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import testing

K = testing.backend_module("norm.rms_norm", "triton_exact")  # the exact kernels and their rules


def test_layer_norm_warps_rule():
    """CUDA LayerNorm rows of up to 3 chunks run on 1 warp, of 4-5 chunks on 1 from 16384 rows and 2
    below, longer rows on eager's 4; ROCm, the CPU lane, RMSNorm and a tuning override keep theirs."""
    from types import SimpleNamespace

    from sgl_diffusion_core import RowGeometry
    from sgl_diffusion_norm._row_norm import chain_dtypes

    dt = torch.bfloat16

    def warps(norm, D, rows, platform="cuda", tuning=None):
        ch = chain_dtypes(norm, dt, None, None, torch.empty(0, dtype=dt), None)
        geom = SimpleNamespace(x=RowGeometry(1, rows, D, rows * D, D, (1, rows, D), False), chain=ch, norm=norm,
                               scale=None, shift=None)
        return K._split_options(K.launch_constants(geom, None, None, platform, tuning, x_dtype=dt))[1]["num_warps"]

    for D, rows, want in ((1152, 4096, 1), (1536, 32760, 1), (1537, 4096, 2), (2048, 4096, 2), (2240, 4096, 2),
                          (2240, 32760, 1), (2560, 8192, 2), (2432, 16383, 2), (2432, 16384, 1), (2561, 32760, 4),
                          (3072, 4096, 4), (5120, 75600, 4)):
        assert warps("layer", D, rows) == want, (D, rows)
    assert warps("layer", 1152, 4096, "hip") == 4 and warps("layer", 1152, 4096, "cpu") == 4
    assert warps("layer", 2240, 32760, tuning={"WARPS": 4}) == 4
    ch = chain_dtypes("rms", dt, None, None, torch.empty(0, dtype=dt), None)
    rms = SimpleNamespace(x=RowGeometry(1, 4096, 1152, 4096 * 1152, 1152, (1, 4096, 1152), False), norm="rms",
                          chain=ch, scale=None, shift=None)
    assert "WARPS" not in K.launch_constants(rms, None, None, "cuda", None, dt)  # its warps follow its lanes and rows
    for tuning, want in (({"WARPS": 2}, 2), ({"WARPS": 4, "HOLD": False}, 8), ({"WARPS": 2, "HOLD": False}, 4)):
        # a tuning spreads eager's warp-row over WARPS warps (ROWS rows per program: 2 for rows read twice here)
        const = K.launch_constants(rms, None, None, "cuda", tuning, dt)
        assert K._split_options(const)[1]["num_warps"] == want == const["ROWS"] * tuning["WARPS"], tuning


def test_hold_rule():
    """Which rows are held: chunks counted up to at most three powers of two that fit
    384 bytes per thread in bf16, 320 in fp32; RMSNorm at every row count, one per program, capped at 128
    registers above 32 chunks or below 16384 rows (CUDA), where eager gives a row one warp (16+ rows); LayerNorm from 8
    chunks or below 16384 rows (the measurements in ``launch_constants``); RMSNorm rows read twice go two per
    program below 16384 rows."""
    from types import SimpleNamespace

    from sgl_diffusion_core import RowGeometry
    from sgl_diffusion_norm._row_norm import chain_dtypes

    rx = K.hold_tiles
    assert rx(40) == (32, 8, 0) and rx(19) == (16, 2, 1) and rx(1) == (1, 0, 0)
    assert rx(15) is None and rx(0) is None
    launch_constants = K.launch_constants

    def constants(norm, D, rows, dt, platform="cuda", tuning=None):
        ch = chain_dtypes(norm, dt, None, None, torch.empty(0, dtype=dt), None)
        geom = SimpleNamespace(x=RowGeometry(1, rows, D, rows * D, D, (1, rows, D), False), chain=ch, norm=norm,
                               scale=None, shift=None)
        return launch_constants(geom, None, None, platform, tuning, x_dtype=dt)

    def const(norm, D, rows, dt, platform="cuda", tuning=None):
        c = constants(norm, D, rows, dt, platform, tuning)
        return (c["HOLD1"], c["HOLD2"], c["HOLD3"]), c["ROWS"], c["MAXNREG"]

    bf16, f32 = torch.bfloat16, torch.float32
    assert const("rms", 5120, 75600, bf16) == ((32, 8, 0), 1, 128)  # Wan
    assert const("rms", 3072, 118800, bf16) == ((16, 8, 0), 1, None)  # HunyuanVideo
    assert const("rms", 3072, 4608, bf16) == ((16, 8, 0), 1, 128)  # FLUX: held too, one row per program, capped
    assert const("rms", 3072, 4608, torch.float16) == ((0, 0, 0), 2, None)  # read twice: two rows per program
    assert const("rms", 5120, 75600, f32) == ((0, 0, 0), 1, None)  # 640 bytes per thread: read twice
    assert const("rms", 1920, 75600, bf16) == ((16, 0, 0), 1, None)  # 15 chunks held as 16, the last masked
    assert constants("rms", 1920, 75600, bf16)["CHUNKS"] == 16
    assert const("rms", 3840, 75600, bf16) == ((32, 0, 0), 1, None)  # 30 chunks held as 32
    assert const("rms", 3072, 118800, torch.float16) == ((0, 0, 0), 1, None)  # fp16: never held
    assert const("rms", 2432, 75600, f32) == ((16, 2, 1), 1, None)  # fp32, 304 bytes per thread
    assert const("rms", 4096, 16384, bf16) == ((32, 0, 0), 1, None)  # 32 chunks: uncapped
    assert const("rms", 4224, 16384, bf16) == ((32, 1, 0), 1, 128)  # 33 chunks: capped
    assert const("rms", 4224, 16384, bf16, "hip")[2] is None  # the cap is CUDA's
    assert const("rms", 4224, 16384, bf16, "cpu")[2] is None
    assert const("rms", 4224, 16383, bf16) == ((32, 1, 0), 1, 128)  # below 16384 rows: held and capped too
    assert const("rms", 1920, 16383, bf16) == ((16, 0, 0), 1, 128)
    # read twice: two rows per program
    assert const("rms", 1920, 16383, bf16, tuning={"HOLD": False}) == ((0, 0, 0), 2, None)
    assert constants("rms", 1920, 16383, bf16, tuning={"HOLD": False})["CHUNKS"] == 15
    assert const("rms", 6144, 75600, bf16) == ((32, 16, 0), 1, 128)  # 48 chunks, 384 bytes per thread: held
    assert const("rms", 6144, 4096, bf16) == ((32, 16, 0), 1, 128)
    assert const("rms", 6272, 75600, bf16) == ((0, 0, 0), 1, None)  # 49 chunks, 392 bytes per thread: read twice
    assert const("rms", 3072, 75600, f32) == ((0, 0, 0), 1, None)  # fp32, 384 bytes per thread: read twice
    # under 16 rows eager spreads a row over several warps (LANES > WARP): read twice
    assert const("rms", 3072, 16, bf16) == ((16, 8, 0), 1, 128)
    assert const("rms", 3072, 8, bf16)[0] == (0, 0, 0)
    assert const("rms", 3072, 1, bf16)[0] == (0, 0, 0)
    assert const("rms", 3072, 8, bf16, tuning={"HOLD": True})[0] == (8, 4, 0)  # forced: allowed (64 lanes)

    def reverse(D, rows, tuning=None):
        return constants("rms", D, rows, bf16, tuning=tuning)["REVERSE_OUT"]

    # the output pass's chunk order concerns re-read rows only: held rows build without it
    assert reverse(5120, 75600) is False and reverse(5120, 75600, {"HOLD": False}) is True
    assert reverse(3072, 4608, {"HOLD": False}) is False
    with pytest.raises(ValueError, match="VEC"):
        const("layer", 5120, 75600, bf16, tuning={"HOLD": True, "VEC": False})
    assert const("layer", 5120, 75600, bf16)[0] == (8, 2, 0)
    assert const("layer", 3584, 75600, bf16)[0] == (0, 0, 0)  # 7 chunks of 512, many rows: read twice
    assert const("layer", 3584, 4608, bf16)[0] == (4, 2, 1)  # few rows: held
    assert const("layer", 3072, 118800, bf16)[0] == (0, 0, 0)
    assert const("layer", 3072, 4608, bf16)[0] == (4, 2, 0)
    assert const("layer", 7680, 4608, bf16)[0] == (16, 0, 0)  # 15 chunks of 512 held as 16, the last masked
