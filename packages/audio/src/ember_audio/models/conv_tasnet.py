"""Conv-TasNet (Luo & Mesgarani, "Conv-TasNet: Surpassing Ideal Time-Frequency Magnitude
Masking for Speech Separation", 2019), with torchaudio 2.8's layout and state_dict keys:
a learned encoder, a temporal-convolution mask generator (stacks of dilated depthwise conv
blocks with residual and skip paths) and a transposed-conv decoder."""

from __future__ import annotations

import ember
from ember import nn

__all__ = ["ConvTasNet", "conv_tasnet_base"]


class ConvBlock(nn.Module):
    """1x1 conv, PReLU, global layer norm, dilated depthwise conv, PReLU, norm; then residual and
    skip 1x1 convs (no residual in the very last block)."""

    def __init__(self, io_channels, hidden_channels, kernel_size, padding, dilation=1, no_residual=False):
        super().__init__()
        self.conv_layers = nn.Sequential(
            nn.Conv1d(io_channels, hidden_channels, kernel_size=1), nn.PReLU(),
            nn.GroupNorm(num_groups=1, num_channels=hidden_channels, eps=1e-08),
            nn.Conv1d(hidden_channels, hidden_channels, kernel_size=kernel_size, padding=padding, dilation=dilation,
                      groups=hidden_channels),
            nn.PReLU(), nn.GroupNorm(num_groups=1, num_channels=hidden_channels, eps=1e-08))
        self.res_out = None if no_residual else nn.Conv1d(hidden_channels, io_channels, kernel_size=1)
        self.skip_out = nn.Conv1d(hidden_channels, io_channels, kernel_size=1)

    def forward(self, x):
        feature = self.conv_layers(x)
        residual = None if self.res_out is None else self.res_out(feature)
        return residual, self.skip_out(feature)


class MaskGenerator(nn.Module):
    """Encoder features ``[batch, input_dim, frames]`` -> masks ``[batch, num_sources, input_dim, frames]``."""

    def __init__(self, input_dim, num_sources, kernel_size, num_feats, num_hidden, num_layers, num_stacks,
                 msk_activate):
        super().__init__()
        self.input_dim = input_dim
        self.num_sources = num_sources
        self.input_norm = nn.GroupNorm(num_groups=1, num_channels=input_dim, eps=1e-08)
        self.input_conv = nn.Conv1d(input_dim, num_feats, kernel_size=1)
        self.receptive_field = 0
        self.conv_layers = nn.ModuleList([])
        for s in range(num_stacks):
            for layer in range(num_layers):
                multi = 2 ** layer
                last = layer == num_layers - 1 and s == num_stacks - 1
                self.conv_layers.append(ConvBlock(num_feats, num_hidden, kernel_size, padding=multi, dilation=multi,
                                                  no_residual=last))
                self.receptive_field += kernel_size if s == 0 and layer == 0 else (kernel_size - 1) * multi
        self.output_prelu = nn.PReLU()
        self.output_conv = nn.Conv1d(num_feats, input_dim * num_sources, kernel_size=1)
        if msk_activate == "sigmoid":
            self.mask_activate = nn.Sigmoid()
        elif msk_activate == "relu":
            self.mask_activate = nn.ReLU()
        else:
            raise ValueError(f"Unsupported activation {msk_activate!r} (expected 'sigmoid' or 'relu')")

    def forward(self, x):
        batch = x.shape[0]
        feats = self.input_conv(self.input_norm(x))
        output = 0.0
        for layer in self.conv_layers:
            residual, skip = layer(feats)
            if residual is not None:
                feats = feats + residual
            output = output + skip
        output = self.mask_activate(self.output_conv(self.output_prelu(output)))
        return output.view(batch, self.num_sources, self.input_dim, -1)


class ConvTasNet(nn.Module):
    """Mixture ``[batch, 1, time]`` -> separated sources ``[batch, num_sources, time]``.
    Raises ValueError for another input shape.  Defaults are the paper's (torchaudio's);
    a small configuration (e.g. ``enc_num_feats=64, msk_num_feats=32, msk_num_hidden_feats=64,
    msk_num_layers=4, msk_num_stacks=2``) trains on a CPU.  Source: Luo & Mesgarani, 2019,
    "Conv-TasNet", arXiv:1809.07454; torchaudio 2.8 ``models.ConvTasNet``.

    Args:
        num_sources: sources to separate.
        enc_kernel_size: encoder/decoder kernel, in samples (stride half of it).
        enc_num_feats: encoder channels.
        msk_kernel_size: kernel of the mask generator's convolution blocks.
        msk_num_feats: bottleneck channels of the mask generator.
        msk_num_hidden_feats: hidden channels of each convolution block.
        msk_num_layers: blocks per stack (dilations 1, 2, ..., 2 ** (layers - 1)).
        msk_num_stacks: stacks of blocks.
        msk_activate: the mask nonlinearity, "sigmoid" or "relu" (ValueError otherwise).
    """

    def __init__(self, num_sources=2, enc_kernel_size=16, enc_num_feats=512, msk_kernel_size=3, msk_num_feats=128,
                 msk_num_hidden_feats=512, msk_num_layers=8, msk_num_stacks=3, msk_activate="sigmoid"):
        super().__init__()
        self.num_sources = num_sources
        self.enc_num_feats = enc_num_feats
        self.enc_kernel_size = enc_kernel_size
        self.enc_stride = enc_kernel_size // 2
        self.encoder = nn.Conv1d(1, enc_num_feats, kernel_size=enc_kernel_size, stride=self.enc_stride,
                                 padding=self.enc_stride, bias=False)
        self.mask_generator = MaskGenerator(enc_num_feats, num_sources, msk_kernel_size, msk_num_feats,
                                            msk_num_hidden_feats, msk_num_layers, msk_num_stacks, msk_activate)
        self.decoder = nn.ConvTranspose1d(enc_num_feats, 1, kernel_size=enc_kernel_size, stride=self.enc_stride,
                                          padding=self.enc_stride, bias=False)

    def _align_num_frames_with_strides(self, x):
        batch, channels, frames = x.shape
        is_odd = self.enc_kernel_size % 2
        strides = (frames - is_odd) // self.enc_stride
        remaining = frames - (is_odd + strides * self.enc_stride)
        if remaining == 0:
            return x, 0
        pads = self.enc_stride - remaining
        return ember.cat([x, ember.zeros(batch, channels, pads, dtype=x.dtype, device=x.device)], 2), pads

    def forward(self, x):
        if x.ndim != 3 or x.shape[1] != 1:
            raise ValueError(f"Expected 3D tensor (batch, channel==1, frames). Found: {list(x.shape)}")
        padded, pads = self._align_num_frames_with_strides(x)
        batch, frames = padded.shape[0], padded.shape[2]
        feats = self.encoder(padded)
        masked = self.mask_generator(feats) * feats.unsqueeze(1)
        masked = masked.view(batch * self.num_sources, self.enc_num_feats, -1)
        out = self.decoder(masked).view(batch, self.num_sources, frames)
        return out[..., :-pads] if pads > 0 else out


def conv_tasnet_base(num_sources=2):
    """The paper's best configuration (ReLU masks) for ``num_sources`` sources, as torchaudio's
    ``conv_tasnet_base``."""
    return ConvTasNet(num_sources=num_sources, enc_kernel_size=16, enc_num_feats=512, msk_kernel_size=3,
                      msk_num_feats=128, msk_num_hidden_feats=512, msk_num_layers=8, msk_num_stacks=3,
                      msk_activate="relu")
