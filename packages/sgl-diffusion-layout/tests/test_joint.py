"""joint_qkv_cat / joint_split are torch.equal to torch.cat / slicing on every backend.

Shapes: S_img=6, S_txt=3 (and S_txt=0, S_img=0 edge cases), H=3, Dh=40 (masked tail);
image tensors as views of a fused QKV projection, text tensors contiguous (two parts with
different strides). Launch choices of the Triton backend (test_*_launch_choices): the rows
kernel flat (contiguous rows) and by rows (fused-projection views; Dh=64 gives 16-element
units where bf16 needs none smaller), its fallback to the permutation copy (Dh=40: bf16
rows of 120 elements have no 32-byte unit), explicit tiles that leave a partial last tile,
and the permutation copy asked for by its config.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, describe, testing

OP = "layout.joint_qkv_cat"
K = testing.backend_module(OP, "triton")  # the launch rules and kernels


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


def inputs(B, Si, St, H, Dh, device, dtype=torch.bfloat16):
    proj = rnd(B, Si, 3, H, Dh, dtype=dtype, device=device)
    img = tuple(proj[:, :, j] for j in range(3))
    txt = tuple(rnd(B, St, H, Dh, dtype=dtype, device=device) for _ in range(3))
    return img, txt


@pytest.mark.parametrize("text_first", [True, False])
@pytest.mark.parametrize("Si,St", [(6, 3), (5, 0), (0, 4)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_cat_matches_torch_cat(backend, device, text_first, Si, St, dtype):
    torch.manual_seed(Si + St)
    img, txt = inputs(2, Si, St, 3, 40, device, dtype)
    out = lay.joint_qkv_cat(*img, *txt, text_first=text_first, backend=backend)
    assert out.shape == (3, 2, Si + St, 3, 40) and out.is_contiguous()
    for j in range(3):
        want = torch.cat([txt[j], img[j]] if text_first else [img[j], txt[j]], dim=1)
        testing.assert_exact(out[j], want)
    testing.assert_exact(out, lay.joint_qkv_cat_reference(*img, *txt, text_first=text_first))


@pytest.mark.parametrize("text_first", [True, False])
@pytest.mark.parametrize("copy", [False, True])
def test_split(backend, device, text_first, copy):
    out = rnd(2, 9, 3, 40, device=device)[:, :, :, :40]
    txt, img = lay.joint_split(out, 3, 6, text_first=text_first, copy=copy, backend=backend)
    rt, ri = (out[:, :3], out[:, 3:]) if text_first else (out[:, 6:], out[:, :6])
    testing.assert_exact(txt, rt)
    testing.assert_exact(img, ri)
    if copy:
        assert txt.is_contiguous() and img.is_contiguous()
        assert txt.data_ptr() != out.data_ptr()
    else:
        assert txt.untyped_storage().data_ptr() == out.untyped_storage().data_ptr()  # views


def test_split_copy_strided(backend, device):
    out = rnd(2, 3, 9, 40, device=device).transpose(1, 2)  # [B, S, H, Dh] with strided S
    txt, img = lay.joint_split(out, 4, 5, copy=True, backend=backend)
    testing.assert_exact(txt, out[:, :4].contiguous())
    testing.assert_exact(img, out[:, 4:].contiguous())


def test_bad_inputs(backend, device):
    img, txt = inputs(1, 4, 2, 2, 8, device)
    with pytest.raises(UnsupportedInputError, match="txt_k has shape"):
        lay.joint_qkv_cat(*img, txt[0], txt[1][:, :1], txt[2], backend=backend)
    with pytest.raises(UnsupportedInputError, match="expected s_txt \\+ s_img = 5"):
        lay.joint_split(rnd(1, 6, 2, 8, device=device), 2, 3, backend=backend)
    assert not lay.can_use_joint_qkv_cat(*img, *txt[:2], txt[2].float(), backend=backend)


def test_compile_fullgraph(backend, device):
    img, txt = inputs(1, 4, 2, 2, 16, device)

    def f(*ts):
        out = lay.joint_qkv_cat(*ts, backend=backend)
        return lay.joint_split(out[0], 2, 4, copy=True, backend=backend)

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(*img, *txt)
    for g, w in zip(got, f(*img, *txt)):
        testing.assert_exact(g, w)


def _launch_configs():
    rows, copy = K.RowsConfig, K.CopyConfig
    return [None, rows(br=4, bk=32, num_warps=2), rows(br=2, bk=64, num_warps=1), copy(bm=4, bn=64, num_warps=2)]


def cat(*args, geom, config):
    """The Triton backend's ``joint_qkv_cat`` with a launch of the test's choice."""
    return K.prepare_joint_qkv_cat(geom, *args[:6], config=config)(*args)


def split(*args, geom, config):
    """The Triton backend's ``joint_split`` with a launch of the test's choice."""
    return K.prepare_joint_split(geom, args[0], config=config)(*args)


@pytest.mark.parametrize("H,Dh", [(3, 40), (6, 64), (1, 16)])
@pytest.mark.parametrize("img_view,txt_view", [(False, False), (True, False), (True, True)])
def test_cat_launch_choices(backend, device, H, Dh, img_view, txt_view):
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    torch.manual_seed(H * Dh)
    B, Si, St = 2, 11, 5

    def make(S, view):
        if view:
            proj = rnd(B, S, 3, H, Dh, device=device)
            return tuple(proj[:, :, j] for j in range(3))
        return tuple(rnd(B, S, H, Dh, device=device) for _ in range(3))

    img, txt = make(Si, img_view), make(St, txt_view)
    for text_first in (True, False):
        args = (*img, *txt, text_first)
        geom = describe(OP, *args).info["geom"]
        want = lay.joint_qkv_cat_reference(*img, *txt, text_first=text_first)
        for cfg in _launch_configs():
            try:
                got = cat(*args, geom=geom, config=cfg)
            except ValueError:  # a rows tile that cannot serve these strides says so
                assert cfg is not None and hasattr(cfg, "bk") and (img_view or txt_view)
                continue
            testing.assert_exact(got, want)


@pytest.mark.parametrize("H,Dh", [(3, 40), (6, 64)])
@pytest.mark.parametrize("view", [False, True])
def test_split_launch_choices(backend, device, H, Dh, view):
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    torch.manual_seed(Dh)
    out = rnd(2, 13, 2, H, Dh, device=device)[:, :, 1] if view else rnd(2, 13, H, Dh, device=device)
    for text_first in (True, False):
        args = (out, 4, 9, text_first, True)
        geom = describe("layout.joint_split", *args).info["geom"]
        want = lay.joint_split_reference(out, 4, 9, text_first=text_first, copy=True)
        for cfg in _launch_configs():
            try:
                got = split(*args, geom=geom, config=cfg)
            except ValueError:
                assert cfg is not None and hasattr(cfg, "bk") and view
                continue
            for g, w in zip(got, want):
                testing.assert_exact(g, w)
                assert g.is_contiguous()


@pytest.mark.parametrize("B", [1, 2])
def test_device_copy_launch(backend, device, B):
    """The per-part device copies (``config="device_copy"``; the default from
    ``DEVICE_COPY_MIN_BYTES`` on): exact, ``B == 1`` contiguous parts only, a clear error otherwise."""
    if backend != "triton":
        pytest.skip("launch choices of the Triton backend")
    torch.manual_seed(B)
    H, Dh, Si, St = 3, 40, 11, 5
    img = tuple(rnd(B, Si, H, Dh, device=device) for _ in range(3))
    txt = tuple(rnd(B, St, H, Dh, device=device) for _ in range(3))
    for text_first in (True, False):
        args = (*img, *txt, text_first)
        geom = describe(OP, *args).info["geom"]
        out = lay.joint_qkv_cat_reference(*img, *txt, text_first=text_first)
        sargs = (out[0].contiguous(), St, Si, text_first, True)
        sgeom = describe("layout.joint_split", *sargs).info["geom"]
        if B != 1:
            with pytest.raises(ValueError, match="B == 1"):
                cat(*args, geom=geom, config="device_copy")
            with pytest.raises(ValueError, match="B == 1"):
                split(*sargs, geom=sgeom, config="device_copy")
            continue
        testing.assert_exact(cat(*args, geom=geom, config="device_copy"), out)
        want = lay.joint_split_reference(*sargs[:3], text_first=text_first, copy=True)
        for g, w in zip(split(*sargs, geom=sgeom, config="device_copy"), want):
            testing.assert_exact(g, w)
            assert g.is_contiguous()
