"""examples/bake.py at a tiny size: the bake keeps what the view painted on the texels it sees and fills the
rest; the Triton backends (under the interpreter) give the reference's bake; the PNG writer's file decodes
back to the image.

Sizes: a 288-face sphere, a 32^2 view and a 32^2 texture (the interpreter runs every program in Python)."""

from __future__ import annotations

import importlib.util
import struct
import sys
import zlib
from pathlib import Path

import pytest
import torch

from sgl_diffusion_core import testing

OP = "ext.rasterize"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bake.py"


@pytest.fixture(scope="module")
def bake():
    spec = importlib.util.spec_from_file_location("_ext_bake_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_bake_keeps_the_painted_texels_and_fills_the_rest(bake):
    mesh = bake.bumpy_sphere(12, 24, torch.device("cpu"))
    view, baked, known, filled = bake.bake(mesh, 32, 32, backend="torch")
    assert view.shape == (32, 32, 3) and filled.shape == (32, 32, 3) and known.dtype == torch.bool
    frac = float(known.float().mean())
    assert 0.1 < frac < 0.6, frac  # the front of the sphere: part of the atlas, not all of it
    assert torch.equal(filled[known], baked[known])
    assert bool(filled.isfinite().all()) and float(filled.min()) >= 0 and float(filled.max()) <= 1
    assert float(baked[known].max()) > 0.2  # painted colour reached the texels
    # the front-facing texels are visible: u around 0.25 (longitude pi/2 faces the camera), v mid-height
    assert bool(known[12:20, 6:10].all()) and not bool(known[:, 20:28].any())


def test_triton_bake_matches_the_reference(bake):
    if "triton" not in testing.runnable_backends(OP, torch.device("cpu")):
        pytest.skip("needs triton under TRITON_INTERPRET=1")
    mesh = bake.bumpy_sphere(12, 24, torch.device("cpu"))
    ref = bake.bake(mesh, 32, 32, backend="torch")
    out = bake.bake(mesh, 32, 32, backend="triton")
    assert torch.equal(out[2], ref[2])
    for a, e in zip(out, ref):
        testing.assert_close(a.float(), e.float(), atol=1e-5, rtol=1e-5)


def test_main_writes_a_png_that_decodes_to_the_figure(bake, tmp_path):
    mesh = bake.bumpy_sphere(6, 12, torch.device("cpu"))
    img = bake.figure(mesh, 16, 16, backend="torch")
    assert img.shape == (16, 64, 3)
    path = bake.write_png(tmp_path / "f.png", img)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        chunks[kind] = body
        pos += 12 + n
    W, H, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (W, H, depth, colour) == (64, 16, 8, 2)
    raw = zlib.decompress(chunks[b"IDAT"])
    rows, prev = [], bytes(W * 3)
    for r in range(H):
        line = raw[r * (W * 3 + 1):(r + 1) * (W * 3 + 1)]
        assert line[0] == 2  # "Up"
        cur = bytes((a + b) & 0xFF for a, b in zip(line[1:], prev))
        rows.append(cur)
        prev = cur
    decoded = torch.tensor(list(b"".join(rows)), dtype=torch.uint8).reshape(H, W, 3).flip(0)
    assert torch.equal(decoded, (img.clamp(0, 1) * 255).round().to(torch.uint8))
    assert bake.main(["--resolution", "16", "--texture", "16", "--rings", "4", "--out", str(tmp_path / "m.png")]) == 0
    assert (tmp_path / "m.png").stat().st_size > 100
