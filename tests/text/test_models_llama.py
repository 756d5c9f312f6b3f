"""Llama against transformers: small random configs (GQA, each RoPE type, tied and untied heads) built here with
transformers and saved as Hugging Face folders; logits, greedy continuations and the cache compared live."""

import os

import numpy as np
import pytest
import torch
import transformers

import ember
from ember_text import models as M

VOCAB = 100
ROPES = {
    "default": None,
    "llama3": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 16, "rope_theta": 500000.0},
    "linear": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "rope_theta": 10000.0},
    "yarn_mscale": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16, "rope_theta": 10000.0,
                    "mscale": 0.7, "mscale_all_dim": 1.0, "beta_fast": 16, "beta_slow": 2, "truncate": False},
}


def _e(t):
    return ember.tensor(t.numpy())


def _np(t):
    return t.detach().float().numpy()


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def _build(folder, rope, tie):
    torch.manual_seed(0)
    kwargs = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=tie, initializer_range=0.2,
                  pad_token_id=None, bos_token_id=None, eos_token_id=None)
    if rope is not None:
        kwargs["rope_parameters"] = rope
    ref = transformers.LlamaForCausalLM(transformers.LlamaConfig(**kwargs)).eval()
    ref.save_pretrained(folder)
    return ref


@pytest.mark.parametrize("tie", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("rope", list(ROPES))
def test_llama_logits_match(tmp_path, rope, tie):
    ref = _build(tmp_path, ROPES[rope], tie)
    model = M.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert isinstance(model, M.LlamaForCausalLM)
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == tie
    assert list(model.state_dict()) == list(ref.state_dict())
    ids = torch.randint(0, VOCAB, (2, 40), generator=torch.Generator().manual_seed(1))  # past the llama3 context
    with torch.no_grad():
        r = ref(ids, labels=ids, output_hidden_states=True)
    out = model(_e(ids), labels=_e(ids), output_hidden_states=True)
    assert _rel(_np(out.logits), r.logits.numpy()) < 1e-4
    assert abs(float(out.loss) - float(r.loss)) < 1e-4 * float(r.loss)
    assert _rel(_np(out.hidden_states[-1]), r.hidden_states[-1].numpy()) < 1e-4


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama")
    ref = _build(folder, ROPES["llama3"], False)
    return M.LlamaForCausalLM.from_pretrained(folder), ref, os.fspath(folder)


def test_llama_greedy_with_and_without_cache(llama):
    model, ref, _ = llama
    prompt = torch.randint(1, VOCAB, (1, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expect = ref.generate(prompt, max_new_tokens=20, do_sample=False, pad_token_id=0).tolist()
    assert model.generate(_e(prompt), max_new_tokens=20, pad_token_id=0).tolist() == expect
    assert model.generate(_e(prompt), max_new_tokens=20, pad_token_id=0, use_cache=False).tolist() == expect


def test_llama_batched_left_padding(llama):
    model, ref, _ = llama
    ids = torch.randint(1, VOCAB, (2, 9), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0
    ids = ids.masked_fill(mask == 0, 0)
    with torch.no_grad():
        expect = ref.generate(ids, attention_mask=mask, max_new_tokens=20, do_sample=False, pad_token_id=0)
    got = model.generate(_e(ids), attention_mask=_e(mask), max_new_tokens=20, pad_token_id=0)
    assert got.tolist() == expect.tolist()


def test_llama_cache_shape_is_grouped(llama):
    model, _, _ = llama
    cache = M.DynamicCache()
    model(ember.tensor([[1, 2, 3, 4, 5]]), past_key_values=cache)
    assert len(cache) == 2 and tuple(cache[0][0].shape) == (1, 2, 5, 8)  # 2 kv heads of 4 query heads


def test_unsupported_rope_type(tmp_path, llama):
    _, _, folder = llama
    with pytest.raises(ValueError, match="rope_type 'longrope' is not supported; supported: default, linear, "
                                         "llama3, dynamic, yarn"):
        M.LlamaForCausalLM.from_pretrained(folder, rope_parameters={"rope_type": "longrope", "factor": 2.0,
                                                                    "rope_theta": 1e4})


def test_dynamic_rope_grows_and_returns_as_transformers(tmp_path):
    """Dynamic NTK RoPE: a sequence past max_position_embeddings (64) enlarges the base, a
    short one afterwards returns to the original frequencies; logits equal at each call."""
    ref = _build(tmp_path, {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}, False)
    model = M.AutoModelForCausalLM.from_pretrained(tmp_path)
    for length, seed in ((20, 1), (90, 2), (120, 3), (30, 4)):
        ids = torch.randint(0, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            expected = ref(ids).logits.numpy()
        assert _rel(_np(model(_e(ids)).logits), expected) < 1e-4, length


def test_bfloat16_checkpoint_loads(tmp_path):
    """A bfloat16 safetensors file (what most Llama checkpoints are) loads: dtype="auto" keeps bfloat16."""
    ref = _build(tmp_path, None, False).to(torch.bfloat16)
    ref.save_pretrained(tmp_path)
    auto = M.LlamaForCausalLM.from_pretrained(tmp_path, dtype="auto")
    assert auto.dtype == ember.bfloat16
    model = M.LlamaForCausalLM.from_pretrained(tmp_path)  # float32 by default: the bfloat16 values, widened
    ids = torch.randint(0, VOCAB, (1, 12), generator=torch.Generator().manual_seed(4))
    # the reference: transformers reading the same bfloat16 file into float32 (its RoPE frequencies fresh, as ours)
    widened = transformers.LlamaForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    with torch.no_grad():
        expect = widened(ids).logits.numpy()
    assert _rel(_np(model(_e(ids)).logits), expect) < 1e-4
