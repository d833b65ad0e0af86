"""causal_conv3d_cat_pad is torch.equal to F.pad(torch.cat([cache_x, x], dim=2), padding).

Grid: the Wan VAE causal padding (1, 1, 1, 1, 2, 0) with a 2-frame cache, no cache, a
cache of 1 frame, asymmetric and negative (cropping) padding, 2- and 4-entry padding;
contiguous and channels_last_3d x (output in x's format), a strided cache; C=5 and W=19
(masked tiles), empty T. The contiguous flat kernel: odd W, pads 0..3 per side, crops, time
padding, 0..2 cache frames, small programs (several chunks per frame), the launch choices.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, describe, testing

OP = "layout.causal_conv3d_cat_pad"
K = testing.backend_module(OP, "triton")  # the launch rule and kernels
CL = torch.channels_last_3d


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


def ref(x, cache, padding):
    return F.pad(x if cache is None else torch.cat([cache, x], dim=2), padding)


CASES = {
    "wan": ((1, 1, 1, 1, 2, 0), 2),
    "no-cache": ((1, 1, 1, 1, 2, 0), None),
    "cache1": ((1, 1, 1, 1, 2, 0), 1),
    "asym": ((0, 2, 1, 0, 0, 1), 2),
    "crop": ((-1, 1, 0, -2, -1, 0), 2),
    "pad2": ((3, 1), None),
    "pad4": ((1, 0, 2, 2), 1),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fmt", ["contiguous", "channels_last_3d"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_matches_eager(backend, device, case, fmt, dtype):
    torch.manual_seed(len(case))
    padding, tc = CASES[case]
    x = rnd(2, 5, 3, 6, 19, dtype=dtype, device=device)
    cache = None if tc is None else rnd(2, 5, tc, 6, 19, dtype=dtype, device=device)
    if fmt == "channels_last_3d":
        x = x.contiguous(memory_format=CL)
        cache = None if cache is None else cache.contiguous(memory_format=CL)
    out = lay.causal_conv3d_cat_pad(x, cache, padding, backend=backend)
    testing.assert_exact(out, ref(x, cache, padding))
    testing.assert_exact(out, lay.causal_conv3d_cat_pad_reference(x, cache, padding))
    assert out.is_contiguous(memory_format=CL if fmt == "channels_last_3d" else torch.contiguous_format)


def test_mixed_formats_and_strided_cache(backend, device):
    x = rnd(1, 8, 2, 5, 7, device=device).contiguous(memory_format=CL)
    big = rnd(1, 8, 4, 5, 9, device=device)
    cache = big[:, :, 2:, :, 1:8]  # last two frames of a previous chunk, strided view
    out = lay.causal_conv3d_cat_pad(x, cache, (1, 1, 1, 1, 2, 0), backend=backend)
    testing.assert_exact(out, ref(x, cache, (1, 1, 1, 1, 2, 0)))
    y = rnd(1, 8, 2, 5, 7, device=device)
    out = lay.causal_conv3d_cat_pad(y, cache.contiguous(memory_format=CL), (1, 1, 1, 1, 2, 0), backend=backend)
    testing.assert_exact(out, ref(y, cache, (1, 1, 1, 1, 2, 0)))
    assert out.is_contiguous()


def test_empty(backend, device):
    x = rnd(1, 3, 0, 4, 4, device=device)
    out = lay.causal_conv3d_cat_pad(x, None, (1, 1, 1, 1, 2, 0), backend=backend)
    testing.assert_exact(out, ref(x, None, (1, 1, 1, 1, 2, 0)))  # two all-zero frames
    out = lay.causal_conv3d_cat_pad(rnd(0, 3, 2, 4, 4, device=device), None, (1, 1), backend=backend)
    assert out.shape == (0, 3, 2, 4, 6)


def test_bad_inputs(backend, device):
    x = rnd(1, 3, 2, 4, 4, device=device)
    with pytest.raises(UnsupportedInputError, match="cache_x has shape"):
        lay.causal_conv3d_cat_pad(x, rnd(1, 3, 2, 4, 5, device=device), (1, 1), backend=backend)
    with pytest.raises(UnsupportedInputError, match="padding must be 2, 4 or 6 ints"):
        lay.causal_conv3d_cat_pad(x, None, (1, 1, 1), backend=backend)
    with pytest.raises(UnsupportedInputError, match="crops more"):
        lay.causal_conv3d_cat_pad(x, None, (-3, -3), backend=backend)
    with pytest.raises(UnsupportedInputError, match=r"\[B, C, T, H, W\]"):
        lay.causal_conv3d_cat_pad(x[0], None, (1, 1), backend=backend)
    assert not lay.can_use_causal_conv3d_cat_pad(x, x.half(), (1, 1), backend=backend)


def test_compile_fullgraph(backend, device):
    x = rnd(1, 3, 2, 4, 5, device=device).contiguous(memory_format=CL)
    c = rnd(1, 3, 2, 4, 5, device=device)
    f = torch.compile(lambda x, c: lay.causal_conv3d_cat_pad(x, c, (1, 1, 1, 1, 2, 0), backend=backend),
                      fullgraph=True, backend="aot_eager")
    testing.assert_exact(f(x, c), ref(x, c, (1, 1, 1, 1, 2, 0)))


@pytest.mark.parametrize("case", ["wan", "no-cache", "asym", "crop"])
@pytest.mark.parametrize("C", [16, 24, 6])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_channels_last_row_path(backend, device, case, C, dtype):
    """channels_last_3d x and cache (the flat row kernel on triton): 16-byte vectors where C
    allows them (16 and 24 in bf16), narrower ones otherwise; rows longer than one tile."""
    torch.manual_seed(C)
    padding, tc = CASES[case]
    x = rnd(2, C, 2, 3, 70, dtype=dtype, device=device).contiguous(memory_format=CL)
    cache = None if tc is None else rnd(2, C, tc, 3, 70, dtype=dtype, device=device).contiguous(memory_format=CL)
    out = lay.causal_conv3d_cat_pad(x, cache, padding, backend=backend)
    testing.assert_exact(out, ref(x, cache, padding))
    assert out.is_contiguous(memory_format=CL)
    geom = describe(OP, x, cache, padding).info["geom"]
    fast = K._row_launch(geom[0], geom[1], geom[2], x.element_size(), "cuda")  # the backend's launch rule
    assert fast is not None
    assert fast[1]["VEC"] == min(16 // x.element_size(), C & -C)  # 16 bytes, or C's power of 2


@pytest.mark.parametrize("case", ["wan", "no-cache", "crop"])
@pytest.mark.parametrize("W", [20, 22, 30])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_contiguous_wide_stores(backend, device, case, W, dtype):
    """Contiguous x whose output row length W + pad is even (the tile kernel stores 2, 4 or
    8 elements at a time), a strided cache (one source per program either way)."""
    torch.manual_seed(W)
    padding, tc = CASES[case]
    x = rnd(1, 3, 2, 9, W, dtype=dtype, device=device)
    cache = None if tc is None else rnd(1, 3, 4, 9, W + 2, dtype=dtype, device=device)[:, :, 4 - tc:, :, 1:-1]
    out = lay.causal_conv3d_cat_pad(x, cache, padding, backend=backend)
    testing.assert_exact(out, ref(x, cache, padding))


def chosen(geom, x, cache):
    """``(preferred launch, element launch)`` of the Triton backend's rule for one signature."""
    word, _, element, _ = K.launches(geom, x, cache)
    return word or element, element


FLAT_PADS = {
    "none": (0, 0, 0, 0, 0, 0),
    "wan": (1, 1, 1, 1, 2, 0),
    "left3": (3, 0, 2, 1, 0, 1),
    "right2": (0, 2, 3, 0, 1, 0),
    "all3": (3, 3, 3, 3, 1, 1),
    "crop": (-1, 2, -2, 1, 0, 0),
    "crop-right": (2, -3, 1, -1, -1, 0),
    "crop-all": (-2, -1, -1, -2, 0, -1),
}


def _flat_inputs(W, tc, dtype, device, H=8, T=3):
    # [2, 4, T, H, W]: B*C = 8 and H*W a multiple of 8, so 16-byte vectors (bf16 and fp32)
    x = rnd(2, 4, T, H, W, dtype=dtype, device=device)
    cache = None if tc is None else rnd(2, 4, tc, H, W, dtype=dtype, device=device)
    return x, cache


# every padding with one of 0, 1 or 2 cache frames (each count under several paddings): the cache
# frames change which source a frame reads, not how a row is rearranged
FLAT_CASES = [(p, (None, 1, 2)[i % 3]) for i, p in enumerate(FLAT_PADS)]


@pytest.mark.parametrize("pads,tc", FLAT_CASES, ids=[f"{p}-tc{tc}" for p, tc in FLAT_CASES])
@pytest.mark.parametrize("W,dtype", [(13, torch.bfloat16), (37, torch.float32)], ids=["W13-bf16", "W37-fp32"])
def test_contiguous_flat_path(backend, device, pads, tc, W, dtype):
    """Contiguous x and cache with odd W (output rows start at odd element offsets): the flat
    kernel (16-byte vector loads and stores, rows rearranged in registers) on triton, for
    left / right / top / bottom pads of 0..3, crops, time padding and 0, 1 or 2 cache frames,
    with vectors of 8 (bf16) and 4 (fp32) elements."""
    torch.manual_seed(W + (tc or 0))
    padding = FLAT_PADS[pads]
    x, cache = _flat_inputs(W, tc, dtype, device)
    out = lay.causal_conv3d_cat_pad(x, cache, padding, backend=backend)
    testing.assert_exact(out, lay.causal_conv3d_cat_pad_reference(x, cache, padding))
    assert torch.equal(out, ref(x, cache, padding)) and out.is_contiguous()
    geom = describe(OP, x, cache, padding).info["geom"]
    flat = K._flat_launch(geom[0], geom[1], geom[2], x.element_size(), "cuda")
    assert flat is not None and flat[1]["VEC"] == 16 // x.element_size()


@pytest.mark.parametrize("pads", ["wan", "left3", "crop-right", "crop-all"])
@pytest.mark.parametrize("tc", [None, 2])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_contiguous_flat_small_tiles(backend, device, monkeypatch, pads, tc, dtype):
    """The flat kernel with 512-byte programs: several chunks per frame, chunks that end in the
    next frame's first vector, a span margin sized for crops (the backend's function directly,
    so that the patched launch rule is read)."""
    if backend != "triton":
        pytest.skip("launch rule of the Triton backend")
    monkeypatch.setitem(K._FLAT_RULE, "tile_bytes", 512)
    torch.manual_seed(len(pads))
    padding = FLAT_PADS[pads]
    x, cache = _flat_inputs(37, tc, dtype, device, H=16, T=2)
    geom = describe(OP, x, cache, padding).info["geom"]
    launch = chosen(geom, x, cache)[0]
    assert launch.kernel is K._cat_pad_flat_kernel
    assert launch.constexprs["S"] == 512 // x.element_size()
    assert launch.grid[0] > 1  # several chunks per frame
    testing.assert_exact(K.prepare(geom, x, cache)(x, cache, padding), ref(x, cache, padding))


def test_contiguous_launch_choice(backend, device):
    """Which kernel serves which layout: 16-bit contiguous x with even rows the word kernel;
    contiguous x (odd W) and a cache with packed planes (contiguous, or a T slice) the flat
    kernel, a W-strided cache view the tile kernel, channels_last_3d the
    flat row kernel."""
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    x, cache = _flat_inputs(13, 2, torch.bfloat16, device)
    view = rnd(2, 4, 2, 8, 15, device=device)[..., 1:-1]
    last = rnd(2, 4, 5, 8, 13, device=device)[:, :, 3:]  # a previous chunk's last frames: packed planes
    cl = x.contiguous(memory_format=CL), cache.contiguous(memory_format=CL)
    even = _flat_inputs(12, 2, torch.bfloat16, device)
    for args, name in ((even, "_cat_pad_words_kernel"),
                       ((x, cache), "_cat_pad_flat_kernel"), ((x, None), "_cat_pad_flat_kernel"),
                       ((x, last), "_cat_pad_flat_kernel"), ((x, view), "_cat_pad_kernel"),
                       (cl, "_cat_pad_rows_kernel")):
        geom = describe(OP, *args, (1, 1, 1, 1, 0, 0)).info["geom"]
        assert chosen(geom, *args)[0].kernel is getattr(K, name), name
        testing.assert_exact(K.prepare(geom, *args)(*args, (1, 1, 1, 1, 0, 0)), ref(*args, (1, 1, 1, 1, 0, 0)))


# W pads with even sums (word kernel: odd and even left pads, crops) and one odd sum (flat kernel)
WORD_PADS = {
    "wan": (1, 1, 1, 1, 2, 0),
    "all3": (3, 3, 3, 3, 1, 1),
    "right2": (0, 2, 3, 0, 1, 0),
    "crop-odd": (-1, 3, -2, 1, 0, 0),
    "crop-even": (-2, 0, 1, -1, -1, 0),
    "left3": (3, 0, 2, 1, 0, 1),
}


WORD_CASES = [(p, (None, 1, 2)[i % 3]) for i, p in enumerate(WORD_PADS)]  # as FLAT_CASES


@pytest.mark.parametrize("pads,tc", WORD_CASES, ids=[f"{p}-tc{tc}" for p, tc in WORD_CASES])
@pytest.mark.parametrize("W", [12])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_contiguous_word_path(backend, device, pads, tc, W, dtype, monkeypatch):
    """16-bit contiguous x with even W and even output rows: the word kernel on triton (32-bit
    words; an odd left pad makes every output word a funnel shift of two source words), for odd
    and even left pads, crops, time padding and 0, 1 or 2 cache frames; an odd output row (pads
    row (an odd sum of the W pads) leaves it to the flat kernel. On triton the word kernel also
    runs at other rows per program: with ``span`` (the rule: programs take rows across frame
    boundaries, each row's frame and source per row) at 1 row, and in frame tiles (``span`` off)
    of 4 rows."""
    torch.manual_seed(W + (tc or 0))
    padding = WORD_PADS[pads]
    x, cache = _flat_inputs(W, tc, dtype, device)
    out = lay.causal_conv3d_cat_pad(x, cache, padding, backend=backend)
    assert torch.equal(out, ref(x, cache, padding)) and out.is_contiguous()
    if backend == "triton":
        geom = describe(OP, x, cache, padding).info["geom"]
        launch = chosen(geom, x, cache)[0]
        even_row = (W + padding[0] + padding[1]) % 2 == 0
        assert launch.kernel is (K._cat_pad_words_kernel if even_row else K._cat_pad_flat_kernel)
        if even_row:
            assert launch.constexprs["SPAN"]
            _word_variants(monkeypatch, geom, x, cache, padding, ((True, 1), (False, 4)))


def _word_variants(monkeypatch, geom, x, cache, padding, variants):
    """The word kernel at other rows per program, with ``span`` on or off: ``torch.equal`` to eager."""
    for span, rows in variants:
        monkeypatch.setitem(K._WORDS_RULE, "span", span)
        monkeypatch.setitem(K._WORDS_RULE, "rows", rows)
        launch = chosen(geom, x, cache)[0]
        assert (launch.constexprs["SPAN"], launch.constexprs["ROWS"]) == (span, rows)
        assert torch.equal(K.prepare(geom, x, cache)(x, cache, padding), ref(x, cache, padding)), (span, rows)


@pytest.mark.parametrize("H", [1, 2])
@pytest.mark.parametrize("pads", ["wan", "crop-even", "right2"])
def test_word_path_programs_across_many_frames(device, H, pads, monkeypatch):
    """The Triton backend's word kernel on frames of 1-5 output rows (``crop-even`` crops H to
    itself and a frame in time) at 8 and 2 rows per program, and in frame tiles of 8 rows: a program
    takes rows of three or more frames, from the cache, x and the time padding."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the Triton backend cannot run here")
    padding = WORD_PADS[pads]
    x, cache = _flat_inputs(12, 2, torch.bfloat16, device, H=H, T=3)
    geom = describe(OP, x, cache, padding).info["geom"]
    _word_variants(monkeypatch, geom, x, cache, padding, ((True, 8), (True, 2), (False, 8)))


def test_word_path_unaligned_falls_back(backend, device):
    """The word kernel reads and writes 4-byte words: x or a cache starting at an odd element
    (2-byte aligned) is served by the element kernel of the same plan, and the result is still
    exact."""
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    padding = FLAT_PADS["wan"]
    x, cache = _flat_inputs(12, 2, torch.bfloat16, device)
    geom = describe(OP, x, cache, padding).info["geom"]
    preferred, element = chosen(geom, x, cache)
    assert preferred.kernel is K._cat_pad_words_kernel
    assert element.kernel is K._cat_pad_flat_kernel
    runner = K.prepare(geom, x, cache)
    odd = torch.empty(cache.numel() + 1, dtype=cache.dtype, device=device)[1:].view(cache.shape)
    odd.copy_(cache)
    assert odd.data_ptr() % 4 == 2 and odd.stride() == cache.stride()
    for c in (cache, odd):
        testing.assert_exact(runner(x, c, padding), ref(x, c, padding))
        testing.assert_exact(lay.causal_conv3d_cat_pad(x, c, padding, backend=backend), ref(x, c, padding))
