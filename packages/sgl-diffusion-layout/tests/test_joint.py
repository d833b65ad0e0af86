"""joint_qkv_cat / joint_split are torch.equal to torch.cat / slicing on every backend.

Shapes: S_img=6, S_txt=3 (and S_txt=0, S_img=0 edge cases), H=3, Dh=40 (masked tail);
image tensors as views of a fused QKV projection, text tensors contiguous (two launches
with different strides).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "layout.joint_qkv_cat"


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
