"""Training tokenizers (BPE, byte-level BPE, WordPiece, Unigram) with the ``tokenizers`` library's trainers.

Each function builds the pipeline the field uses for that model (the ``tokenizers``
library's reference implementations: ``CharBPETokenizer``, ``ByteLevelBPETokenizer``,
``BertWordPieceTokenizer``, ``SentencePieceUnigramTokenizer``), trains it on text files or
on an iterator of strings, and returns a ``PreTrainedTokenizerFast``: ``save_pretrained``
writes it as ``tokenizer.json`` plus its configs, which ``AutoTokenizer.from_pretrained``
(ember's or transformers') reads back. Special tokens get the first ids, in the order given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from .fast import SPECIAL_TOKENS_ATTRIBUTES, PreTrainedTokenizerFast

__all__ = ["train_bpe", "train_byte_level_bpe", "train_wordpiece", "train_unigram"]


def _special_list(special_tokens, token_kwargs) -> list[str]:
    out = [str(t) for t in (special_tokens or [])]
    for attr in SPECIAL_TOKENS_ATTRIBUTES:
        token = token_kwargs.get(attr)
        if token is not None and token not in out:
            out.append(token)
    return out


def _check_kwargs(token_kwargs):
    unknown = set(token_kwargs) - set(SPECIAL_TOKENS_ATTRIBUTES) - {"model_max_length", "padding_side",
                                                                   "truncation_side", "chat_template",
                                                                   "additional_special_tokens"}
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {sorted(unknown)}; expected special-token attributes "
                        f"({', '.join(SPECIAL_TOKENS_ATTRIBUTES)}) or model_max_length/padding_side/chat_template")


def _train(tok: Tokenizer, trainer, files, iterator, length):
    if (files is None) == (iterator is None):
        raise ValueError("give exactly one of files= (a path or a list of paths) or iterator= (strings or batches of "
                         "strings)")
    if files is not None:
        paths = [os.fspath(files)] if isinstance(files, (str, os.PathLike)) else [os.fspath(f) for f in files]
        for path in paths:
            if not os.path.isfile(path):
                raise FileNotFoundError(f"training file {path!r} does not exist")
        tok.train(paths, trainer)
    else:
        if isinstance(iterator, str):
            raise TypeError("iterator= must yield strings (or lists of strings), got a single string; wrap it in a "
                            "list")
        tok.train_from_iterator(iterator, trainer, length=length)


def _wrap(tok: Tokenizer, token_kwargs) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=tok, **token_kwargs)


def train_bpe(files=None, *, iterator: Iterable | None = None, vocab_size: int = 30000, min_frequency: int = 2,
              special_tokens=("<unk>",), unk_token: str | None = "<unk>", lowercase: bool = False,
              suffix: str = "</w>", limit_alphabet: int = 1000, length: int | None = None,
              **token_kwargs) -> PreTrainedTokenizerFast:
    """A character-level BPE tokenizer (Sennrich et al., 2016: "Neural Machine Translation of Rare
    Words", arXiv:1508.07909; the ``tokenizers`` library's ``CharBPETokenizer`` pipeline).

    Words are split on whitespace and punctuation; ``suffix`` marks the end of a word, so decoding
    restores the spaces. Characters never seen in training map to ``unk_token``.

    Args:
        files: a text file path or a list of them (exclusive with ``iterator``).
        iterator: strings, or lists of strings, to train on.
        vocab_size: the size of the final vocabulary, special tokens included.
        min_frequency: the fewest occurrences a pair needs to be merged.
        special_tokens: tokens that get the first ids and are never split.
        unk_token: the token of unseen characters (None: they are dropped).
        lowercase: lowercase the text first (NFKC normalization is always applied).
        suffix: the end-of-word marker appended to each word's last symbol.
        limit_alphabet: the most distinct characters kept in the initial alphabet.
        length: the number of items ``iterator`` yields (for the trainer's progress; optional).
        token_kwargs: special-token attributes of the result (``pad_token="<pad>"``, ...), and
            ``model_max_length``/``padding_side``/``chat_template``.

    Raises:
        ValueError: neither or both of ``files`` and ``iterator``.
        FileNotFoundError: a missing file.
        TypeError: ``iterator`` is a single string, or an unknown keyword argument.
    """
    _check_kwargs(token_kwargs)
    token_kwargs.setdefault("unk_token", unk_token)
    tok = Tokenizer(models.BPE(unk_token=unk_token, end_of_word_suffix=suffix))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), *([normalizers.Lowercase()] if lowercase else [])])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix=suffix)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=_special_list(special_tokens, token_kwargs),
                                  limit_alphabet=limit_alphabet, end_of_word_suffix=suffix, show_progress=False)
    _train(tok, trainer, files, iterator, length)
    return _wrap(tok, token_kwargs)


def train_byte_level_bpe(files=None, *, iterator: Iterable | None = None, vocab_size: int = 30000,
                         min_frequency: int = 2, special_tokens=("<|endoftext|>",), add_prefix_space: bool = False,
                         length: int | None = None, **token_kwargs) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer, GPT-2's scheme (Radford et al., 2019; the ``tokenizers``
    library's ``ByteLevelBPETokenizer`` pipeline): any text encodes, nothing maps to unk.

    The 256 byte symbols are always in the vocabulary, so ``decode(encode(text)) == text`` for
    every string. When ``<|endoftext|>`` is among the special tokens, ``bos_token``,
    ``eos_token`` and ``unk_token`` default to it, as GPT-2's do.

    Args:
        files: a text file path or a list of them (exclusive with ``iterator``).
        iterator: strings, or lists of strings, to train on.
        vocab_size: the size of the final vocabulary, special tokens and bytes included.
        min_frequency: the fewest occurrences a pair needs to be merged.
        special_tokens: tokens that get the first ids and are never split.
        add_prefix_space: prepend a space, so the first word is encoded like the others.
        length: the number of items ``iterator`` yields (optional).
        token_kwargs: as :func:`train_bpe`.

    Raises the errors of :func:`train_bpe`.
    """
    _check_kwargs(token_kwargs)
    if "<|endoftext|>" in list(special_tokens):
        for attr in ("bos_token", "eos_token", "unk_token"):
            token_kwargs.setdefault(attr, "<|endoftext|>")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=_special_list(special_tokens, token_kwargs),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    _train(tok, trainer, files, iterator, length)
    return _wrap(tok, token_kwargs)


def train_wordpiece(files=None, *, iterator: Iterable | None = None, vocab_size: int = 30000, min_frequency: int = 2,
                    special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), lowercase: bool = True,
                    strip_accents: bool | None = None, wordpieces_prefix: str = "##", limit_alphabet: int = 1000,
                    length: int | None = None, **token_kwargs) -> PreTrainedTokenizerFast:
    """A BERT WordPiece tokenizer (Devlin et al., 2019, arXiv:1810.04805; the ``tokenizers``
    library's ``BertWordPieceTokenizer`` pipeline): BERT's normalizer, ``[CLS] A [SEP] B [SEP]``
    template.

    With the default special tokens, the result's ``pad_token``, ``unk_token``, ``cls_token``,
    ``sep_token`` and ``mask_token`` are set to them (BERT's names), and pairs get token type
    ids 0 and 1.

    Args:
        files: a text file path or a list of them (exclusive with ``iterator``).
        iterator: strings, or lists of strings, to train on.
        vocab_size: the size of the final vocabulary, special tokens included.
        min_frequency: the fewest occurrences a pair needs to be merged.
        special_tokens: tokens that get the first ids and are never split.
        lowercase: lowercase the text (BERT's uncased models).
        strip_accents: remove accents; None follows ``lowercase``.
        wordpieces_prefix: the marker of a word's continuing pieces.
        limit_alphabet: the most distinct characters kept in the initial alphabet.
        length: the number of items ``iterator`` yields (optional).
        token_kwargs: as :func:`train_bpe`.

    Raises the errors of :func:`train_bpe`.
    """
    _check_kwargs(token_kwargs)
    specials = list(special_tokens)
    for attr, token in (("pad_token", "[PAD]"), ("unk_token", "[UNK]"), ("cls_token", "[CLS]"),
                        ("sep_token", "[SEP]"), ("mask_token", "[MASK]")):
        if token in specials:
            token_kwargs.setdefault(attr, token)
    unk = token_kwargs.get("unk_token") or "[UNK]"
    tok = Tokenizer(models.WordPiece(unk_token=unk, continuing_subword_prefix=wordpieces_prefix))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=strip_accents, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix=wordpieces_prefix)
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=_special_list(specials, token_kwargs),
                                        limit_alphabet=limit_alphabet, continuing_subword_prefix=wordpieces_prefix,
                                        show_progress=False)
    _train(tok, trainer, files, iterator, length)
    token_kwargs.setdefault("model_input_names", ["input_ids", "token_type_ids", "attention_mask"])  # BERT's
    cls, sep = token_kwargs.get("cls_token"), token_kwargs.get("sep_token")
    if cls is not None and sep is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
            special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))])
    return _wrap(tok, token_kwargs)


def train_unigram(files=None, *, iterator: Iterable | None = None, vocab_size: int = 8000,
                  special_tokens=("<unk>",), unk_token: str = "<unk>", replacement: str = "\u2581",
                  shrinking_factor: float = 0.75, max_piece_length: int = 16, n_sub_iterations: int = 2,
                  length: int | None = None, **token_kwargs) -> PreTrainedTokenizerFast:
    """A Unigram language-model tokenizer, SentencePiece's default (Kudo, 2018: "Subword
    Regularization", arXiv:1804.10959; the ``tokenizers`` library's
    ``SentencePieceUnigramTokenizer`` pipeline).

    Spaces become ``replacement`` (the "▁" of SentencePiece) so decoding restores them; NFKC
    normalization.

    Args:
        files: a text file path or a list of them (exclusive with ``iterator``).
        iterator: strings, or lists of strings, to train on.
        vocab_size: the size of the final vocabulary, special tokens included.
        special_tokens: tokens that get the first ids and are never split.
        unk_token: the unknown token; appended to the special tokens when it is not among them.
        replacement: the symbol standing for a space.
        shrinking_factor: the fraction of the vocabulary kept at each pruning step.
        max_piece_length: the longest piece, in characters.
        n_sub_iterations: EM iterations between pruning steps.
        length: the number of items ``iterator`` yields (optional).
        token_kwargs: as :func:`train_bpe`.

    Raises the errors of :func:`train_bpe`.
    """
    _check_kwargs(token_kwargs)
    specials = _special_list(special_tokens, {**token_kwargs, "unk_token": unk_token})
    token_kwargs.setdefault("unk_token", unk_token)
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=replacement)
    tok.decoder = decoders.Metaspace(replacement=replacement)
    trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=specials, unk_token=unk_token,
                                      shrinking_factor=shrinking_factor, max_piece_length=max_piece_length,
                                      n_sub_iterations=n_sub_iterations, show_progress=False)
    _train(tok, trainer, files, iterator, length)
    return _wrap(tok, token_kwargs)
