"""Errors shared by every sgl-diffusion package."""

from __future__ import annotations


class UnsupportedInputError(ValueError):
    """No backend of an op can serve these inputs (or the requested backend cannot).

    The message lists every backend's reasons. ``reasons`` holds them as data:
    ``{backend: [reason, ...]}``.
    """

    def __init__(self, message: str, reasons: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.reasons: dict[str, list[str]] = dict(reasons or {})


class IndexOutOfRangeError(UnsupportedInputError, IndexError):
    """An index value outside the range its op accepts (an ``UnsupportedInputError``, so a
    ``ValueError``, and an ``IndexError``); raised by :func:`check_index_range`."""


class UnknownOpError(KeyError, ValueError):
    """An op name no installed package registers, or a short name several ops share (a
    ``KeyError`` and a ``ValueError``). The message says which, and lists the close matches."""

    def __str__(self) -> str:  # the message as written, not KeyError's repr of it
        return str(self.args[0]) if self.args else ""


class MissingPackageError(ImportError):
    """A name was touched whose distribution (or optional backend) is not installed."""

    def __init__(self, what: str, distribution: str, *, extra: str | None = None):
        target = f"{distribution}[{extra}]" if extra else distribution
        super().__init__(
            f"{what} needs the distribution {target!r}, which is not installed. "
            f"Install it with: pip install {target}",
            name=distribution,
        )
        self.distribution = distribution


class BackendRejectedWarning(UserWarning):
    """A measured backend selection ruled a backend out for one input bucket: it raised, or its
    result was outside its declared tolerance of the reference. Warned once per (op, bucket,
    backend); that backend is not chosen again for the bucket."""
