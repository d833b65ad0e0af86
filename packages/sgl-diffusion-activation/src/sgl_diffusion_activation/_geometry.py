"""Input validation and row geometry shared by every activation op (no backend, no Triton).

Each op's ``describe_<op>`` (``activation.py``, ``glu.py``) is :func:`describe_elementwise`
with its activation; the :class:`Geometry` it returns is what the backends get as ``geom``.

Activations are elementwise over ``[..., D]`` tensors whose last dim is contiguous and whose
leading dims may have any strides (views of a fused projection, slices of a bigger
buffer). Kernels index one row per program; :func:`coalesce` merges the leading dims of all
operands into as few dims as their strides allow (a contiguous ``[B, S, D]`` is one dim of
``B*S`` rows), so the kernel splits the row index with at most two divisions per program,
never per element.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    InputDesc,
    Op,
    check_tensors,
    device_arch,
    fp8_result_format,
    is_compiling,
    tensor_platform,
    writable_problem,
)

# Leading dims a Triton kernel can index after coalescing; more is served by the torch backend.
MAX_ROW_DIMS = 3
# Grid dim 0 (one program per row) holds at most 2**31 - 1 programs.
MAX_ROWS = 2**31 - 1
LAYOUT_ROWS = "strided-rows"  # rows a kernel can index (<= MAX_ROW_DIMS dims after coalescing)
LAYOUT_IRREGULAR = "irregular-rows"  # more leading dims than that, or more rows than the grid holds


@dataclass(frozen=True)
class Rows:
    """Leading dims of all operands, coalesced: ``sizes`` outermost first, one stride tuple per operand.

    Row ``r`` (``0 <= r < rows``) is split into indices over ``sizes`` (row-major) and each
    operand's row starts at ``sum(index[k] * strides[op][k])`` elements from its base.
    """

    sizes: tuple[int, ...]
    strides: tuple[tuple[int, ...], ...]

    @property
    def rows(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def padded(self, op: int) -> tuple[int, int, int]:
        """Operand ``op``'s strides padded to three dims (kernel arguments)."""
        st = self.strides[op]
        return (*st, *(0,) * (MAX_ROW_DIMS - len(st)))

    def inner_sizes(self) -> tuple[int, int]:
        """``(n1, n2)``: sizes of dims 1 and 2 (1 where absent), the divisors a kernel splits rows by."""
        s = (*self.sizes, 1, 1)
        return s[1], s[2]


def coalesce(lead: tuple[int, ...], strides: list[tuple[int, ...]]) -> Rows:
    """Merge adjacent leading dims that every operand steps through uniformly; drop size-1 dims."""
    dims = [(n, [st[i] for st in strides]) for i, n in enumerate(lead) if n != 1]
    if not dims:
        return Rows((1,), tuple((0,) for _ in strides))
    merged = [dims[0]]
    for n, st in dims[1:]:
        pn, pst = merged[-1]
        if all(p == s * n for p, s in zip(pst, st)):
            merged[-1] = (pn * n, st)
        else:
            merged.append((n, st))
    return Rows(tuple(n for n, _ in merged), tuple(tuple(st[k] for _, st in merged) for k in range(len(strides))))


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


@dataclass(frozen=True)
class Geometry:
    """What backends need beyond the tensors, computed once per call signature.

    ``act``: the activation (``"silu"``, ``"gelu_tanh"``, ``"gelu"``); ``packed``: a packed GLU
    form (x holds ``a`` and ``b``). ``D``: output columns (for the packed GLU forms, half of
    x's last dim). ``rows``: leading dims of the operands (inputs first, the output last), or
    None when a kernel cannot index them (then only the torch backend serves).
    ``shape``/``dtype``: of the result (with an FP8 ``out_dtype``: of the values it quantizes, rounded
    to ``dtype`` first). ``fp8``: the FP8 format of the result (``"float8_e4m3fn"``, ...), else None.
    """

    act: str
    D: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    rows: Rows | None
    has_bias: bool
    packed: bool = False
    fp8: str | None = None

    @property
    def fp8_dtype(self) -> torch.dtype | None:
        return None if self.fp8 is None else getattr(torch, self.fp8)


def _last_dim_ok(name: str, t: torch.Tensor, problems: list[str]) -> bool:
    if t.dim() == 0:
        problems.append(f"{name} must have at least one dimension, got a 0-d tensor")
        return False
    if t.shape[-1] > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(t.stride())}")
        return False
    return True


def _out_problems(out: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype, fp8: str | None,
                  problems: list[str]) -> None:
    if fp8 is not None:
        problems.append("out= is not supported with an FP8 out_dtype (the result is a new (codes, scale) pair)")
    elif tuple(out.shape) != shape:
        problems.append(f"out has shape {list(out.shape)}; the result has shape {list(shape)}")
    elif out.dtype != dtype:
        problems.append(f"out has dtype {out.dtype}; the result has dtype {dtype} (eager type promotion)")
    elif _last_dim_ok("out", out, problems) and writable_problem("out", out):
        problems.append(f"out (strides {list(out.stride())}) has rows that share memory (an expanded view?)")


def describe_elementwise(
    act: str,
    inputs: dict[str, object],
    *,
    bias: object = None,
    out: object = None,
    packed: bool = False,
    out_dtype: object = None,
    op: str = "",
) -> InputDesc:
    """Validate an activation call and describe it for backend selection.

    act: the activation the op applies (carried in the geometry for the backends).
    inputs: the full-size operands by name (``{"x": x}`` or ``{"a": a, "b": b}``; the first
        one is the main input, the others must have its shape). packed: x is ``[..., 2D]``
        holding ``a = x[..., :D]`` and ``b = x[..., D:]``. bias: ``[D]`` (``[2D]`` packed),
        added to x before the activation. out: optional preallocated result.
    out_dtype: None, or an FP8 dtype (the ops that feed a linear layer; ``op`` names the op in the
        messages): the result quantized per row, returned as ``(codes, scale)``; no ``out`` then.
    """
    problems: list[str] = []
    names = list(inputs)
    main = inputs[names[0]]
    if not isinstance(main, torch.Tensor):
        problems.append(f"{names[0]} must be a torch.Tensor, got {type(main).__name__}")
        check_tensors({**{n: inputs[n] for n in names[1:]}, "bias": bias, "out": out}, None, problems)
        return InputDesc(platform=None, problems=problems)
    platform = tensor_platform(main.device)
    arch = device_arch(platform, main.device.index) if platform in ("cuda", "hip") else None
    dtypes = check_tensors({**inputs, "bias": bias, "out": out}, main.device, problems)
    desc = InputDesc(platform, arch, tuple(dtypes), main.shape[-1] if main.dim() else None, (), problems)
    desc.info = {"geom": None, "empty": False}
    if problems:
        return desc
    tensors = [inputs[n] for n in names]
    if not all(_last_dim_ok(n, t, problems) for n, t in zip(names, tensors)):
        return desc
    shape = tuple(main.shape)
    for n, t in zip(names[1:], tensors[1:]):
        if tuple(t.shape) != shape:
            problems.append(f"{n} of shape {list(t.shape)} must have {names[0]}'s shape {list(shape)}")
    D = shape[-1]
    if packed:
        if D % 2:
            problems.append(f"{names[0]}'s last dim must be even (the [..., 2*D] output of one fused linear), "
                            f"got {D}")
        D //= 2
    out_shape = (*shape[:-1], D)
    dtype = main.dtype
    for t in tensors[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    if bias is not None:
        want = 2 * D if packed else D
        if bias.dim() != 1 or bias.shape[0] != want or (want > 1 and bias.stride(0) != 1):
            problems.append(f"bias must be a contiguous [{'2*D' if packed else 'D'}] = [{want}] tensor, got shape "
                            f"{list(bias.shape)} strides {list(bias.stride())}")
        dtype = torch.promote_types(dtype, bias.dtype)
    fp8, fp8_tag = fp8_result_format(op, out_dtype, platform, arch, problems)
    if out is not None:
        _out_problems(out, out_shape, dtype, fp8, problems)
    if problems:
        return desc
    empty = any(n == 0 for n in out_shape)
    out_strides = tuple(out.stride()) if out is not None else contiguous_strides(out_shape)
    rows = None
    if not empty:
        rows = coalesce(out_shape[:-1], [tuple(t.stride()[:-1]) for t in tensors] + [out_strides[:-1]])
        if rows.ndim > MAX_ROW_DIMS or rows.rows > MAX_ROWS:
            rows = None
    desc.layouts = (LAYOUT_ROWS if rows is not None or empty else LAYOUT_IRREGULAR,)
    if fp8_tag is not None:
        desc.layouts = (*desc.layouts, fp8_tag)
    desc.last_dim = D
    desc.info = {"geom": Geometry(act, D, out_shape, dtype, rows, bias is not None, packed, fp8), "empty": empty}
    return desc


def fp8_call(op: Op, traced, x, bias, out, out_dtype, backend, exact):
    """An FP8 ``out_dtype`` of ``gelu_tanh``, ``silu_and_mul`` or ``gelu_tanh_and_mul``: ``(codes, scale)``
    by the op's plan (``traced``: its FP8 custom op, while ``torch.compile`` traces). ``out`` must be
    None (describe names it otherwise)."""
    options = (("out_dtype", out_dtype),)
    if is_compiling():
        if out is not None:
            op.checked(x, bias, out, options=options)
        return traced(x, bias, out_dtype, backend, exact)
    return op.plan((x, bias, out), backend, exact, options)(x, bias, out)


def fp8_fake(op: Op, packed: bool):
    """The fake implementation of an op's FP8 custom op: codes shaped like the result, fp32 row scales."""

    def fake(x, bias, out_dtype, backend=None, exact=None):
        op.validate(x, bias, None, options=(("out_dtype", out_dtype),))
        shape = list(x.shape)
        if packed:
            shape[-1] //= 2
        return x.new_empty(shape, dtype=out_dtype), x.new_empty((*shape[:-1], 1), dtype=torch.float32)

    return fake


FP8_SCHEMA = "(Tensor x, Tensor? bias, ScalarType out_dtype, str? backend, bool? exact) -> (Tensor, Tensor)"


def empty_result(geom: Geometry):
    """The runner of an empty result: ``out`` itself when given, else a new empty tensor (FP8: with its
    empty scales)."""

    if geom.fp8 is not None:

        def run_fp8(first, second, out, *_):
            return (torch.empty(geom.shape, dtype=geom.fp8_dtype, device=first.device),
                    torch.empty((*geom.shape[:-1], 1), dtype=torch.float32, device=first.device))

        return run_fp8

    def run(first, second, out):
        return torch.empty(geom.shape, dtype=geom.dtype, device=first.device) if out is None else out

    return run
