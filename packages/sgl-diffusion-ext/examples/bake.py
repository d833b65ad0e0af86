"""Bake a painted view of a mesh into its UV texture with sgl-diffusion-ext, the way image-to-3D pipelines texture
a generated mesh: render a view, paint it, carry the paint to the texels the view sees, fill the rest.

    python packages/sgl-diffusion-ext/examples/bake.py                      # CPU: the torch reference
    python packages/sgl-diffusion-ext/examples/bake.py --device cuda        # GPU: the Triton kernels
    python packages/sgl-diffusion-ext/examples/bake.py --resolution 2048 --texture 2048 --out bake.png

The mesh is a bumpy UV sphere built here; the "painting" is a procedural pattern shaded by the view's normals,
standing in for a diffusion model's output. Steps, each one op:

1. ``rasterize`` the mesh from the camera: face id, barycentrics and depth per pixel;
2. paint the view: ``interpolate`` the vertex normals, a colour pattern in screen space times a diffuse light;
3. ``uv_rasterize`` the atlas: per texel, the face and barycentrics it belongs to;
4. bake: ``interpolate`` each texel's 3-D position, project it with the camera, and take the painted pixel
   where the view's depth there is the texel's own (the texel is visible), else leave a hole;
5. ``uv_inpaint`` the holes (push-pull pyramid).

The figure (``--out``, PNG written by ``write_png`` below): the painted view, the baked texture with its holes
in grey, the inpainted texture and a render of the textured mesh from a second camera.
"""

from __future__ import annotations

import argparse
import math
import struct
import zlib
from pathlib import Path

import torch

import sgl_diffusion_ext as ext

# the camera looks down -z from CAMERA_DISTANCE; FOCAL scales x and y; depth maps [NEAR, FAR] to [-1, 1]
CAMERA_DISTANCE = 2.6
FOCAL = 2.2
NEAR, FAR = 1.0, 4.0
VISIBLE_DEPTH = 0.02  # z/w: how far behind the depth the view saw at its pixel a texel still counts as visible


def bumpy_sphere(rings: int, segments: int, device: torch.device):
    """A UV sphere of radius ~0.8 with smooth bumps: positions ``[V, 3]``, normals ``[V, 3]``, uv ``[V, 2]`` and
    faces ``[F, 3]`` int32 (``F = 2 * rings * segments``; the seam column is duplicated so one index list serves
    positions and uv)."""
    lat = torch.linspace(0, math.pi, rings + 1, device=device)
    lon = torch.linspace(0, 2 * math.pi, segments + 1, device=device)
    la, lo = torch.meshgrid(lat, lon, indexing="ij")
    unit = torch.stack([torch.sin(la) * torch.cos(lo), torch.cos(la), torch.sin(la) * torch.sin(lo)], -1)
    radius = 0.8 + 0.06 * torch.sin(5 * lo) * torch.sin(4 * la) ** 2
    p = (unit * radius[..., None]).reshape(-1, 3)
    uv = torch.stack([lo / (2 * math.pi), 1 - la / math.pi], -1).reshape(-1, 2)
    i = torch.arange(rings, device=device)[:, None] * (segments + 1) + torch.arange(segments, device=device)[None, :]
    a, b, c, d = i, i + 1, i + segments + 1, i + segments + 2
    tri = torch.cat([torch.stack([a, c, b], -1).reshape(-1, 3), torch.stack([b, c, d], -1).reshape(-1, 3)])
    tri = tri.to(torch.int32)
    return p, vertex_normals(p, tri), uv, tri


def vertex_normals(p: torch.Tensor, tri: torch.Tensor) -> torch.Tensor:
    """Area-weighted vertex normals ``[V, 3]`` (unit length; a vertex of no face gets +z)."""
    t = tri.long()
    fn = torch.linalg.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    n = torch.zeros_like(p).index_add_(0, t.reshape(-1), fn.repeat_interleave(3, dim=0))
    n = torch.where(n.norm(dim=1, keepdim=True) > 0, n, torch.tensor([0.0, 0.0, 1.0], device=p.device))
    # oriented outwards (the sphere is star-shaped around the origin)
    out = torch.nn.functional.normalize(n, dim=1)
    return torch.where((out * p).sum(1, keepdim=True) < 0, -out, out)


def rotate_y(p: torch.Tensor, angle: float) -> torch.Tensor:
    c, s = math.cos(angle), math.sin(angle)
    rot = torch.tensor([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]], device=p.device)
    return p @ rot


def project(p: torch.Tensor) -> torch.Tensor:
    """Clip-space ``[.., 4]`` of world points ``[.., 3]`` seen by the camera (w = distance along the view)."""
    w = CAMERA_DISTANCE - p[..., 2:3]
    z = (w - NEAR) * (2 / (FAR - NEAR)) - 1  # z/w linear in w: the visibility tolerance means the same everywhere
    return torch.cat([p[..., :2] * FOCAL, z * w, w], dim=-1)


def paint(face_id, bary, tri, normals, backend=None):
    """The procedural stand-in for a painted view ``[H, W, 3]`` in [0, 1]: stripes and rings in screen space
    shaded by a light from the upper left; background 0."""
    H, W = face_id.shape[1:]
    n = ext.interpolate(normals, face_id, bary, tri, backend=backend)[0]
    n = torch.nn.functional.normalize(n, dim=-1, eps=1e-12)
    y, x = torch.meshgrid(torch.linspace(-1, 1, H, device=n.device), torch.linspace(-1, 1, W, device=n.device),
                          indexing="ij")
    r = torch.sqrt(x * x + y * y)
    base = torch.stack([0.6 + 0.35 * torch.sin(9 * x + 2 * y), 0.55 + 0.35 * torch.sin(14 * r),
                        0.6 + 0.3 * torch.cos(6 * y - 3 * x)], -1)
    light = torch.nn.functional.normalize(torch.tensor([-0.5, 0.6, 1.0], device=n.device), dim=0)
    shade = 0.3 + 0.7 * (n @ light).clamp(min=0)
    return (base * shade[..., None]) * (face_id[0] > 0)[..., None]


def bake(mesh, resolution: int, texture: int, *, backend: str | None = None, inpaint=None):
    """Steps 1-5 of the module docstring for one view: ``(view [R, R, 3], baked [T, T, 3], known [T, T],
    texture [T, T, 3])``. ``backend`` goes to every op (None: each op's default for the device); ``inpaint``
    replaces step 5 with ``inpaint(baked, known) -> texture`` (a benchmark's baseline)."""
    p, normals, uv, tri = mesh
    face_id, bary, depth = ext.rasterize(project(p), tri, resolution, backend=backend)  # 1
    view = paint(face_id, bary, tri, normals, backend)  # 2
    t_face, t_bary = ext.uv_rasterize(uv, tri, texture, backend=backend)  # 3
    world = ext.interpolate(p, t_face[None], t_bary[None], tri, backend=backend)[0]  # 4
    clip = project(world)
    sx, sy = clip[..., 0] / clip[..., 3], clip[..., 1] / clip[..., 3]
    col = ((sx + 1) * (resolution / 2) - 0.5).round().long().clamp(0, resolution - 1)
    row = ((sy + 1) * (resolution / 2) - 0.5).round().long().clamp(0, resolution - 1)
    seen = depth[0, row, col]  # +inf where the view saw no face
    known = (t_face > 0) & (face_id[0, row, col] > 0) & (clip[..., 2] / clip[..., 3] <= seen + VISIBLE_DEPTH)
    baked = torch.where(known[..., None], view[row, col], 0.0)
    if inpaint is None:
        filled = ext.uv_inpaint(baked, known, backend=backend)  # 5
    else:
        filled = inpaint(baked, known)
    return view, baked, known, filled


def render_textured(mesh, tex: torch.Tensor, resolution: int, angle: float, backend: str | None = None):
    """The mesh turned by ``angle`` around y, textured with ``tex`` (nearest texel): ``[R, R, 3]``, background
    dark grey."""
    p, _, uv, tri = mesh
    face_id, bary, _ = ext.rasterize(project(rotate_y(p, angle)), tri, resolution, backend=backend)
    st = ext.interpolate(uv, face_id, bary, tri, backend=backend)[0]
    T = tex.shape[0]
    c = (st[..., 0] * T).long().clamp(0, T - 1)
    r = (st[..., 1] * T).long().clamp(0, T - 1)
    return torch.where((face_id[0] > 0)[..., None], tex[r, c], 0.15)


def figure(mesh, resolution: int, texture: int, backend: str | None = None) -> torch.Tensor:
    """The four panels side by side as one ``[R, 4R, 3]`` image in [0, 1] (texture panels resized to R)."""
    view, baked, known, filled = bake(mesh, resolution, texture, backend=backend)
    holes = torch.where(known[..., None], baked, 0.5)

    def fit(img):  # a texture to the panel size, row 0 (v = 0) at the bottom like the renders
        return torch.nn.functional.interpolate(img.permute(2, 0, 1)[None], size=(resolution, resolution),
                                               mode="nearest")[0].permute(1, 2, 0)

    second = render_textured(mesh, filled, resolution, math.radians(50), backend)
    return torch.cat([view, fit(holes), fit(filled), second], dim=1)


def write_png(path: str | Path, image: torch.Tensor) -> Path:
    """``image`` ``[H, W, 3]`` in [0, 1], row 0 at the bottom, as an 8-bit RGB PNG (each row filtered with
    "Up", deflate level 9)."""
    img = (image.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).flip(0).cpu()
    H, W, _ = img.shape
    rows = img.reshape(H, W * 3).to(torch.int16)
    up = torch.cat([rows[:1], rows[1:] - rows[:-1]]).remainder(256).to(torch.uint8)
    raw = torch.cat([torch.full((H, 1), 2, dtype=torch.uint8), up], dim=1).numpy().tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    out = Path(path)
    out.write_bytes(png)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="torch device (cpu: the torch reference; cuda: Triton)")
    ap.add_argument("--resolution", type=int, default=256, help="view side in pixels (default 256)")
    ap.add_argument("--texture", type=int, default=256, help="texture side in texels (default 256)")
    ap.add_argument("--rings", type=int, default=48, help="latitude rings of the sphere (faces: 4 * rings^2)")
    ap.add_argument("--out", default="bake.png", help="PNG of the four panels (default bake.png)")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    mesh = bumpy_sphere(args.rings, 2 * args.rings, device)
    img = figure(mesh, args.resolution, args.texture)
    out = write_png(args.out, img)
    print(f"{mesh[3].shape[0]} faces, view {args.resolution}^2, texture {args.texture}^2 on {device}: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
