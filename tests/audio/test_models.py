"""Models: Wav2Letter's state_dict layout against torchaudio 2.8's (fixtures/models.npz) and its
outputs against the same network in PyTorch 2.13.0 on the same weights; M5 and KWSNet shapes and
a learning check; CTC decoders against hand-derived and brute-force results."""

import itertools
import math
import os

import numpy as np
import pytest
import torch

import ember
from ember_audio.models import M5, KWSNet, Wav2Letter
from ember_audio.models.decoder import CTCHypothesis, GreedyCTCDecoder, ctc_decoder

FIX = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "models.npz"))


@pytest.mark.parametrize("name,kw", [("wav2letter_waveform", {}),
                                     ("wav2letter_mfcc", dict(num_classes=29, input_type="mfcc", num_features=13))])
def test_wav2letter_state_dict_matches_torchaudio(name, kw):
    sd = Wav2Letter(**kw).state_dict()
    assert list(sd) == list(FIX[f"{name}_keys"])
    assert [",".join(map(str, v.shape)) for v in sd.values()] == list(FIX[f"{name}_shapes"])


def _torch_wav2letter(sd, num_features, num_classes):
    """The same stack in plain torch.nn (mfcc input), loaded with ember's weights."""
    layers = []
    specs = [(num_features, 250, 48, 2, 23)] + [(250, 250, 7, 1, 3)] * 7 + [(250, 2000, 32, 1, 16),
                                                                          (2000, 2000, 1, 1, 0),
                                                                          (2000, num_classes, 1, 1, 0)]
    for cin, cout, k, s, p in specs:
        layers += [torch.nn.Conv1d(cin, cout, k, s, p), torch.nn.ReLU()]
    m = torch.nn.Module()
    m.acoustic_model = torch.nn.Sequential(*layers)
    m.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
    return m


def test_wav2letter_forward_matches_torch():
    ember.manual_seed(0)
    model = Wav2Letter(num_classes=29, input_type="mfcc", num_features=13).eval()
    x = ember.randn(2, 13, 40)
    ref_model = _torch_wav2letter(model.state_dict(), 13, 29)
    with torch.no_grad():
        ref = torch.log_softmax(ref_model.acoustic_model(torch.from_numpy(x.numpy().copy())), 1).numpy()
    with ember.no_grad():
        got = model(x).numpy()
    assert got.shape == ref.shape == (2, 29, 21)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="input_type"):
        Wav2Letter(input_type="spectrogram")


def test_m5_and_kwsnet_shapes_and_learning():
    ember.manual_seed(0)
    m5 = M5(n_input=1, n_output=10)
    out = m5(ember.randn(3, 1, 8000))
    assert tuple(out.shape) == (3, 1, 10)
    np.testing.assert_allclose(out.exp().sum(-1).detach().numpy(), 1.0, rtol=1e-5)
    net = KWSNet(n_classes=4)
    assert tuple(net(ember.randn(2, 1, 13, 50)).shape) == (2, 4)
    # a few steps of Adam must fit 8 fixed random examples (the loss falls by half)
    x, y = ember.randn(8, 1, 13, 20), ember.tensor([0, 1, 2, 3, 0, 1, 2, 3])
    opt = ember.optim.Adam(net.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        loss = ember.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def _log_probs(rng, T, N):
    p = rng.dirichlet(np.ones(N), size=T)
    return np.log(p)


def _brute_force(logp, blank):
    """log P(labels) for every label sequence, summing over all T^N alignments."""
    T, N = logp.shape
    totals = {}
    for path in itertools.product(range(N), repeat=T):
        labels = tuple(k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k))
        lp = sum(logp[t, k] for t, k in enumerate(path))
        totals[labels] = np.logaddexp(totals.get(labels, -np.inf), lp)
    return totals


@pytest.mark.parametrize("seed", range(4))
def test_beam_search_finds_the_most_probable_labelling(seed):
    rng = np.random.default_rng(seed)
    logp = _log_probs(rng, 6, 3)
    totals = _brute_force(logp, blank=0)
    best = sorted(totals.items(), key=lambda kv: -kv[1])[:3]
    decoder = ctc_decoder(None, ["-", "a", "b"], nbest=3, beam_size=1000)
    hyps = decoder(ember.tensor(logp[None], dtype=ember.float32))[0]
    assert all(isinstance(h, CTCHypothesis) for h in hyps) and hyps[0].words == []
    assert [tuple(h.tokens.tolist()) for h in hyps] == [labels for labels, _ in best]
    np.testing.assert_allclose([h.score for h in hyps], [s for _, s in best], rtol=1e-5)
    assert decoder.idxs_to_tokens(hyps[0].tokens) == ["-ab"[i] for i in best[0][0]]


def test_greedy_decoder_by_hand_and_lengths():
    #            t0   t1   t2   t3   t4   t5   (argmax: a a - a b b -> "a a b")
    best = [1, 1, 0, 1, 2, 2]
    logp = np.full((1, 6, 3), math.log(0.1))
    for t, k in enumerate(best):
        logp[0, t, k] = math.log(0.8)
    hyp = GreedyCTCDecoder(blank=0)(ember.tensor(logp))[0][0]
    assert hyp.tokens.tolist() == [1, 1, 2] and hyp.timesteps.tolist() == [0, 3, 4]
    assert abs(hyp.score - 6 * math.log(0.8)) < 1e-5
    short = GreedyCTCDecoder()(ember.tensor(logp), lengths=ember.tensor([3]))[0][0]
    assert short.tokens.tolist() == [1]
    with pytest.raises(ValueError, match="lexicon-free"):
        ctc_decoder("lexicon.txt", ["-", "a"])


def test_conv_tasnet_matches_torchaudio_on_its_weights():
    from ember_audio.models import ConvTasNet
    net = ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32, msk_num_feats=16, msk_num_hidden_feats=32,
                     msk_num_layers=3, msk_num_stacks=2).eval()
    state = {k[len("tasnet."):]: ember.from_numpy(FIX[k].copy()) for k in FIX.files if k.startswith("tasnet.")}
    assert sorted(state) == sorted(net.state_dict())
    net.load_state_dict(state)
    with ember.no_grad():
        out = net(ember.from_numpy(FIX["tasnet_input"].copy())).numpy()
    assert out.shape == (2, 2, 803)
    np.testing.assert_allclose(out, FIX["tasnet_output"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="channel==1"):
        net(ember.zeros(2, 803))
