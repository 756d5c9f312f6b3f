"""Chat templates, save_pretrained and the trainers, against transformers reading the same files."""

import json
import os

import jinja2
import numpy as np
import pytest
import transformers
from conftest import CHATML, CORPUS

import ember_text

CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there ünïcode "},
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Say more."}]
TOOLS_TEMPLATE = ("{% if tools %}{{ tools | tojson }}\n{% endif %}{% for m in messages %}{{ m.role }}: "
                  "{{ m.content }}{% if not loop.last %}\n{% endif %}{% endfor %}{{ eos_token }}")


def _both(folder):
    return ember_text.AutoTokenizer.from_pretrained(folder), transformers.AutoTokenizer.from_pretrained(folder)


@pytest.mark.parametrize("kwargs", [{"add_generation_prompt": True}, {}, {"continue_final_message": True}])
def test_chat_template_matches_transformers(bpe_folder, kwargs):
    ours, ref = _both(bpe_folder)
    text = ours.apply_chat_template(CHAT, tokenize=False, **kwargs)
    assert text == ref.apply_chat_template(CHAT, tokenize=False, **kwargs)
    assert ours.apply_chat_template(CHAT, **kwargs).data == ref.apply_chat_template(CHAT, **kwargs).data
    assert ours.apply_chat_template(CHAT, return_dict=False, **kwargs) == \
        ref.apply_chat_template(CHAT, return_dict=False, **kwargs)
    batch = [CHAT, CHAT[:2]]
    a = ours.apply_chat_template(batch, padding=True, return_tensors="np", **kwargs)
    b = ref.apply_chat_template(batch, padding=True, return_tensors="np", **kwargs)
    assert (a["input_ids"] == b["input_ids"]).all() and (a["attention_mask"] == b["attention_mask"]).all()


def test_chat_template_by_hand(bpe_folder):
    """The ChatML rendering written out by hand, so the check does not rest on transformers alone."""
    ours = ember_text.AutoTokenizer.from_pretrained(bpe_folder)
    text = ours.apply_chat_template(CHAT[:2], tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi there ünïcode<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = ours.apply_chat_template(CHAT[:2], add_generation_prompt=True, return_dict=False)
    assert ids[0] == ours.convert_tokens_to_ids("<|im_start|>") and ours.decode(ids) == text


def test_chat_template_tools_and_variables(bpe_folder):
    ours, ref = _both(bpe_folder)
    tools = [{"type": "function", "function": {"name": "f", "description": "é <b>", "parameters": {}}}]
    kwargs = {"chat_template": TOOLS_TEMPLATE, "tools": tools, "tokenize": False}
    assert ours.apply_chat_template(CHAT, **kwargs) == ref.apply_chat_template(CHAT, **kwargs)
    assert '"é <b>"' in ours.apply_chat_template(CHAT, **kwargs)  # tojson keeps unicode and HTML as is


def test_chat_template_errors_and_sandbox(bpe_folder):
    ours = ember_text.AutoTokenizer.from_pretrained(bpe_folder)
    with pytest.raises(jinja2.TemplateError, match="unknown role"):
        ours.apply_chat_template([{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError, match="not compatible"):
        ours.apply_chat_template(CHAT, add_generation_prompt=True, continue_final_message=True)
    with pytest.raises(ValueError, match="empty conversation"):
        ours.apply_chat_template([])
    with pytest.raises(jinja2.exceptions.SecurityError):
        ours.apply_chat_template(CHAT, chat_template="{{ messages.append(1) }}")
    with pytest.raises(jinja2.exceptions.SecurityError):
        ours.apply_chat_template(CHAT, chat_template="{{ ''.__class__.__mro__[1].__subclasses__() }}")
    ours.chat_template = None
    with pytest.raises(ValueError, match="chat_template is not set"):
        ours.apply_chat_template(CHAT)


def test_save_pretrained_round_trip(tmp_path, bpe_folder, minilm):
    for folder in (bpe_folder, minilm):
        tok = ember_text.AutoTokenizer.from_pretrained(folder)
        tok(CORPUS[:3], padding="max_length", max_length=40, truncation=True)  # per-call settings are not saved
        out = tmp_path / os.path.basename(folder)
        paths = tok.save_pretrained(out)
        assert sorted(os.path.basename(p) for p in paths) == ["special_tokens_map.json", "tokenizer.json",
                                                            "tokenizer_config.json"]
        assert not [p for p in os.listdir(out) if p.endswith(".tmp")]
        saved = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
        with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
            source = json.load(f)
        for key in ("model", "normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
            assert saved[key] == source[key], key
        # the engine's own truncation/padding are saved as loaded, not as the last call set them
        assert (saved["truncation"] or {}).get("max_length") == (source["truncation"] or {}).get("max_length")
        ours, ref = _both(out)
        original = transformers.AutoTokenizer.from_pretrained(folder)
        for t in (ours, ref):
            assert t(CORPUS[:8], padding=True).data == original(CORPUS[:8], padding=True).data
            assert t.special_tokens_map == original.special_tokens_map
            assert t.model_max_length == original.model_max_length
            assert t.chat_template == original.chat_template


def _train(fn, **kwargs):
    return fn(iterator=CORPUS, **kwargs)


@pytest.mark.parametrize("name", ["bpe", "byte_level_bpe", "wordpiece", "unigram"])
def test_trainers_save_reload_and_agree_with_transformers(tmp_path, name):
    fn = getattr(ember_text, "train_" + name)
    tok = _train(fn, vocab_size=300)
    assert 30 < len(tok) <= 300
    tok.save_pretrained(tmp_path)
    ours, ref = _both(tmp_path)
    assert ours(CORPUS[:8]).data == tok(CORPUS[:8]).data == ref(CORPUS[:8]).data
    for row in tok(CORPUS[:8])["input_ids"]:
        assert ours.decode(row, skip_special_tokens=True) == ref.decode(row, skip_special_tokens=True)
    # the same text from a file trains the same vocabulary, up to the tokenizers library's tie-breaking between
    # equally frequent merges (its hash-map order differs from run to run): for wordpiece, 15 trainings in one
    # process differed from the iterator's vocabulary by 9-20% of it, and one CI run by 22%
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    from_file = fn(files=str(path), vocab_size=300)
    a, b = set(from_file.get_vocab()), set(tok.get_vocab())
    assert len(a ^ b) <= 0.3 * len(a)  # (the file reader also sees the line ends)
    assert from_file.tokenize("the") == tok.tokenize("the")


def test_trainer_properties():
    bbpe = _train(ember_text.train_byte_level_bpe, vocab_size=400, special_tokens=["<|endoftext|>", "<pad>"],
                  pad_token="<pad>")
    assert bbpe.convert_tokens_to_ids(["<|endoftext|>", "<pad>"]) == [0, 1]
    assert bbpe.eos_token == bbpe.bos_token == "<|endoftext|>" and bbpe.pad_token_id == 1
    for text in ["never seen: Ω≈ç√∫ 🙂", *CORPUS[:8]]:
        assert bbpe.decode(bbpe(text)["input_ids"]) == text  # byte-level: every string round-trips
    wp = _train(ember_text.train_wordpiece, vocab_size=200)
    assert wp.convert_tokens_to_ids(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) == [0, 1, 2, 3, 4]
    enc = wp("quick fox", "lazy dog")
    assert enc["input_ids"][0] == wp.cls_token_id and enc["input_ids"].count(wp.sep_token_id) == 2
    assert set(enc["token_type_ids"]) == {0, 1}
    assert wp.tokenize("Ω")[0] == "[UNK]"
    assert any(t.startswith("##") for t in wp.get_vocab())
    bpe = _train(ember_text.train_bpe, vocab_size=200)
    assert bpe.tokenize("Ω") == ["<unk>"]
    pieces = bpe.tokenize("the dog")
    assert sum(t.endswith("</w>") for t in pieces) == 2 and pieces[-1].endswith("</w>")  # one word end per word
    assert bpe.decode(bpe("the dog")["input_ids"]) == "the dog"
    uni = _train(ember_text.train_unigram, vocab_size=150)
    assert uni.unk_token_id == 0 and uni.decode(uni("the lazy dog")["input_ids"]) == "the lazy dog"


def test_trainer_errors(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        ember_text.train_bpe()
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        ember_text.train_bpe(files=str(tmp_path / "missing.txt"))
    with pytest.raises(TypeError, match="single string"):
        ember_text.train_bpe(iterator="a string")
    with pytest.raises(TypeError, match="sparkle"):
        ember_text.train_bpe(iterator=CORPUS, sparkle=1)


def test_chatml_constant_is_used(bpe_folder):
    assert ember_text.AutoTokenizer.from_pretrained(bpe_folder).chat_template == CHATML


GENERATION_TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|>\n{% if m.role == 'assistant' %}{% generation %}"
                       "{{ m.content }}<|end|>{% endgeneration %}{% else %}{{ m.content }}<|end|>{% endif %}\n"
                       "{% endfor %}")


def test_assistant_tokens_mask_matches_transformers(bpe_folder):
    ours, ref = _both(bpe_folder)
    chat = CHAT + [{"role": "assistant", "content": "Much more, at length."}]
    for kwargs in ({"truncation": True, "max_length": 20}, {"return_tensors": "np"}, {}):
        a = ours.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                     **kwargs)
        b = ref.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                    **kwargs)
        for key in ("input_ids", "assistant_masks"):
            assert np.asarray(a[key]).tolist() == np.asarray(b[key]).tolist(), (key, kwargs)
    assert 0 < sum(a["assistant_masks"]) < len(a["assistant_masks"])
    batch = [chat, chat[:3]]
    a = ours.apply_chat_template(batch, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                 padding=True)
    b = ref.apply_chat_template(batch, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                padding=True)
    assert a["assistant_masks"] == b["assistant_masks"]
    # the tag renders as its body when no mask is asked for
    assert ours.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, tokenize=False) == \
        ref.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, tokenize=False)
    for bad in ({"tokenize": False}, {"return_dict": False}, {"continue_final_message": True}):
        with pytest.raises(ValueError):
            ours.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                     **bad)
        with pytest.raises(ValueError):
            ref.apply_chat_template(chat, chat_template=GENERATION_TEMPLATE, return_assistant_tokens_mask=True,
                                    **bad)
