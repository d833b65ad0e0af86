"""Benchmark cases of the ext ops at the sizes of an image-to-3D bake: procedural UV spheres of 40k, 200k and
1M faces rendered / baked at 2048², and a 2048² texture with 56 % holes.

Providers: ``sgl_diffusion`` (the public op on the device), ``torch reference`` (the op's torch reference on
the same device; only on the 40k-face mesh for rasterize / interpolate / uv_rasterize, where its per-tile
fragment lists stay small) and, for ``uv_inpaint``, ``cv2.inpaint`` (Telea, radius 3, uint8 on the CPU:
what pipelines call today) when opencv is importable; it is a benchmark-only baseline, never a dependency.
Bytes: the outputs written once plus the inputs read once (a rasterizer's real traffic depends on overdraw).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch

from sgl_diffusion_core import bench, testing

RES = 2048
# name -> (latitude rings, longitude segments); faces = 2 * rings * segments
MESHES: dict[str, tuple[int, int]] = {"40k": (100, 200), "200k": (250, 400), "1m": (500, 1000)}
REFERENCE_UP_TO = 40_000  # faces: the torch reference is timed on meshes up to this size
HOLES = 0.56


def sphere(rings: int, segments: int, device: torch.device):
    """A UV sphere of radius 0.8, rotated so that both poles are in view: positions ``[V, 3]``, uv ``[V, 2]``,
    faces ``[F, 3]`` int32 (one vertex list: the seam column is duplicated)."""
    lat = torch.linspace(0, math.pi, rings + 1, device=device)
    lon = torch.linspace(0, 2 * math.pi, segments + 1, device=device)
    la, lo = torch.meshgrid(lat, lon, indexing="ij")
    p = torch.stack([torch.sin(la) * torch.cos(lo), torch.cos(la), torch.sin(la) * torch.sin(lo)], -1) * 0.8
    c, s = math.cos(0.5), math.sin(0.5)
    p = p @ torch.tensor([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]], device=device)
    uv = torch.stack([lo / (2 * math.pi), 1 - la / math.pi], -1)
    i = torch.arange(rings, device=device)[:, None] * (segments + 1) + torch.arange(segments, device=device)[None, :]
    a, b, cc, d = i, i + 1, i + segments + 1, i + segments + 2
    tri = torch.cat([torch.stack([a, cc, b], -1).reshape(-1, 3), torch.stack([b, cc, d], -1).reshape(-1, 3)])
    return p.reshape(-1, 3), uv.reshape(-1, 2), tri.to(torch.int32)


def clip_space(p: torch.Tensor) -> torch.Tensor:
    """A perspective camera 2.5 units in front of the origin: clip-space ``[V, 4]`` fp32."""
    w = 2.5 - p[:, 2:3]
    return torch.cat([p[:, :2] * 2.0, p[:, 2:3] * 0.5 + 0.5 * w, w], dim=1).contiguous()


def _names(names: list[str] | None, known: dict, op: str) -> list[str]:
    for n in names or []:
        if n not in known:
            raise ValueError(f"unknown {op} bench case {n!r}; known: {', '.join(known)}")
    return names or list(known)


def _check_raster(ours, ref):
    def check():
        (f, b, *_), (rf, rb, *_) = ours(), ref()
        assert torch.equal(f, rf), "face ids differ from the torch reference"
        testing.assert_close(b, rb, atol=1e-6, rtol=1e-6)

    return check


def _raster_cases(op: str, device: torch.device, names: list[str] | None) -> Iterator[bench.BenchCase]:
    import sgl_diffusion_ext as ext

    for name in _names(names, MESHES, op):
        p, uv, tri = sphere(*MESHES[name], device)
        F = tri.shape[0]
        small = F <= REFERENCE_UP_TO
        if op == "rasterize":
            pos = clip_space(p)

            def ours(pos=pos, tri=tri):
                return ext.rasterize(pos, tri, RES)

            def ref(pos=pos, tri=tri):
                return ext.rasterize_reference(pos, tri, RES)

            nbytes, check = bench.tensor_bytes(pos, tri) + RES * RES * (4 + 12 + 4), _check_raster(ours, ref)
        elif op == "uv_rasterize":

            def ours(uv=uv, tri=tri):
                return ext.uv_rasterize(uv, tri, RES)

            def ref(uv=uv, tri=tri):
                return ext.uv_rasterize_reference(uv, tri, RES)

            nbytes, check = bench.tensor_bytes(uv, tri) + RES * RES * (4 + 12), _check_raster(ours, ref)
        else:  # interpolate: per-pixel normals and uv (C = 8 after padding to the channel block) of the render
            face_id, bary, _ = ext.rasterize(clip_space(p), tri, RES)
            attr = torch.cat([p, uv, p.new_ones(p.shape[0], 3)], dim=1).contiguous()

            def ours(a=attr, f=face_id, b=bary, t=tri):
                return ext.interpolate(a, f, b, t)

            def ref(a=attr, f=face_id, b=bary, t=tri):
                return ext.interpolate_reference(a, f, b, t)

            def check(ours=ours, ref=ref):
                testing.assert_exact(ours(), ref())

            nbytes = bench.tensor_bytes(attr, face_id, bary, tri) + RES * RES * attr.shape[1] * 4
        yield bench.BenchCase(
            name=name, shape=f"{F} faces -> {RES}x{RES}", dtype="float32", bytes=nbytes,
            providers={"sgl_diffusion": ours, **({"torch reference": ref} if small else {})},
            check=check if small else None, extra={"faces": F},
        )


def rasterize_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None):
    return _raster_cases("rasterize", device, names)


def interpolate_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None):
    return _raster_cases("interpolate", device, names)


def uv_rasterize_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None):
    return _raster_cases("uv_rasterize", device, names)


TEXTURES: dict[str, tuple[int, int, int]] = {"2048": (RES, RES, 3)}


def _texture(H: int, W: int, C: int, device: torch.device):
    """A smooth texture (low-frequency sines, as a painted bake is) with 56 % of its texels unknown in blobs."""
    g = torch.Generator().manual_seed(0)
    y, x = torch.meshgrid(torch.linspace(0, 1, H), torch.linspace(0, 1, W), indexing="ij")
    ph = torch.rand(C, 2, generator=g) * 6.28
    tex = torch.stack([0.5 + 0.5 * torch.sin(7 * x + ph[c, 0]) * torch.cos(5 * y + ph[c, 1]) for c in range(C)], -1)
    noise = torch.nn.functional.interpolate(torch.rand(1, 1, H // 32, W // 32, generator=g), size=(H, W),
                                            mode="bilinear", align_corners=False)[0, 0]
    known = noise > torch.quantile(noise.flatten()[:: max(1, H * W // 2**20)], HOLES)
    return tex.to(device), known.to(device)


def uv_inpaint_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None):
    import sgl_diffusion_ext as ext

    try:
        import cv2
    except ImportError:
        cv2 = None
    for name in _names(names, TEXTURES, "uv_inpaint"):
        H, W, C = TEXTURES[name]
        tex, known = _texture(H, W, C, device)

        def ours(t=tex, k=known):
            return ext.uv_inpaint(t, k)

        def ref(t=tex, k=known):
            return ext.uv_inpaint_reference(t, k)

        def check(ours=ours, ref=ref, t=tex, k=known):
            out = ours()
            testing.assert_close(out, ref(), atol=1e-6, rtol=1e-6)
            assert torch.equal(out[k], t[k]), "known texels changed"

        providers = {"sgl_diffusion": ours, "torch reference": ref}
        if cv2 is not None:
            img = (tex.clamp(0, 1) * 255).round().to(torch.uint8).cpu().numpy()
            holes = (~known).to(torch.uint8).cpu().numpy() * 255

            def opencv(img=img, holes=holes):
                return cv2.inpaint(img, holes, 3, cv2.INPAINT_TELEA)

            providers["cv2.inpaint"] = opencv
        hole_frac = float((~known).float().mean())
        yield bench.BenchCase(
            name=name, shape=f"[{H}, {W}, {C}] {hole_frac:.0%} holes", dtype="float32",
            bytes=bench.tensor_bytes(tex, known, tex), providers=providers, check=check,
            extra={"holes": hole_frac},
        )


# name -> (latitude rings, longitude segments); the torch reference (sequential sweeps) only on the small one
VERTEX_MESHES: dict[str, tuple[int, int]] = {"2k": (20, 50), "40k": (100, 200)}


def vertex_inpaint_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None):
    """A sphere's atlas at 2048², the texels of the vertices on the camera's side (z > 0) painted."""
    import sgl_diffusion_ext as ext

    for name in _names(names, VERTEX_MESHES, "vertex_inpaint"):
        p, uv, tri = sphere(*VERTEX_MESHES[name], device)
        g = torch.Generator().manual_seed(0)
        tex = torch.rand(RES, RES, 3, generator=g).to(device)
        rows = (uv[:, 1] * RES).floor().clamp(0, RES - 1).long()
        cols = (uv[:, 0] * RES).floor().clamp(0, RES - 1).long()
        mask = torch.zeros(RES, RES, dtype=torch.bool, device=device)
        front = p[:, 2] > 0
        mask[rows[front], cols[front]] = True
        args = (tex, mask, p.contiguous(), uv.contiguous(), tri, tri)

        def ours(args=args):
            return ext.vertex_inpaint(*args)

        def ref(args=args):
            return ext.vertex_inpaint_reference(*args)

        small = name == "2k"
        yield bench.BenchCase(
            name=name, shape=f"{tri.shape[0]} faces, {RES}x{RES} texture", dtype="float32",
            bytes=bench.tensor_bytes(*args, tex, mask),
            providers={"sgl_diffusion": ours, **({"torch reference": ref} if small else {})}, check=None,
            extra={"faces": tri.shape[0]},
        )
