"""``FP8Linear``: the ``torch.nn.Module`` form of ``fp8_linear``, built from a bf16 ``nn.Linear`` once.

The weight is quantized per output channel (``quantize_fp8`` row-wise over ``[N, K]``) in the FP8
format the device computes in (``sgl_diffusion_core.device_fp8_dtype``); each call quantizes its
input per row (``quantize_fp8``; under ``torch.compile`` its torch definition, which inductor fuses),
or takes codes and row scales a fused op already wrote (a norm or activation with an FP8
``out_dtype``: :meth:`FP8Linear.forward_fp8`), and runs ``fp8_linear`` with the layer's bias and
epilogue. ``to_linear()`` gives back an ``nn.Linear`` whose weight is the dequantized FP8 weight;
exact reversal keeps the original module (as ``sgl_diffusion_sites`` does).
"""

from __future__ import annotations

import weakref

import torch

from sgl_diffusion_core import UnsupportedInputError, device_fp8_dtype, is_compiling, quantize_fp8_torch

from . import _specs as S

ALSO_EXPORTS = ("FP8Linear", "InputCodes")

EPILOGUES = (None, "gelu_tanh")


class InputCodes:
    """The codes and row scales of the last input quantized by the FP8 linears that share this object: the
    same tensor, unchanged since (its version counter), in the same format, is quantized once (the q / k / v
    projections of one attention read one normalized input). The input is held weakly: its codes go when
    it goes. Eager calls only (``torch.compile`` sees each quantization and may merge them itself)."""

    def __init__(self) -> None:
        self._ref: weakref.ref | None = None
        self._key: tuple = ()
        self._codes: tuple[torch.Tensor, torch.Tensor] | None = None
        self.hits = 0

    def get(self, x: torch.Tensor, dtype: torch.dtype, quantize) -> tuple[torch.Tensor, torch.Tensor]:
        key = (x._version, dtype)
        ref = self._ref
        if ref is not None and ref() is x and self._key == key and self._codes is not None:
            self.hits += 1
            return self._codes
        codes = quantize(x, dtype=dtype)
        self._ref, self._key, self._codes = weakref.ref(x, self._drop), key, codes
        return codes

    @property
    def held(self) -> bool:
        """Whether codes of a live input are held."""
        return self._codes is not None

    def _drop(self, ref: weakref.ref) -> None:
        if self._ref is ref:
            self._ref, self._codes = None, None


class FP8Linear(torch.nn.Module):
    """``epilogue(x @ W.T + b)`` with ``W`` in FP8 (one fp32 scale per output channel), ``x`` quantized
    per row at each call; the result in ``x``'s dtype (bf16 | fp16 | fp32).

    Buffers: ``weight_fp8`` ``[N, K]``, ``weight_scale`` ``[N, 1]`` fp32, ``bias`` ``[N]`` (or None).
    ``epilogue``: None or ``"gelu_tanh"`` (a GELU projection, as diffusers' ``GELU(approximate="tanh")``).
    ``accumulate``: ``fp8_linear``'s ``"fp32"`` (default) or ``"fast"`` (sm_90's FP8 tensor cores keep their
    own partial sum: faster, a sum error that grows with K; see ``fp8_linear``).
    ``shared_input``: an :class:`InputCodes` shared with the layers that read the same inputs, or None.
    """

    def __init__(self, weight_fp8: torch.Tensor, weight_scale: torch.Tensor, bias: torch.Tensor | None = None,
                 *, epilogue: str | None = None, accumulate: str = "fp32") -> None:
        super().__init__()
        if epilogue not in EPILOGUES:
            raise ValueError(f"epilogue is {epilogue!r}; expected None or 'gelu_tanh'")
        if accumulate not in S.ACCUMULATE:
            raise ValueError(f"accumulate is {accumulate!r}; expected 'fp32' or 'fast'")
        self.accumulate = accumulate
        if weight_fp8.dim() != 2 or tuple(weight_scale.shape) not in ((weight_fp8.shape[0], 1), (weight_fp8.shape[0],)):
            raise UnsupportedInputError(f"FP8Linear: weight_fp8 [N, K] with weight_scale [N, 1], got "
                                        f"{list(weight_fp8.shape)} and {list(weight_scale.shape)}")
        self.in_features, self.out_features = weight_fp8.shape[1], weight_fp8.shape[0]
        self.epilogue = epilogue
        self.register_buffer("weight_fp8", weight_fp8)
        self.register_buffer("weight_scale", weight_scale.reshape(-1, 1).float())
        self.register_buffer("bias", None if bias is None else bias.detach())
        self.shared_input: InputCodes | None = None  # set by whoever groups layers that read one input

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, *, dtype: torch.dtype | None = None,
                    epilogue: str | None = None, accumulate: str = "fp32") -> FP8Linear:
        """The FP8 twin of ``linear`` (its weight quantized per output channel, its bias kept as is);
        ``dtype``: the FP8 format, by default the one ``linear``'s device computes in. Raises
        ``UnsupportedInputError`` for a device without one."""
        from .quantize_fp8 import quantize_fp8

        w = linear.weight.detach()
        fmt = dtype or device_fp8_dtype(w.device)
        if fmt is None:
            raise UnsupportedInputError(f"FP8Linear: {w.device} computes in no FP8 format (NVIDIA sm_89+, AMD "
                                        "gfx942 / gfx950, or the CPU)")
        w_fp8, w_scale = quantize_fp8(w, dtype=fmt)
        return cls(w_fp8, w_scale, linear.bias, epilogue=epilogue, accumulate=accumulate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if is_compiling():
            # traced as quantize_fp8's torch definition: inductor generates the row reduction and the
            # conversion itself and merges the quantizations of one input (q / k / v), where the custom
            # op would cost a call per layer; its codes are within quantize_fp8's contract (one FP8 step)
            xq, xs = quantize_fp8_torch(x, self.weight_fp8.dtype)
            return self.forward_fp8(xq, xs, out_dtype=x.dtype)
        from .quantize_fp8 import quantize_fp8

        shared = self.shared_input
        if shared is not None:
            xq, xs = shared.get(x, self.weight_fp8.dtype, quantize_fp8)
        else:
            xq, xs = quantize_fp8(x, dtype=self.weight_fp8.dtype)
        return self.forward_fp8(xq, xs, out_dtype=x.dtype)

    def forward_fp8(self, x_fp8: torch.Tensor, x_scale: torch.Tensor, *, out_dtype: torch.dtype,
                    residual: torch.Tensor | None = None, gate: torch.Tensor | None = None) -> torch.Tensor:
        """The layer on codes and row scales a fused op wrote (``out_dtype`` of ``ln_modulate``,
        ``gelu_tanh_and_mul``, ...); ``residual`` and ``gate`` make it ``residual + gate * y`` (the gated
        residual epilogue; the layer's own epilogue must be None then)."""
        from .fp8_linear import fp8_linear

        epilogue = self.epilogue
        if residual is not None or gate is not None:
            if epilogue is not None:
                raise ValueError(f"FP8Linear with epilogue={epilogue!r} takes no residual / gate")
            epilogue = "gated_residual"
        return fp8_linear(x_fp8, x_scale, self.weight_fp8, self.weight_scale, self.bias, out_dtype=out_dtype,
                          epilogue=epilogue, residual=residual, gate=gate, accumulate=self.accumulate)

    def to_linear(self, dtype: torch.dtype = torch.bfloat16) -> torch.nn.Linear:
        """An ``nn.Linear`` with the dequantized weight ``weight_fp8 * weight_scale`` (the FP8 layer's
        own weight, not the original's)."""
        lin = torch.nn.Linear(self.in_features, self.out_features, bias=self.bias is not None,
                              device=self.weight_fp8.device, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(self.weight_fp8.float() * self.weight_scale)
            if self.bias is not None:
                lin.bias.copy_(self.bias)
        return lin

    def extra_repr(self) -> str:
        fmt = str(self.weight_fp8.dtype).removeprefix("torch.")
        return (f"in_features={self.in_features}, out_features={self.out_features}, weight={fmt} per channel, "
                f"bias={self.bias is not None}, epilogue={self.epilogue}, accumulate={self.accumulate}")
