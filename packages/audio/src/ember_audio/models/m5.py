"""Raw-waveform and MFCC keyword-spotting classifiers.

M5: Dai et al., "Very Deep Convolutional Neural Networks for Raw Waveforms" (ICASSP 2017), in
the configuration of torchaudio's speech-command tutorial.  KWSNet: a small CNN over MFCCs in
the spirit of Sainath & Parada, "Convolutional Neural Networks for Small-footprint Keyword
Spotting" (Interspeech 2015) — an ember model (torchaudio has no such class).
"""

from __future__ import annotations

from ember import nn

__all__ = ["M5", "KWSNet"]


class M5(nn.Module):
    """``[batch, n_input, time]`` waveform -> log-probabilities ``[batch, 1, n_output]``: four
    Conv1d/BatchNorm/ReLU/MaxPool(4) blocks (the first with an 80-sample kernel at ``stride``),
    global average pooling, a linear layer and log_softmax (Dai et al., 2017, "Very deep
    convolutional neural networks for raw waveforms", arXiv:1610.00087; torchaudio's speech
    command tutorial model).  ``n_input``: input channels; ``n_output``: classes;
    ``n_channel``: channels of the first two blocks (twice that for the last two)."""

    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.pool4 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        F = nn.functional
        for i in range(1, 5):
            x = getattr(self, f"pool{i}")(F.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x))))
        x = F.avg_pool1d(x, x.shape[-1]).permute(0, 2, 1)
        return F.log_softmax(self.fc1(x), dim=2)


class KWSNet(nn.Module):
    """``[batch, 1, n_mfcc, frames]`` MFCCs -> logits ``[batch, n_classes]``: three
    Conv2d/BatchNorm/ReLU blocks (max-pooled by 2 after the first two), global average pooling,
    dropout and a linear layer.  Any number of frames is accepted (ember's own small keyword
    model).  ``n_classes``: outputs; ``channels``: output channels of each block; ``dropout``:
    probability before the classifier."""

    def __init__(self, n_classes=10, channels=(16, 32, 64), dropout=0.2):
        super().__init__()
        layers, cin = [], 1
        for i, c in enumerate(channels):
            layers += [nn.Conv2d(cin, c, kernel_size=3, padding=1), nn.BatchNorm2d(c), nn.ReLU(inplace=True)]
            if i < len(channels) - 1:
                layers.append(nn.MaxPool2d(2))
            cin = c
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(cin, n_classes)

    def forward(self, x):
        x = self.pool(self.features(x)).flatten(1)
        return self.classifier(self.dropout(x))
