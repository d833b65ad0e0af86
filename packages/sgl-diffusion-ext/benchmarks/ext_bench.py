"""Benchmark cases of the ext ops at the sizes of an image-to-3D bake: procedural UV spheres of 40k, 200k and
1M faces rendered / baked at 2048², a 2048² texture with 56 % holes, and the whole bake of
``examples/bake.py`` at 2048².

Two ways to run them:

- ``sgl-diffusion bench --op ext.rasterize --out ...`` (one op, the providers on the GPU only);
- ``python packages/sgl-diffusion-ext/benchmarks/ext_bench.py --out-dir docs/benchmarks`` (every op and the
  bake in one process, the CPU baselines included): one record ``<op>_bench_<device>.json`` per op and
  ``bake_bench_<device>.json``, then a table of the issue's acceptance figures against their targets.

Providers: ``sgl_diffusion`` (the public op on the device, its default backend), for ``rasterize`` also
``sgl_diffusion(binned)`` and ``sgl_diffusion(perface)`` (each Triton path forced: the data behind
``RasterConfig.from_heuristic``), ``torch reference`` (the op's torch reference on the same device), and with
``cpu=True`` the baselines that run on the CPU, timed by the host clock: ``torch reference (cpu)`` and
``cv2.inpaint (cpu)`` (Telea, radius 3, on the uint8 texture: what pipelines call today; opencv is a
benchmark-only baseline, never a dependency: ``pip install opencv-python-headless``).
Bytes: the outputs written once plus the inputs read once (a rasterizer's real traffic depends on overdraw).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from sgl_diffusion_core import bench, testing

RES = 2048
# name -> (latitude rings, longitude segments); faces = 2 * rings * segments
MESHES: dict[str, tuple[int, int]] = {"40k": (100, 200), "200k": (250, 400), "1m": (500, 1000)}
HOLES = 0.56
CPU = torch.device("cpu")
# the H200 targets, microseconds: (op, case) -> the most our default may take
TARGETS_US: dict[tuple[str, str], float] = {
    ("rasterize", "40k"): 500.0, ("rasterize", "200k"): 1000.0, ("rasterize", "1m"): 3000.0,
    ("uv_inpaint", "2048"): 5000.0, ("bake", "2048"): 50_000.0,
}


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


def _check_raster(ours, ref, *more):
    """Face ids equal and barycentrics close: ``ours`` and every one of ``more`` against the reference ``ref``."""

    def check():
        rf, rb, *_ = ref()
        for fn in (ours, *more):
            f, b, *_ = fn()
            assert torch.equal(f, rf), f"face ids differ at {int((f != rf).sum())} pixels"
            testing.assert_close(b, rb, atol=1e-6, rtol=1e-6)

    return check


def _on_cpu(fn: Callable, *tensors: torch.Tensor) -> Callable:
    """``fn`` bound to CPU copies of ``tensors``: a ``(cpu)`` provider."""
    copies = tuple(t.cpu() for t in tensors)
    return lambda: fn(*copies)


def _cpu_name(name: str) -> bool:
    """Whether a provider runs on the CPU (timed by the host clock): its name ends in ``(cpu)``."""
    return name.endswith("(cpu)")


def _raster_cases(op: str, device: torch.device, names: list[str] | None, cpu: bool) -> Iterator[bench.BenchCase]:
    import sgl_diffusion_ext as ext

    for name in _names(names, MESHES, op):
        p, uv, tri = sphere(*MESHES[name], device)
        F = tri.shape[0]
        more: dict[str, Callable] = {}
        if op == "rasterize":
            pos = clip_space(p)

            def ours(pos=pos, tri=tri, backend=None):
                return ext.rasterize(pos, tri, RES, backend=backend)

            def ref(pos=pos, tri=tri):
                return ext.rasterize_reference(pos, tri, RES)

            more = {"sgl_diffusion(binned)": lambda ours=ours: ours(backend="triton_binned"),
                    "sgl_diffusion(perface)": lambda ours=ours: ours(backend="triton_perface")}
            cpu_args = (pos, tri)
            nbytes = bench.tensor_bytes(pos, tri) + RES * RES * (4 + 12 + 4)
            check = _check_raster(ours, ref, *more.values())
        elif op == "uv_rasterize":

            def ours(uv=uv, tri=tri):
                return ext.uv_rasterize(uv, tri, RES)

            def ref(uv=uv, tri=tri):
                return ext.uv_rasterize_reference(uv, tri, RES)

            cpu_args = (uv, tri)
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

            cpu_args = (attr, face_id, bary, tri)
            nbytes = bench.tensor_bytes(attr, face_id, bary, tri) + RES * RES * attr.shape[1] * 4
        providers = {"sgl_diffusion": ours, **more, "torch reference": ref}
        if cpu:
            reference = getattr(ext, f"{op}_reference")
            providers["torch reference (cpu)"] = _on_cpu(
                (lambda *a, reference=reference: reference(*a, RES)) if op != "interpolate" else reference, *cpu_args)
        yield bench.BenchCase(
            name=name, shape=f"{F} faces -> {RES}x{RES}", dtype="float32", bytes=nbytes, providers=providers,
            check=check, extra=_extra(op, name, faces=F),
        )


def _extra(op: str, case: str, **fields) -> dict:
    target = TARGETS_US.get((op, case))
    return {**fields, **({"target_us": target} if target is not None else {})}


def rasterize_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
                    cpu: bool = False):
    return _raster_cases("rasterize", device, names, cpu)


def interpolate_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
                      cpu: bool = False):
    return _raster_cases("interpolate", device, names, cpu)


def uv_rasterize_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
                       cpu: bool = False):
    return _raster_cases("uv_rasterize", device, names, cpu)


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


def opencv():
    """The ``cv2`` module, or ImportError saying how to install it (a benchmark-only baseline)."""
    try:
        import cv2
    except ImportError as exc:
        raise ImportError("the cv2.inpaint baseline needs OpenCV: pip install opencv-python-headless "
                          "(a benchmark-only dependency of sgl-diffusion-ext)") from exc
    return cv2


def cv2_inpaint(texture: torch.Tensor, known: torch.Tensor) -> torch.Tensor:
    """``cv2.inpaint`` (Telea, radius 3) of a ``[H, W, 3]`` texture in [0, 1] on the CPU, through uint8 as pipelines
    call it; mask = known texels (cv2's marks the holes)."""
    cv2 = opencv()
    img = (texture.clamp(0, 1) * 255).round().to(torch.uint8).cpu().numpy()
    holes = (~known).to(torch.uint8).cpu().numpy() * 255
    return torch.from_numpy(cv2.inpaint(img, holes, 3, cv2.INPAINT_TELEA)).float() / 255


def uv_inpaint_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
                     cpu: bool = False):
    import sgl_diffusion_ext as ext

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

        providers = {"sgl_diffusion": ours,
                     "sgl_diffusion(diffuse)": lambda t=tex, k=known: ext.uv_inpaint(t, k, method="diffuse"),
                     "torch reference": ref}
        if cpu:
            providers["torch reference (cpu)"] = _on_cpu(ext.uv_inpaint_reference, tex, known)
            if C == 3:
                img, holes = tex.cpu(), known.cpu()
                providers["cv2.inpaint (cpu)"] = lambda img=img, holes=holes: cv2_inpaint(img, holes)
        hole_frac = float((~known).float().mean())
        yield bench.BenchCase(
            name=name, shape=f"[{H}, {W}, {C}] {hole_frac:.0%} holes", dtype="float32",
            bytes=bench.tensor_bytes(tex, known, tex), providers=providers, check=check,
            extra=_extra("uv_inpaint", name, holes=hole_frac),
        )


# name -> (latitude rings, longitude segments); the torch reference (sequential sweeps) only on the small one
VERTEX_MESHES: dict[str, tuple[int, int]] = {"2k": (20, 50), "40k": (100, 200)}


def vertex_inpaint_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
                         cpu: bool = False):
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
        providers = {"sgl_diffusion": ours, **({"torch reference": ref} if small else {})}
        if cpu and small:
            providers["torch reference (cpu)"] = _on_cpu(ext.vertex_inpaint_reference, *args)
        yield bench.BenchCase(
            name=name, shape=f"{tri.shape[0]} faces, {RES}x{RES} texture", dtype="float32",
            bytes=bench.tensor_bytes(*args, tex, mask), providers=providers, check=None,
            extra={"faces": tri.shape[0]},
        )


# the bake of examples/bake.py: name -> (sphere rings, view side, texture side); faces = 4 * rings^2
BAKES: dict[str, tuple[int, int, int]] = {"2048": (100, RES, RES)}


def bake_example():
    """``examples/bake.py`` of this distribution's source tree, as a module."""
    name = "_sgl_diffusion_ext_bake_example"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "examples" / "bake.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def bake_cases(device: torch.device, dtype: torch.dtype = torch.float32, names: list[str] | None = None,
               cpu: bool = False):
    """The whole bake of ``examples/bake.py`` (rasterize a view, paint it, uv_rasterize, project, uv_inpaint) of a
    40k-face bumpy sphere: ours on the device; the torch reference of every op on the device and on the CPU; the
    same CPU bake with ``cv2.inpaint`` in place of ``uv_inpaint`` (what a pipeline without these kernels runs)."""
    ex = bake_example()
    for name in _names(names, BAKES, "bake"):
        rings, view, tex = BAKES[name]
        mesh = ex.bumpy_sphere(rings, 2 * rings, device)
        mesh_cpu = tuple(t.cpu() for t in mesh)

        def ours(mesh=mesh, view=view, tex=tex):
            return ex.bake(mesh, view, tex)

        def ref(mesh=mesh, view=view, tex=tex):
            return ex.bake(mesh, view, tex, backend="torch")

        def check(ours=ours, ref=ref):
            out, want = ours(), ref()
            assert torch.equal(out[2], want[2]), "the baked texels differ from the reference's"
            for a, e in zip(out, want):
                testing.assert_close(a.float(), e.float(), atol=1e-5, rtol=1e-5)

        providers = {"sgl_diffusion": ours, "torch reference": ref}
        if cpu:
            providers["torch reference (cpu)"] = lambda m=mesh_cpu, v=view, t=tex: ex.bake(m, v, t, backend="torch")
            providers["torch reference + cv2.inpaint (cpu)"] = (
                lambda m=mesh_cpu, v=view, t=tex: ex.bake(m, v, t, backend="torch", inpaint=cv2_inpaint))
        F = mesh[3].shape[0]
        yield bench.BenchCase(
            name=name, shape=f"{F} faces, view {view}x{view}, texture {tex}x{tex}", dtype="float32",
            bytes=view * view * 3 * 4 + tex * tex * (3 * 4 * 2 + 1), providers=providers, check=check,
            extra=_extra("bake", name, faces=F, bytes_model="the view, the baked texture, its mask and the filled "
                                                              "texture written once"),
        )


# ------------------------------------------------------------------------ one run of every figure

SUITES: dict[str, Callable] = {
    "rasterize": rasterize_cases, "uv_rasterize": uv_rasterize_cases, "interpolate": interpolate_cases,
    "uv_inpaint": uv_inpaint_cases, "vertex_inpaint": vertex_inpaint_cases, "bake": bake_cases,
}


def run_suite(op: str, cases, device: torch.device, *, rep: int, cpu_rep: int,
              progress: Callable[[str], None] = print) -> bench.BenchRecord:
    """``bench.run_cases`` with the ``(cpu)`` providers timed by the host clock (``cpu_rep`` calls after one
    warm-up; no host-overhead figure) and a provider that fails (e.g. opencv missing) reported in the record."""
    rec = bench.BenchRecord(op=f"ext.{op}", env=bench.environment(device))
    for case in cases:
        progress(f"[{op}] {case.name} {case.shape}: checking")
        status = "not checked"
        if case.check is not None:
            case.check()
            status = "passed"
        copy_t, copy_gbps = bench.copy_bandwidth(case.bytes, device, rep=rep)
        for prov, fn in case.providers.items():
            on_cpu = _cpu_name(prov)
            try:
                if on_cpu:
                    t = bench.time_host(fn, warmup=1, rep=cpu_rep)
                else:
                    t = bench.time_gpu(fn, device, rep=rep)
            except Exception as exc:
                progress(f"[{op}] {case.name}: {prov} failed: {type(exc).__name__}: {exc}")
                rec.add(case=case.name, shape=case.shape, dtype=case.dtype, provider=prov,
                        error=f"{type(exc).__name__}: {exc}")
                continue
            host = None
            if not on_cpu and device.type == "cuda":
                host = bench.host_us_per_call(fn, device, calls=max(3, min(200, int(50.0 / max(t.median_ms, 1e-3)))))
            gbps = t.gbps(case.bytes)
            rec.add(case=case.name, shape=case.shape, dtype=case.dtype, provider=prov, bytes=case.bytes,
                    median_us=t.median_ms * 1e3, p20_us=t.p20_ms * 1e3, p80_us=t.p80_ms * 1e3, gbps=gbps,
                    copy_gbps=copy_gbps, copy_us=copy_t.median_ms * 1e3, frac_of_copy=gbps / copy_gbps,
                    host_us_per_call=host, check=status, device="cpu" if on_cpu else str(device),
                    timer="host clock" if on_cpu else ("cuda events" if device.type == "cuda" else "host clock"),
                    **case.extra)
            progress(f"[{op}] {case.name}: {prov:>36} {t.median_ms * 1e3:12.1f} us")
        ours = next((r for r in rec.rows if r.get("case") == case.name and r.get("provider") == "sgl_diffusion"
                     and "median_us" in r), None)
        if ours:
            for r in rec.rows:
                if r.get("case") == case.name and "median_us" in r:
                    r["speedup_of_ours"] = r["median_us"] / ours["median_us"]
    return rec


def acceptance(records: dict[str, bench.BenchRecord]) -> list[str]:
    """One line per acceptance figure: ours against its target, beside the baselines of the same case."""
    lines = []
    for (op, case), target in TARGETS_US.items():
        rec = records.get(op)
        rows = [r for r in (rec.rows if rec else []) if r.get("case") == case and "median_us" in r]
        ours = next((r for r in rows if r["provider"] == "sgl_diffusion"), None)
        if ours is None:
            lines.append(f"{op} {case}: not measured")
            continue
        verdict = "meets" if ours["median_us"] <= target else "MISSES"
        others = ", ".join(f"{r['provider']} {r['median_us'] / 1e3:.2f} ms" for r in rows if r is not ours)
        lines.append(f"{op} {case}: {ours['median_us'] / 1e3:.3f} ms, target {target / 1e3:g} ms: {verdict}"
                     + (f" ({others})" if others else ""))
    return lines


def device_tag(device: torch.device) -> str:
    """The ``<device>`` of the record names: ``h200``, ``h100``, ... from the GPU's name (``cpu`` without one)."""
    if device.type != "cuda":
        return "cpu"
    name = torch.cuda.get_device_name(device).lower()
    for tag in ("h200", "h100", "b200", "a100", "mi300x", "mi325x", "mi355x"):
        if tag in name.replace(" ", ""):
            return tag
    return name.split()[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Every ext benchmark and the bake in one run, CPU baselines beside.")
    ap.add_argument("--out-dir", default="docs/benchmarks", help="where the records go (default docs/benchmarks)")
    ap.add_argument("--ops", default=",".join(SUITES), help=f"comma-separated suites (default: {','.join(SUITES)})")
    ap.add_argument("--device", default=None, help="torch device (default: cuda when there is one, else cpu)")
    ap.add_argument("--tag", default=None, help="the <device> of the record names (default: from the GPU name)")
    ap.add_argument("--rep", type=int, default=50, help="timed calls per GPU provider (default 50)")
    ap.add_argument("--cpu-rep", type=int, default=3, help="timed calls per CPU provider (default 3)")
    ap.add_argument("--no-cpu", action="store_true", help="leave the CPU baselines out")
    args = ap.parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    tag = args.tag or device_tag(device)
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    unknown = [o for o in ops if o not in SUITES]
    if unknown:
        ap.error(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(SUITES)}")
    if not args.no_cpu:
        try:
            opencv()
        except ImportError as exc:
            print(f"warning: {exc}; the cv2.inpaint rows will record the error", file=sys.stderr)
    records = {}
    for op in ops:
        cases = SUITES[op](device, torch.float32, None, cpu=not args.no_cpu)
        rec = run_suite(op, cases, device, rep=args.rep, cpu_rep=args.cpu_rep)
        records[op] = rec
        print(f"wrote {rec.write(Path(args.out_dir) / f'{op}_bench_{tag}.json')}", flush=True)
    print("\nacceptance (issue 32):")
    for line in acceptance(records):
        print("  " + line)
    print("plots: for f in " + " ".join(f"{args.out_dir}/{op}_bench_{tag}.json" for op in ops)
          + '; do python tools/plot_bench.py "$f"; done; then python tools/gen_docs.py')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
