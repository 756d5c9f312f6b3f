"""DecodeBatch (iteration-level batching) against transformers' generate: sequences of different
lengths joining a running batch at different steps and leaving when done each get the greedy
continuation transformers gives them alone (GPT-2 and Llama with grouped-query attention, small
random models built here with transformers); EOS, repetition penalty and seeded sampling
against ember-text's own generate; the cache shrinking as rows leave."""

import os

import pytest
import torch
import transformers

import ember
from ember_text import models as M

VOCAB = 100


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def pair(request, tmp_path_factory):
    torch.manual_seed(0)
    if request.param == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=32, n_positions=64, vocab_size=VOCAB,
                                      bos_token_id=None, eos_token_id=None, initializer_range=0.3)
        ref = transformers.GPT2LMHeadModel(cfg).eval()
    else:
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                       initializer_range=0.2, pad_token_id=None, bos_token_id=None,
                                       eos_token_id=None)
        ref = transformers.LlamaForCausalLM(cfg).eval()
    folder = tmp_path_factory.mktemp(request.param)
    ref.save_pretrained(folder)
    return ref, M.AutoModelForCausalLM.from_pretrained(os.fspath(folder))


def prompts(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    lengths = [3, 9, 5, 12, 1, 7][:n]
    return [torch.randint(1, VOCAB, (k,), generator=g).tolist() for k in lengths]


def reference(ref, prompt, new):
    with torch.no_grad():
        out = ref.generate(torch.tensor([prompt]), max_new_tokens=new, do_sample=False, pad_token_id=0)
    return out[0, len(prompt):].tolist()


def test_joining_and_leaving_sequences_match_greedy_generate(pair):
    ref, model = pair
    ps = prompts(6)
    news = [14, 6, 10, 4, 9, 12]
    batch = M.DecodeBatch(model)
    seqs = [batch.add(ps[0], max_new_tokens=news[0]), batch.add(ps[1], max_new_tokens=news[1])]
    widths = []
    for step in range(40):
        if step in (2, 3, 5):  # the others join while the first ones are running
            i = len(seqs)
            seqs.append(batch.add(ps[i], max_new_tokens=news[i]))
            if step == 5:
                seqs.append(batch.add(ps[i + 1], max_new_tokens=news[i + 1]))
        stepped = batch.step()
        widths.append(len(stepped))
        if not len(batch) and len(seqs) == 6:
            break
    assert max(widths) >= 4  # they shared steps
    for p, n, s in zip(ps, news, seqs):
        assert s.finished and s.finish_reason == "length"
        assert s.tokens == reference(ref, p, n)
        assert s.ids == p + s.tokens
    assert len(batch) == 0 and batch.cache_length == 0


def test_cache_shrinks_to_the_longest_remaining_row(pair):
    _, model = pair
    short, long_ = prompts(2, seed=4)
    batch = M.DecodeBatch(model)
    a = batch.add(long_ + long_, max_new_tokens=3)
    b = batch.add(short, max_new_tokens=8)
    batch.step()
    assert batch.cache_length == len(long_) * 2 + 1 and batch.sequences == [a, b]
    batch.step()
    assert a.finished and not b.finished and batch.sequences == [b]
    # b's own positions only: its prompt and the tokens fed so far (the last one is fed at the next step)
    assert batch.cache_length == len(b.prompt) + len(b.tokens) - 1


def test_eos_and_repetition_penalty_match_ember_generate(pair):
    _, model = pair
    ps = prompts(3, seed=7)
    alone = model.generate(ember.tensor([ps[0]]), max_new_tokens=10)[0, len(ps[0]):].tolist()
    eos = next(t for j, t in enumerate(alone) if j >= 2 and t not in alone[:j])
    batch = M.DecodeBatch(model)
    s0 = batch.add(ps[0], max_new_tokens=10, eos_token_id=[eos])
    s1 = batch.add(ps[1], max_new_tokens=8, repetition_penalty=1.5)
    s2 = batch.add(ps[2], max_new_tokens=8)
    while len(batch):
        batch.step()
    assert s0.finish_reason == "stop" and s0.tokens == alone[:alone.index(eos) + 1]
    want1 = model.generate(ember.tensor([ps[1]]), max_new_tokens=8, repetition_penalty=1.5)[0, len(ps[1]):]
    assert s1.tokens == want1.tolist()
    assert s2.tokens == model.generate(ember.tensor([ps[2]]), max_new_tokens=8)[0, len(ps[2]):].tolist()


def test_seeded_sampling_alone_matches_generate(pair):
    _, model = pair
    p = prompts(1, seed=9)[0]
    g1, g2 = ember.Generator(), ember.Generator()
    g1.manual_seed(5)
    g2.manual_seed(5)
    want = model.generate(ember.tensor([p]), max_new_tokens=12, do_sample=True, temperature=0.7, top_k=20, top_p=0.9,
                          generator=g1)[0, len(p):].tolist()
    batch = M.DecodeBatch(model)
    s = batch.add(ember.tensor([p]), max_new_tokens=12, do_sample=True, temperature=0.7, top_k=20, top_p=0.9,
                  generator=g2)
    while len(batch):
        batch.step()
    assert s.tokens == want


def test_cancel_zero_tokens_and_errors(pair):
    _, model = pair
    a, b = prompts(2, seed=11)
    batch = M.DecodeBatch(model)
    sa = batch.add(a, max_new_tokens=6)
    sb = batch.add(b, max_new_tokens=6)
    batch.step()
    batch.cancel(sa)
    assert sa.finish_reason == "cancelled" and batch.sequences == [sb]
    while len(batch):
        batch.step()
    assert sb.tokens == model.generate(ember.tensor([b]), max_new_tokens=6)[0, len(b):].tolist()
    z = batch.add(a, max_new_tokens=0)
    assert z.finished and z.tokens == [] and len(batch) == 0
    with pytest.raises(ValueError, match="at least one token"):
        batch.add([])
    with pytest.raises(ValueError, match="strictly positive"):
        batch.add(a, do_sample=True, temperature=0)
    if isinstance(model, M.GPT2LMHeadModel):
        with pytest.raises(ValueError, match="n_positions"):
            batch.add(a, max_new_tokens=64)
