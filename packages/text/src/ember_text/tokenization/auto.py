"""AutoTokenizer: a tokenizer from a local Hugging Face folder (transformers.AutoTokenizer.from_pretrained).

What the folder may hold, in the order they are tried: ``tokenizer.json`` (any model the
``tokenizers`` library describes); a BERT ``vocab.txt`` alone (WordPiece, built as
transformers' ``BertTokenizerFast`` builds it); GPT-2's ``vocab.json`` + ``merges.txt``
(byte-level BPE). ``tokenizer_config.json`` and ``special_tokens_map.json`` supply special
tokens, ``model_max_length``, the padding side and the chat template. Only local folders are
read: nothing is downloaded, and no code from the folder is run.
"""

from __future__ import annotations

import os

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from .fast import TOKENIZER_FILE, PreTrainedTokenizerFast, load_tokenizer_config

# transformers' per-class defaults (the classes' own attributes), keyed by tokenizer_class without "Fast"
_WITH_TOKEN_TYPES = {"model_input_names": ["input_ids", "token_type_ids", "attention_mask"]}
_CLASS_DEFAULTS = {
    "BertTokenizer": _WITH_TOKEN_TYPES,
    "ElectraTokenizer": _WITH_TOKEN_TYPES,
    "AlbertTokenizer": _WITH_TOKEN_TYPES,
    "GPT2Tokenizer": {"model_input_names": ["input_ids", "attention_mask"]},
    "LlamaTokenizer": {"model_input_names": ["input_ids", "attention_mask"], "padding_side": "left"},
    "CodeLlamaTokenizer": {"model_input_names": ["input_ids", "attention_mask"], "padding_side": "left"},
    "Qwen2Tokenizer": {"model_input_names": ["input_ids", "attention_mask"]},
}
_BERT_SPECIALS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"}


def _bert_from_vocab(path: str, config: dict) -> Tokenizer:
    """A WordPiece engine over ``vocab.txt`` with BERT's normalizer, pre-tokenizer and [CLS]/[SEP] template."""
    vocab = {}
    with open(path, encoding="utf-8") as f:
        for index, line in enumerate(f):
            token = line.rstrip("\n")
            vocab.setdefault(token, index)
    unk, sep, cls = (config.get(k) or _BERT_SPECIALS[k] for k in ("unk_token", "sep_token", "cls_token"))
    for name, token in (("unk_token", unk), ("sep_token", sep), ("cls_token", cls)):
        if token not in vocab:
            raise ValueError(f"{path}: the {name} {token!r} is not in the vocabulary")
    tok = Tokenizer(models.WordPiece(vocab, unk_token=unk, max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=config.get("tokenize_chinese_chars", True),
        strip_accents=config.get("strip_accents"), lowercase=config.get("do_lower_case", True))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def _gpt2_from_files(vocab: str, merges: str, config: dict) -> Tokenizer:
    """A byte-level BPE engine over GPT-2's ``vocab.json`` and ``merges.txt``."""
    add_prefix_space = config.get("add_prefix_space", False)
    tok = Tokenizer(models.BPE.from_file(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


class AutoTokenizer:
    """Loads the tokenizer a local folder describes. Not instantiable: use ``from_pretrained``."""

    def __init__(self):
        raise OSError("AutoTokenizer is designed to be instantiated using the "
                      "`AutoTokenizer.from_pretrained(pretrained_model_name_or_path)` method.")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *inputs, _cls=None, **kwargs) -> PreTrainedTokenizerFast:
        """The tokenizer saved in the folder ``pretrained_model_name_or_path``.

        Keyword arguments override the folder's config (``padding_side="left"``,
        ``pad_token="<pad>"``, ``model_max_length=...``). Hub-only arguments (``revision``,
        ``cache_dir``, ``use_fast``, ``trust_remote_code``) are accepted and ignored: the folder is
        local and no code is run.

        Raises:
            OSError: the folder does not exist, or holds none of the files listed in the module doc.
            ValueError: a config file is not valid JSON.
        """
        folder = os.fspath(pretrained_model_name_or_path)
        for ignored in ("revision", "cache_dir", "use_fast", "trust_remote_code", "local_files_only", "token",
                        "force_download", "subfolder"):
            kwargs.pop(ignored, None)
        if not os.path.isdir(folder):
            raise OSError(f"Can't load tokenizer for {folder!r}: no such folder (ember_text reads local folders only; "
                          f"download the model first, e.g. with huggingface_hub.snapshot_download)")
        config = load_tokenizer_config(folder)
        tokenizer_class = config.get("tokenizer_class") or ""
        base_class = tokenizer_class[:-4] if tokenizer_class.endswith("Fast") else tokenizer_class
        init = {**_CLASS_DEFAULTS.get(base_class, {}), **config, **kwargs}
        json_path = os.path.join(folder, TOKENIZER_FILE)
        vocab_txt = os.path.join(folder, "vocab.txt")
        vocab_json, merges = os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt")
        if os.path.isfile(json_path):
            backend = Tokenizer.from_file(json_path)
        elif os.path.isfile(vocab_txt):
            init = {**_CLASS_DEFAULTS["BertTokenizer"], **init}
            for key, value in _BERT_SPECIALS.items():
                init.setdefault(key, value)
            backend = _bert_from_vocab(vocab_txt, init)
        elif os.path.isfile(vocab_json) and os.path.isfile(merges):
            backend = _gpt2_from_files(vocab_json, merges, init)
        else:
            raise OSError(f"Can't load tokenizer for {folder!r}: expected {TOKENIZER_FILE}, vocab.txt (BERT) or "
                          f"vocab.json + merges.txt (GPT-2) in the folder, found {sorted(os.listdir(folder))}")
        init.setdefault("name_or_path", folder)
        tok = (_cls or PreTrainedTokenizerFast)(tokenizer_object=backend, **init)
        tok._tokenizer_class = tokenizer_class or None
        return tok
