"""The small models against the same architectures written in PyTorch here, with torch's weights copied in."""

import math

import numpy as np
import pytest
import torch
from torch import nn as tnn

import ember
from ember_text import models as M


def _copy(model, ref):
    """Load ``ref``'s weights into the ember model: the state_dict keys must be identical."""
    state = ref.state_dict()
    assert list(model.state_dict()) == list(state)
    model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in state.items()})
    model.eval()
    ref.eval()


class TorchLSTMLM(tnn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, tie):
        super().__init__()
        self.drop = tnn.Dropout(0.2)
        self.encoder = tnn.Embedding(ntoken, ninp)
        self.rnn = tnn.LSTM(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = tnn.Linear(nhid, ntoken)
        if tie:
            self.decoder.weight = self.encoder.weight

    def forward(self, x, hidden=None):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.decoder(self.drop(out)), hidden


@pytest.mark.parametrize("tie", [False, True])
def test_lstm_lm_matches_torch(tie):
    torch.manual_seed(0)
    ref = TorchLSTMLM(50, 16, 16, 2, tie)
    model = M.LSTMLanguageModel(50, 16, 16, 2, dropout=0.2, tie_weights=tie)
    _copy(model, ref)
    x = torch.randint(0, 50, (7, 3))
    with torch.no_grad():
        r, (h, c) = ref(x)
    out, (eh, ec) = model(ember.tensor(x.numpy()))
    np.testing.assert_allclose(out.detach().numpy(), r.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(eh.detach().numpy(), h.numpy(), rtol=1e-4, atol=1e-5)
    assert (model.decoder.weight is model.encoder.weight) == tie
    with pytest.raises(ValueError, match="nhid must be equal"):
        M.LSTMLanguageModel(50, 16, 32, tie_weights=True)


class TorchTextCNN(tnn.Module):
    def __init__(self, vocab, classes, embed, ks, nf):
        super().__init__()
        self.embedding = tnn.Embedding(vocab, embed, padding_idx=0)
        self.convs = tnn.ModuleList([tnn.Conv1d(embed, nf, k) for k in ks])
        self.dropout = tnn.Dropout(0.5)
        self.fc = tnn.Linear(nf * len(ks), classes)

    def forward(self, x):
        e = self.embedding(x).transpose(1, 2)
        return self.fc(self.dropout(torch.cat([torch.relu(c(e)).amax(2) for c in self.convs], 1)))


def test_textcnn_matches_torch():
    torch.manual_seed(1)
    ref = TorchTextCNN(40, 3, 12, (2, 3, 4), 5)
    model = M.TextCNN(40, 3, embed_dim=12, kernel_sizes=(2, 3, 4), num_filters=5)
    _copy(model, ref)
    x = torch.randint(0, 40, (4, 9))
    with torch.no_grad():
        r = ref(x)
    np.testing.assert_allclose(model(ember.tensor(x.numpy())).detach().numpy(), r.numpy(), rtol=1e-4, atol=1e-5)
    short = torch.tensor([[5, 6]])  # shorter than the widest kernel: padded with 0
    with torch.no_grad():
        r = ref(torch.tensor([[5, 6, 0, 0]]))
    np.testing.assert_allclose(model(ember.tensor(short.numpy())).detach().numpy(), r.numpy(), rtol=1e-4, atol=1e-5)


class TorchTransformerClassifier(tnn.Module):
    def __init__(self, vocab, classes, d, heads, layers, ff, max_len=64):
        super().__init__()
        self.embedding = tnn.Embedding(vocab, d, padding_idx=0)
        pos = torch.arange(max_len).float()[:, None]
        div = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe, persistent=False)
        layer = tnn.TransformerEncoderLayer(d, heads, ff, 0.1, batch_first=True)
        self.encoder = tnn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.fc = tnn.Linear(d, classes)
        self.d = d

    def forward(self, x, mask):
        h = self.embedding(x) * math.sqrt(self.d) + self.pe[: x.shape[1]]
        h = self.encoder(h, src_key_padding_mask=mask == 0)
        m = mask[..., None].float()
        return self.fc((h * m).sum(1) / m.sum(1).clamp(min=1.0))


def test_transformer_classifier_matches_torch():
    torch.manual_seed(2)
    ref = TorchTransformerClassifier(30, 4, 16, 2, 2, 32)
    model = M.TransformerClassifier(30, 4, d_model=16, nhead=2, num_layers=2, dim_feedforward=32, max_len=64)
    _copy(model, ref)
    x = torch.randint(1, 30, (3, 10))
    mask = torch.ones_like(x)
    mask[1, 6:] = 0
    x = x.masked_fill(mask == 0, 0)
    with torch.no_grad():
        r = ref(x, mask)
    got = model(ember.tensor(x.numpy()), ember.tensor(mask.numpy())).detach().numpy()
    np.testing.assert_allclose(got, r.numpy(), rtol=1e-4, atol=1e-5)


def test_small_models_train():
    """A few optimizer steps lower the loss of each model on a fixed batch (the gradients flow)."""
    ember.manual_seed(0)
    x = ember.randint(1, 20, (8, 6))
    y = ember.randint(0, 2, (8,))
    for model in (M.TextCNN(20, 2, embed_dim=8, num_filters=4, dropout=0.0),
                  M.TransformerClassifier(20, 2, d_model=8, nhead=2, num_layers=1, dim_feedforward=16, dropout=0.0)):
        opt = ember.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for _ in range(15):
            loss = ember.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        assert losses[-1] < 0.7 * losses[0]
