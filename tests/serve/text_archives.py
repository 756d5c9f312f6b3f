"""Small random ember-text models saved with save_pretrained (config.json, tokenizer files,
model.safetensors) and packed with ``hf_folder``: what the text handler tests serve."""

from __future__ import annotations

import json
import os

from ember_serve import create_archive

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step!",
    "To be, or not to be: that is the question.",
    "Numbers like 3.14159 and 42 appear; so do emails like a@b.org?",
    "Don't stop believing, it's what we've learned.",
    "Serving models over sockets, one token at a time.",
] * 10

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] | trim + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
LABELS = {0: "negative", 1: "neutral", 2: "positive"}


def bpe_tokenizer(chat_template=None):
    import ember_text
    kwargs = {"chat_template": chat_template} if chat_template else {}
    return ember_text.train_byte_level_bpe(iterator=CORPUS, vocab_size=320, min_frequency=2,
                                           special_tokens=["<|endoftext|>", "<pad>", "<|im_start|>", "<|im_end|>"],
                                           pad_token="<pad>", model_max_length=96, **kwargs)


def wordpiece_tokenizer():
    import ember_text
    return ember_text.train_wordpiece(iterator=CORPUS, vocab_size=200, min_frequency=1, model_max_length=48)


def gpt2_folder(folder, chat_template=None, seed=0, eos_token_id=None):
    """A 2-layer GPT-2 (n_positions 96) and its byte-level BPE tokenizer; returns the folder."""
    import ember
    from ember_text import models as M
    tok = bpe_tokenizer(chat_template)
    ember.manual_seed(seed)
    eos = tok.convert_tokens_to_ids("<|endoftext|>") if eos_token_id is None else eos_token_id
    config = M.GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=96, vocab_size=len(tok), bos_token_id=eos,
                          eos_token_id=eos, initializer_range=0.3)
    model = M.GPT2LMHeadModel(config)
    # large weights keep a random model's logits apart (greedy choices are not near-ties) and its
    # continuations varied
    with ember.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("c_attn.weight", "c_fc.weight", "c_proj.weight")):
                p.normal_(0.0, 0.25)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return os.fspath(folder)


def bert_classifier_folder(folder, seed=1):
    import ember
    from ember_text import models as M
    tok = wordpiece_tokenizer()
    ember.manual_seed(seed)
    config = M.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=48, id2label=LABELS, initializer_range=0.2)
    M.BertForSequenceClassification(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return os.fspath(folder)


def sentence_folder(folder, seed=2):
    """A sentence-transformers folder: a small BERT, mean pooling, L2 normalization."""
    import ember
    from ember_text import models as M
    tok = wordpiece_tokenizer()
    ember.manual_seed(seed)
    config = M.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=48)
    M.BertModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    with open(os.path.join(folder, "modules.json"), "w") as f:
        json.dump(modules, f)
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}, f)
    with open(os.path.join(folder, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 40, "do_lower_case": False}, f)
    return os.fspath(folder)


def make_text_archives(root) -> dict:
    """{name: (archive path, Hugging Face folder)} for cls, emb, gen (ChatML template) and plain (none)."""
    root = os.fspath(root)
    out = {}
    specs = {
        "cls": ("text_classifier", bert_classifier_folder, {"max_batch_size": 8, "max_batch_delay_ms": 5,
                                                            "handler_config": {"topk": 2}}),
        "emb": ("sentence_embedder", sentence_folder, {"max_batch_size": 8, "max_batch_delay_ms": 5}),
        "gen": ("text_generation", lambda f: gpt2_folder(f, CHATML), {"max_batch_size": 8,
                                                                      "max_batch_delay_ms": 200}),
        "plain": ("text_generation", lambda f: gpt2_folder(f, seed=3), {"max_batch_size": 8}),
    }
    for name, (handler, build, config) in specs.items():
        folder = build(os.path.join(root, f"{name}-hf"))
        path = create_archive(os.path.join(root, f"{name}.emar"), name=name, version="1", handler=handler,
                              hf_folder=folder, config=config)
        out[name] = (path, folder)
    return out


def local_continuation(folder, ids: list[int], max_new_tokens: int, **generate_kwargs):
    """(text, new ids) of ember-text's own ``generate`` on the folder's model: the oracle of the server's answers."""
    import ember
    import ember_text
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    model = ember_text.models.AutoModelForCausalLM.from_pretrained(folder)
    out = model.generate(ember.tensor([ids], dtype=ember.int64), max_new_tokens=max_new_tokens,
                         **generate_kwargs)[0, len(ids):].tolist()
    return tok.decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False), out
