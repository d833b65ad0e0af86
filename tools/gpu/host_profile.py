"""Where the host time of one eager ln_modulate call goes (GPU machine; prints us per component)."""

from __future__ import annotations

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import bench, resolve_target, tensor_sig

dev = torch.device("cuda")
dispatch = resolve_target("sgl_diffusion_norm.ln_modulate_api:_dispatch")
x = torch.randn(1, 16, 3072, device=dev, dtype=torch.bfloat16)
sc = torch.randn(1, 1, 3072, device=dev, dtype=torch.bfloat16)
sh = torch.randn(1, 1, 3072, device=dev, dtype=torch.bfloat16)
norm.ln_modulate(x, sc, sh, exact=False)
plan = dispatch.plan((x, sc, sh, None, None), "triton")  # the close kernel (the default is the gated exact one)
launch = plan.__closure__  # the prepared launch lives in the runner's closure
prepared = next(c.cell_contents for c in launch if type(c.cell_contents).__name__ == "PreparedLaunch")
out = torch.empty_like(x)
scal = (16, 3072, 0, 3072, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1)  # row_norm_triton: x, scale, shift, update, gate strides
args = (x, sc, sh, x, x, out, x, x, x, *scal, 1e-6, 1.0)
comp = {
    "public": lambda: norm.ln_modulate(x, sc, sh, exact=False),
    "plan_lookup": lambda: dispatch.plan((x, sc, sh, None, None), None, False),
    "key_only": lambda: (tensor_sig(x), tensor_sig(sc), tensor_sig(sh), tensor_sig(None), tensor_sig(None), None),
    "runner(plan)": lambda: plan(x, sc, sh, None, None, 1e-6, 1.0),
    "prepared_launch": lambda: prepared(*args),
    "direct_runner_tensors": lambda: prepared._runner(*args, *prepared._const_tail),
    "direct_runner_ints": lambda: prepared._runner(*[a.data_ptr() for a in args[:9]], *args[9:],
                                                   *prepared._const_tail),
    "jit_launch": lambda: prepared.kernel[prepared.grid](*args, **prepared.constexprs, **prepared.options),
    "torch_empty": lambda: torch.empty((1, 16, 3072), dtype=torch.bfloat16, device=dev),
    "data_ptr_x9": lambda: [a.data_ptr() & 15 for a in args[:9]],
}
print("direct runner present:", prepared._runner is not None)
for fn in comp.values():  # warm every path (and the CPU clock) before measuring
    for _ in range(2000):
        fn()
torch.cuda.synchronize()
for k, fn in comp.items():
    vals = sorted(bench.host_us_per_call(fn, dev, calls=1000) for _ in range(7))
    print(f"{k:>16}: {vals[3]:6.1f} us (min {vals[0]:.1f})", flush=True)
