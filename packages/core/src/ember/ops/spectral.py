"""The short-time Fourier transform and its inverse (torch.stft, torch.istft).

Built from differentiable ember ops (padding by gathered indices, ``unfold`` into frames,
the window, ``fft.rfft``; and for the inverse ``fft.irfft``, the window and an
overlap-add by ``index_add``), so gradients flow through both.  Layouts as torch's: the
spectrum is ``[*, n_fft // 2 + 1, n_frames]`` (``[*, n_fft, n_frames]`` two-sided).
"""

from __future__ import annotations

from .._autocast import autocast_op
from . import fft as _fft
from .layout import _pad_last_dims

__all__ = ["stft", "istft"]


def _window(window, win_length, n_fft, like):
    """The window padded with zeros on both sides to n_fft, centred (ones when None)."""
    from .creation import ones
    from .shape import cat
    w = window if window is not None else ones(win_length, dtype=like.dtype.to_real())
    if w.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(w.shape)}")
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        from .creation import zeros
        w = cat([zeros(left, dtype=w.dtype), w, zeros(n_fft - win_length - left, dtype=w.dtype)])
    return w


@autocast_op("fp32")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The spectrogram of a signal ``[*, T]`` (at most one batch dim, as torch):
    ``[*, n_fft // 2 + 1, n_frames]`` complex (two-sided ``n_fft`` rows for complex input
    or ``onesided=False``).  ``return_complex`` must be given for real input and be True
    (torch's deprecation of the real output).

    ``input`` is the signal; frames of ``n_fft`` samples start every ``hop_length`` samples
    (``n_fft // 4`` by default) and are multiplied by ``window`` (a 1-d tensor of
    ``win_length`` samples, ``n_fft`` by default, zero-padded on both sides to ``n_fft``;
    ones when None). With ``center`` the signal is padded by ``n_fft // 2`` on both sides
    (``pad_mode`` as in ``F.pad``: 'reflect' by default) so that frame t is centred on
    sample ``t * hop_length``. ``normalized`` scales the spectrum by ``n_fft ** -0.5``. A
    signal of other than 1 or 2 dims, an ``n_fft`` out of range, ``return_complex=False`` or
    a window of the wrong size raise RuntimeError."""
    if return_complex is None and not input.dtype.is_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if return_complex is False:
        raise RuntimeError("stft: return_complex=False is not supported: view_as_real(stft(..., "
                           "return_complex=True)) gives the real layout")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop = hop_length if hop_length is not None else n_fft // 4
    win = win_length if win_length is not None else n_fft
    if not 0 < n_fft <= (input.shape[-1] + (2 * (n_fft // 2) if center else 0)):
        raise RuntimeError(f"stft: expected 0 < n_fft < {input.shape[-1]}, but got n_fft={n_fft}")
    x = _pad_last_dims(input, (n_fft // 2, n_fft // 2), pad_mode) if center else input
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, input)  # [*, n_frames, n_fft]
    one = (not input.dtype.is_complex) if onesided is None else onesided
    spec = _fft.rfft(frames, dim=-1) if one else _fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (n_fft ** -0.5)
    return spec.transpose(-2, -1)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose stft is ``input`` (``[*, freq, n_frames]`` complex): inverse
    transforms of the frames, windowed, overlap-added and divided by the summed squared
    window (RuntimeError where that envelope vanishes, as torch).

    ``n_fft``, ``hop_length``, ``win_length``, ``window``, ``center`` and ``normalized`` are
    the ones the stft was made with; ``onesided`` says whether ``input`` holds only the
    non-negative frequencies (by default, when its frequency dim is not ``n_fft``).
    ``length`` trims or zero-pads the signal to that many samples. With ``return_complex``
    the frames' complex inverse is kept (else its real part). A real ``input`` raises
    RuntimeError."""
    from .creation import arange, zeros
    from .indexing import index_add
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor")
    hop = hop_length if hop_length is not None else n_fft // 4
    win = win_length if win_length is not None else n_fft
    real_dtype = input.dtype.to_real()
    w = _window(window, win, n_fft, input).to(real_dtype)
    spec = input.transpose(-2, -1)  # [*, n_frames, freq]
    if normalized:
        spec = spec * (n_fft ** 0.5)
    one = (input.shape[-2] != n_fft) if onesided is None else onesided
    frames = _fft.irfft(spec, n=n_fft, dim=-1) if one else _fft.ifft(spec, n=n_fft, dim=-1)
    if not return_complex and frames.dtype.is_complex:
        frames = frames.real
    frames = frames * w
    n_frames = frames.shape[-2]
    total = n_fft + hop * (n_frames - 1)
    positions = (arange(n_frames).reshape(-1, 1) * hop + arange(n_fft).reshape(1, -1)).reshape(-1)
    lead = tuple(frames.shape[:-2])
    signal = index_add(zeros(lead + (total,), dtype=frames.dtype), len(lead), positions,
                       frames.reshape(lead + (n_frames * n_fft,)))
    envelope = index_add(zeros((total,), dtype=real_dtype), 0, positions, (w * w).repeat(n_frames))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    envelope = envelope[start:min(end, total)]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 0 (the window's envelope vanishes; check the window "
                           "and hop_length)")
    out = signal[..., start:min(end, total)] / envelope
    if length is not None and out.shape[-1] < length:
        from .shape import cat
        out = cat([out, zeros(lead + (length - out.shape[-1],), dtype=out.dtype)], -1)
    return out
