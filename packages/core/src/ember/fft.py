"""ember.fft: torch.fft's discrete Fourier transforms, with gradients (the computations
live in ``ember.ops.fft``)."""

from .ops._dispatch import register_namespace as _register_namespace
from .ops.fft import (  # noqa: F401
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)
from .ops.hfft import hfft, hfft2, hfftn, ihfft, ihfft2, ihfftn  # noqa: F401

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


# the ops published here pass through the dispatch seam when a mode listens
_register_namespace(globals())
