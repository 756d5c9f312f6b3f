"""PreTrainedTokenizerFast: a ``tokenizers.Tokenizer`` with Hugging Face's calling conventions.

The tokenizer engine is the ``tokenizers`` library's; this class adds what transformers'
``PreTrainedTokenizerFast`` adds on top of it: special-token attributes read from
``tokenizer_config.json`` / ``special_tokens_map.json``, padding and truncation chosen per call,
``BatchEncoding`` outputs as lists, numpy arrays or ember tensors, decoding with the
tokenization-space clean-up, chat templates, and ``save_pretrained``. Semantics follow
transformers 4.x (``tokenization_utils_base.py`` and ``tokenization_utils_fast.py``).
"""

from __future__ import annotations

import copy
import os
import warnings

import numpy as np
from tokenizers import AddedToken, Tokenizer

import ember

from .._io import read_json, write_atomically, write_json
from . import _fork, chat_template
from .batch_encoding import BatchEncoding, _check_tensor_type

_fork.install()

VERY_LARGE_INTEGER = int(1e30)  # transformers' "no maximum length" value of model_max_length
SPECIAL_TOKENS_ATTRIBUTES = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                             "mask_token"]
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
_TRUNCATION_STRATEGIES = ("longest_first", "only_first", "only_second")
# config keys this class consumes itself; the others are kept and written back by save_pretrained
_OWN_KEYS = set(SPECIAL_TOKENS_ATTRIBUTES) | {
    "additional_special_tokens", "model_max_length", "padding_side", "truncation_side", "chat_template",
    "model_input_names", "clean_up_tokenization_spaces", "added_tokens_decoder", "tokenizer_class",
    "tokenizer_file", "name_or_path", "extra_special_tokens"}


def _token_text(value):
    """A special token from a config: a string, or an AddedToken dict with its ``content``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and "content" in value:
        return value["content"]
    if isinstance(value, AddedToken):
        return value.content
    raise TypeError(f"a special token must be a string or a dict with 'content', got {value!r}")


def _ids_list(token_ids):
    """Token ids given as an int, a list, a numpy array or an ember tensor, as a list of Python ints."""
    if isinstance(token_ids, ember.Tensor):
        token_ids = token_ids.tolist()
    elif isinstance(token_ids, np.ndarray):
        token_ids = token_ids.tolist()
    if isinstance(token_ids, (int, np.integer)):
        return [int(token_ids)]
    return [int(i) for i in token_ids]


def clean_up_tokenization(text: str) -> str:
    """Remove the spaces before punctuation and English contractions that word-level decoding leaves."""
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(a, b)
    return text


class PreTrainedTokenizerFast:
    """A Hugging Face-style tokenizer over a ``tokenizers.Tokenizer`` (transformers.PreTrainedTokenizerFast).

    Args:
        tokenizer_object: a ``tokenizers.Tokenizer`` (the engine); or
        tokenizer_file: the path of a ``tokenizer.json`` to load it from.
        model_max_length: the longest input the model takes, in tokens (default: no limit).
        padding_side, truncation_side: "right" (default) or "left".
        bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token: special
            tokens (strings); additional_special_tokens: a list of further ones.
        chat_template: the Jinja2 chat template (or a dict of named templates).
        model_input_names: the keys a call returns by default.
        clean_up_tokenization_spaces: whether ``decode`` removes spaces before punctuation.

    Raises:
        ValueError: neither a tokenizer object nor a file, or a side other than "left"/"right".
    """

    model_input_names = ["input_ids", "attention_mask"]  # transformers 5's default; BERT's class adds token types
    padding_side = "right"
    truncation_side = "right"

    def __init__(self, tokenizer_object: Tokenizer | None = None, tokenizer_file: str | None = None, **kwargs):
        if tokenizer_object is not None:
            backend = copy.deepcopy(tokenizer_object)
        elif tokenizer_file is not None:
            backend = Tokenizer.from_file(os.fspath(tokenizer_file))
        else:
            raise ValueError("PreTrainedTokenizerFast needs a tokenizers.Tokenizer (tokenizer_object=) or the path "
                             "of a tokenizer.json (tokenizer_file=)")
        self._tokenizer = backend
        # what the file said about truncation and padding supplies defaults, as in transformers
        self._saved_truncation = backend.truncation
        self._saved_padding = backend.padding
        if backend.truncation is not None:
            kwargs.setdefault("truncation_side", backend.truncation["direction"])
        if backend.padding is not None:
            kwargs.setdefault("pad_token", backend.padding["pad_token"])
            kwargs.setdefault("padding_side", backend.padding["direction"])
        self.name_or_path = kwargs.pop("name_or_path", "")
        self.model_max_length = int(kwargs.pop("model_max_length", None) or VERY_LARGE_INTEGER)
        for side in ("padding_side", "truncation_side"):
            value = kwargs.pop(side, None) or getattr(type(self), side)
            if value not in ("left", "right"):
                raise ValueError(f"{side} should be 'left' or 'right', got {value!r}")
            setattr(self, side, value)
        names = kwargs.pop("model_input_names", None)
        if names is not None:
            self.model_input_names = list(names)
        self.chat_template = kwargs.pop("chat_template", None)
        self.clean_up_tokenization_spaces = bool(kwargs.pop("clean_up_tokenization_spaces", False))
        self.pad_token_type_id = 0
        self._special = {}
        for attr in SPECIAL_TOKENS_ATTRIBUTES:
            self._special[attr] = _token_text(kwargs.pop(attr, None))
        self._additional = [_token_text(t) for t in kwargs.pop("additional_special_tokens", None) or []]
        kwargs.pop("added_tokens_decoder", None)
        kwargs.pop("tokenizer_class", None)
        kwargs.pop("tokenizer_file", None)
        self.init_kwargs = kwargs  # the rest of the config (do_lower_case, ...), kept for save_pretrained
        self._register_special_tokens(self.all_special_tokens)

    # ---- special tokens -------------------------------------------------------------------------------

    def _register_special_tokens(self, tokens):
        """Make ``tokens`` added special tokens of the engine (never split, skipped by decode), as transformers does."""
        added = {t.content for t in self._tokenizer.get_added_tokens_decoder().values()}
        new = [AddedToken(t, special=True, normalized=False) for t in tokens if t is not None and t not in added]
        if new:
            self._tokenizer.add_special_tokens(new)

    def _get_special(self, attr):
        return self._special[attr]

    def _set_special(self, attr, value):
        value = _token_text(value)
        self._special[attr] = value
        if value is not None:
            self._register_special_tokens([value])

    def _special_id(self, attr):
        token = self._special[attr]
        return None if token is None else self.convert_tokens_to_ids(token)

    def _set_special_id(self, attr, value):
        self._set_special(attr, None if value is None else self.convert_ids_to_tokens(value))

    @property
    def additional_special_tokens(self) -> list[str]:
        return list(self._additional)

    @additional_special_tokens.setter
    def additional_special_tokens(self, tokens):
        self._additional = [_token_text(t) for t in tokens]
        self._register_special_tokens(self._additional)

    @property
    def additional_special_tokens_ids(self) -> list[int]:
        return self.convert_tokens_to_ids(self._additional)

    @property
    def special_tokens_map(self) -> dict:
        """Each set special-token attribute and its string (``additional_special_tokens`` a list)."""
        out = {attr: tok for attr, tok in self._special.items() if tok is not None}
        if self._additional:
            out["additional_special_tokens"] = list(self._additional)
        return out

    @property
    def all_special_tokens(self) -> list[str]:
        seen = []
        for tok in [*self._special.values(), *self._additional]:
            if tok is not None and tok not in seen:
                seen.append(tok)
        return seen

    @property
    def all_special_ids(self) -> list[int]:
        return self.convert_tokens_to_ids(self.all_special_tokens)

    def add_special_tokens(self, special_tokens_dict: dict, replace_additional_special_tokens: bool = True) -> int:
        """Set special-token attributes from a dict; returns how many tokens were new to the vocabulary.

        Raises:
            ValueError: a key that is not a special-token attribute.
        """
        before = len(self)
        for key, value in special_tokens_dict.items():
            if key == "additional_special_tokens":
                values = [_token_text(t) for t in value]
                if not replace_additional_special_tokens:
                    values = self._additional + [t for t in values if t not in self._additional]
                self.additional_special_tokens = values
            elif key in SPECIAL_TOKENS_ATTRIBUTES:
                self._set_special(key, value)
            else:
                raise ValueError(f"Key {key} is not a special token; expected one of "
                                 f"{SPECIAL_TOKENS_ATTRIBUTES + ['additional_special_tokens']}")
        return len(self) - before

    def add_tokens(self, new_tokens, special_tokens: bool = False) -> int:
        """Add tokens to the vocabulary (after the last id); returns how many were new."""
        if isinstance(new_tokens, (str, AddedToken)):
            new_tokens = [new_tokens]
        tokens = [t if isinstance(t, AddedToken) else AddedToken(t, special=special_tokens,
                                                                 normalized=not special_tokens)
                  for t in new_tokens]
        if special_tokens:
            return self._tokenizer.add_special_tokens(tokens)
        return self._tokenizer.add_tokens(tokens)

    # ---- vocabulary --------------------------------------------------------------------------------------

    @property
    def backend_tokenizer(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` doing the work."""
        return self._tokenizer

    @property
    def is_fast(self) -> bool:
        return True

    @property
    def vocab_size(self) -> int:
        """The size of the base vocabulary, without added tokens."""
        return self._tokenizer.get_vocab_size(with_added_tokens=False)

    def __len__(self) -> int:
        """The size of the whole vocabulary, added tokens included."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self._tokenizer.get_vocab(with_added_tokens=True)

    @property
    def vocab(self) -> dict[str, int]:
        return self.get_vocab()

    def get_added_vocab(self) -> dict[str, int]:
        return {t.content: i for i, t in sorted(self._tokenizer.get_added_tokens_decoder().items())}

    @property
    def added_tokens_decoder(self) -> dict:
        return dict(sorted(self._tokenizer.get_added_tokens_decoder().items()))

    def convert_tokens_to_ids(self, tokens):
        """The id of a token (or a list of ids); a token outside the vocabulary maps to ``unk_token_id``."""
        if tokens is None:
            return None
        if isinstance(tokens, str):
            index = self._tokenizer.token_to_id(tokens)
            return self.unk_token_id if index is None else index
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_ids_to_tokens(self, ids, skip_special_tokens: bool = False):
        """The token of an id (or a list of tokens); None for an id outside the vocabulary."""
        if isinstance(ids, (int, np.integer)):
            return self._tokenizer.id_to_token(int(ids))
        special = set(self.all_special_ids) if skip_special_tokens else set()
        return [self._tokenizer.id_to_token(i) for i in _ids_list(ids) if i not in special]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return self._tokenizer.decoder.decode(tokens) if self._tokenizer.decoder else " ".join(tokens)

    def tokenize(self, text: str, pair: str | None = None, add_special_tokens: bool = False) -> list[str]:
        """The tokens of ``text`` (and ``pair``), as strings."""
        return self._tokenizer.encode(text, pair, add_special_tokens=add_special_tokens).tokens

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return self._tokenizer.num_special_tokens_to_add(pair)

    # ---- encoding ------------------------------------------------------------------------------------

    def _strategies(self, padding, truncation, max_length, pad_to_multiple_of, verbose):
        """transformers' rules turning the padding/truncation/max_length arguments into two strategies."""
        if padding is True or padding == "longest":
            pad = "longest"
        elif padding is False or padding is None or padding == "do_not_pad":
            pad = None
        elif padding == "max_length":
            pad = "max_length"
        else:
            raise ValueError(f"padding must be True, False, 'longest', 'max_length' or 'do_not_pad', got {padding!r}")
        if truncation is None and max_length is not None and pad is None:
            if verbose:
                warnings.warn("Truncation was not explicitly activated but `max_length` is provided a specific value, "
                              "please use `truncation=True` to explicitly truncate examples to max length. Defaulting "
                              "to 'longest_first' truncation strategy.", stacklevel=3)
            truncation = "longest_first"
        if truncation is True:
            trunc = "longest_first"
        elif truncation is False or truncation is None or truncation == "do_not_truncate":
            trunc = None
        elif truncation in _TRUNCATION_STRATEGIES:
            trunc = truncation
        else:
            raise ValueError(f"truncation must be True, False, 'do_not_truncate' or one of {_TRUNCATION_STRATEGIES}, "
                             f"got {truncation!r}")
        if max_length is None:
            no_limit = self.model_max_length >= VERY_LARGE_INTEGER
            if pad == "max_length":
                if no_limit:
                    if verbose:
                        warnings.warn("Asking to pad to max_length but no maximum length is provided and the model "
                                      "has no predefined maximum length. Default to no padding.", stacklevel=3)
                    pad = None
                else:
                    max_length = self.model_max_length
            if trunc is not None:
                if no_limit:
                    if verbose:
                        warnings.warn("Asking to truncate to max_length but no maximum length is provided and the "
                                      "model has no predefined maximum length. Default to no truncation.",
                                      stacklevel=3)
                    trunc = None
                else:
                    max_length = self.model_max_length
        if pad is not None and (self.pad_token is None or self.pad_token_id is None):
            raise ValueError("Asking to pad but the tokenizer does not have a padding token. Please select a token to "
                             "use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` or add a new pad "
                             "token via `tokenizer.add_special_tokens({'pad_token': '[PAD]'})`.")
        if (trunc is not None and pad == "max_length" and pad_to_multiple_of is not None
                and max_length is not None and max_length % pad_to_multiple_of != 0):
            raise ValueError("Truncation and padding are both activated but truncation length "
                             f"({max_length}) is not a multiple of pad_to_multiple_of ({pad_to_multiple_of}).")
        return pad, trunc, max_length

    def _configure_backend(self, pad, trunc, max_length, stride, pad_to_multiple_of, padding_side):
        if trunc is None:
            self._tokenizer.no_truncation()
        else:
            self._tokenizer.enable_truncation(max_length, stride=stride, strategy=trunc,
                                              direction=self.truncation_side)
        if pad is None:
            self._tokenizer.no_padding()
        else:
            self._tokenizer.enable_padding(
                direction=padding_side or self.padding_side, pad_id=self.pad_token_id,
                pad_type_id=self.pad_token_type_id, pad_token=self.pad_token,
                length=max_length if pad == "max_length" else None, pad_to_multiple_of=pad_to_multiple_of)

    def __call__(self, text=None, text_pair=None, add_special_tokens: bool = True, padding=False, truncation=None,
                 max_length: int | None = None, stride: int = 0, is_split_into_words: bool = False,
                 pad_to_multiple_of: int | None = None, padding_side: str | None = None, return_tensors=None,
                 return_token_type_ids: bool | None = None, return_attention_mask: bool | None = None,
                 return_overflowing_tokens: bool = False, return_special_tokens_mask: bool = False,
                 return_offsets_mapping: bool = False, return_length: bool = False, verbose: bool = True,
                 **kwargs) -> BatchEncoding:
        """Tokenize one text, a pair, or a batch of either (transformers' ``PreTrainedTokenizerBase.__call__``).

        Args:
            text: a string, a list of strings (a batch), or with ``is_split_into_words`` a list of
                words (or a batch of such lists).
            text_pair: the second sequence(s) of pairs, matching ``text``.
            padding: True/"longest" (to the longest in the batch), "max_length" (to ``max_length``,
                else the model's maximum), False (none).
            truncation: True/"longest_first", "only_first", "only_second", or False.
            max_length: the length, in tokens, that padding and truncation aim at.
            return_tensors: None (lists), "np" (int64 arrays), "ember" or "pt" (int64 ember tensors;
                "pt" is accepted so Hugging Face-style code runs) of shape ``[batch, seq]``.
            return_offsets_mapping: add ``offset_mapping``, each token's (start, end) character
                span in its text (``[batch, seq, 2]``).

        Returns:
            BatchEncoding with ``input_ids``, ``token_type_ids`` and ``attention_mask`` (as the
            tokenizer's ``model_input_names`` say, unless asked otherwise) and any extras asked for.
            A single text gives unbatched lists, unless ``return_tensors`` is set.

        Raises:
            ValueError: padding without a pad token, unequal lengths with ``return_tensors``, bad
                strategy names. TypeError: text that is not a string or a list of them.
        """
        if kwargs:
            raise TypeError(f"unexpected keyword argument(s) {sorted(kwargs)}")
        if text is None:
            raise ValueError("You need to specify `text` (a string or a list of strings)")
        _check_tensor_type(return_tensors)
        batched = self._is_batched(text, is_split_into_words)
        texts = list(text) if batched else [text]
        if text_pair is None:
            inputs = texts
        else:
            pairs = list(text_pair) if batched else [text_pair]
            if len(pairs) != len(texts):
                raise ValueError(f"text and text_pair must hold as many sequences: got {len(texts)} and {len(pairs)}")
            inputs = list(zip(texts, pairs))
        if not is_split_into_words and text_pair is None:
            # a batch of (text, pair) tuples is a batch of pairs, as in transformers
            for item in inputs:
                if not isinstance(item, (str, tuple, list)):
                    raise TypeError(f"text input must be of type `str` (single example), `list[str]` (batch or "
                                    f"single pretokenized example) or `list[list[str]]`, got {type(item).__name__}")
            inputs = [tuple(i) if isinstance(i, list) else i for i in inputs]
        pad, trunc, max_length = self._strategies(padding, truncation, max_length, pad_to_multiple_of, verbose)
        self._configure_backend(pad, trunc, max_length, stride, pad_to_multiple_of, padding_side)
        encodings = self._tokenizer.encode_batch(inputs, add_special_tokens=add_special_tokens,
                                                 is_pretokenized=is_split_into_words)
        if return_token_type_ids is None:
            return_token_type_ids = "token_type_ids" in self.model_input_names
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        flat, sample_map = [], []
        for i, enc in enumerate(encodings):
            group = [enc, *enc.overflowing] if return_overflowing_tokens else [enc]
            flat.extend(group)
            sample_map.extend([i] * len(group))
        data = {"input_ids": [e.ids for e in flat]}
        if return_token_type_ids:
            data["token_type_ids"] = [e.type_ids for e in flat]
        if return_attention_mask:
            data["attention_mask"] = [e.attention_mask for e in flat]
        if return_special_tokens_mask:
            data["special_tokens_mask"] = [e.special_tokens_mask for e in flat]
        if return_offsets_mapping:
            data["offset_mapping"] = [list(e.offsets) for e in flat]
        if return_length:
            data["length"] = [len(e.ids) for e in flat]
        if return_overflowing_tokens:
            data["overflow_to_sample_mapping"] = sample_map
        elif not batched and return_tensors is None:
            # transformers unbatches only the per-token lists (``length`` stays a one-element list)
            data = {k: v[0] if v and isinstance(v[0], list) else v for k, v in data.items()}
            flat = flat[:1]
        return BatchEncoding(data, flat, tensor_type=return_tensors, n_sequences=flat[0].n_sequences if flat else None)

    @staticmethod
    def _is_batched(text, is_split_into_words):
        if isinstance(text, str):
            if is_split_into_words:
                raise TypeError("with is_split_into_words=True, text must be a list of words or a batch of such "
                                "lists, got a string")
            return False
        if not isinstance(text, (list, tuple)):
            raise TypeError(f"text input must be of type `str` (single example), `list[str]` (batch or single "
                            f"pretokenized example) or `list[list[str]]`, got {type(text).__name__}")
        if is_split_into_words:
            return len(text) > 0 and isinstance(text[0], (list, tuple))
        return True

    def encode(self, text, text_pair=None, add_special_tokens: bool = True, padding=False, truncation=None,
               max_length: int | None = None, stride: int = 0, return_tensors=None, **kwargs):
        """The ``input_ids`` of one text (or pair): a list of ints, or ``[1, seq]`` with ``return_tensors``."""
        return self(text, text_pair, add_special_tokens=add_special_tokens, padding=padding, truncation=truncation,
                    max_length=max_length, stride=stride, return_tensors=return_tensors, **kwargs)["input_ids"]

    def encode_plus(self, *args, **kwargs) -> BatchEncoding:
        return self(*args, **kwargs)

    def batch_encode_plus(self, batch_text_or_text_pairs, **kwargs) -> BatchEncoding:
        return self(list(batch_text_or_text_pairs), **kwargs)

    def pad(self, encoded_inputs, padding=True, max_length: int | None = None, pad_to_multiple_of: int | None = None,
            padding_side: str | None = None, return_attention_mask: bool | None = None, return_tensors=None):
        """Pad already-tokenized inputs (a dict of lists, or a list of dicts, as a collate function receives).

        Returns a BatchEncoding whose sequences all have the longest length (or ``max_length``).
        """
        if isinstance(encoded_inputs, (list, tuple)) and encoded_inputs and isinstance(encoded_inputs[0], dict):
            encoded_inputs = {k: [ex[k] for ex in encoded_inputs] for k in encoded_inputs[0]}
        data = {k: [_ids_list(s) for s in v] if isinstance(v, (list, tuple)) and v and not isinstance(v[0], int)
                else [_ids_list(v)] for k, v in dict(encoded_inputs).items()}
        pad, _, max_length = self._strategies(padding, False, max_length, pad_to_multiple_of, verbose=True)
        side = padding_side or self.padding_side
        lengths = [len(s) for s in data["input_ids"]]
        target = max(lengths) if pad == "longest" else max_length
        if pad is None:
            target = None
        if target is not None and pad_to_multiple_of:
            target = -(-target // pad_to_multiple_of) * pad_to_multiple_of
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        if return_attention_mask and "attention_mask" not in data:
            data["attention_mask"] = [[1] * n for n in lengths]
        fill = {"input_ids": self.pad_token_id, "token_type_ids": self.pad_token_type_id, "attention_mask": 0,
                "special_tokens_mask": 1}
        if target is not None:
            for key, seqs in data.items():
                value = fill.get(key, 0)
                data[key] = [([value] * (target - len(s)) + s) if side == "left" else (s + [value] * (target - len(s)))
                             for s in seqs]
        return BatchEncoding(data, tensor_type=return_tensors)

    # ---- decoding ------------------------------------------------------------------------------------

    def decode(self, token_ids, skip_special_tokens: bool = False, clean_up_tokenization_spaces: bool | None = None,
               **kwargs) -> str:
        """The text of ``token_ids`` (an int, a list, a 1-d array or tensor).

        ``skip_special_tokens`` drops the special tokens; ``clean_up_tokenization_spaces``
        (default: the tokenizer's setting) removes spaces before punctuation.
        """
        text = self._tokenizer.decode(_ids_list(token_ids), skip_special_tokens=skip_special_tokens)
        if clean_up_tokenization_spaces is None:
            clean_up_tokenization_spaces = self.clean_up_tokenization_spaces
        return clean_up_tokenization(text) if clean_up_tokenization_spaces else text

    def batch_decode(self, sequences, skip_special_tokens: bool = False,
                     clean_up_tokenization_spaces: bool | None = None, **kwargs) -> list[str]:
        """``decode`` of each row of ``sequences`` (a list of lists, a 2-d array or tensor ``[batch, seq]``)."""
        if isinstance(sequences, (ember.Tensor, np.ndarray)):
            sequences = sequences.tolist()
        return [self.decode(s, skip_special_tokens, clean_up_tokenization_spaces, **kwargs) for s in sequences]

    # ---- chat templates ------------------------------------------------------------------------------

    def apply_chat_template(self, conversation, tools=None, documents=None, chat_template=None,
                            add_generation_prompt: bool = False, continue_final_message: bool = False,
                            tokenize: bool = True, padding=False, truncation: bool = False,
                            max_length: int | None = None, return_tensors=None, return_dict: bool = True,
                            return_assistant_tokens_mask: bool = False, tokenizer_kwargs: dict | None = None,
                            **kwargs):
        """Render a conversation (or a batch of them) with the chat template, and tokenize it unless told not to.

        Args:
            conversation: a list of ``{"role": ..., "content": ...}`` dicts, or a list of such lists.
            add_generation_prompt: end with the tokens that open an assistant turn.
            continue_final_message: leave the last message open, for the model to continue it
                (True continues its "content"; a string names another field).
            tokenize: False returns the rendered text(s); True tokenizes them (without adding
                special tokens: the template writes them).
            return_dict: with ``tokenize``, return the BatchEncoding (the default, as in
                transformers 5); False returns the ``input_ids`` alone.
            return_assistant_tokens_mask: add ``assistant_masks``, 1 for the tokens the template's
                ``{% generation %}`` blocks wrote (what the assistant said), 0 for the rest.
            kwargs: further variables for the template.

        Returns: a string, a list of ids, or a BatchEncoding (a list of these for a batch).

        Raises:
            ValueError: no chat template, an empty conversation, both ``add_generation_prompt`` and
                ``continue_final_message``, or ``return_assistant_tokens_mask`` without
                ``return_dict`` and ``tokenize`` or with ``continue_final_message``.
            jinja2.TemplateError: the template called ``raise_exception``.
        """
        if return_assistant_tokens_mask and not (return_dict and tokenize):
            raise ValueError("`return_assistant_tokens_mask=True` requires `return_dict=True` and `tokenize=True`")
        if return_assistant_tokens_mask and continue_final_message:
            raise ValueError("continue_final_message is not compatible with return_assistant_tokens_mask.")
        if add_generation_prompt and continue_final_message:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible. Use "
                             "continue_final_message when you want the model to continue the final message, and "
                             "add_generation_prompt when you want to add a header that will prompt it to generate "
                             "a new assistant message instead.")
        template = _select(self, chat_template, tools)  # the argument shadows the module here
        if isinstance(conversation, (list, tuple)) and len(conversation) == 0:
            raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
        batched = isinstance(conversation, (list, tuple)) and isinstance(conversation[0], (list, tuple))
        conversations = conversation if batched else [conversation]
        variables = {**self.special_tokens_map, **kwargs}
        rendered = [_render(template, chat, tools=tools, documents=documents,
                            continue_final_message=continue_final_message,
                            track_generation=return_assistant_tokens_mask,
                            add_generation_prompt=add_generation_prompt, **variables) for chat in conversations]
        spans = None
        if return_assistant_tokens_mask:
            spans = [r[1] for r in rendered]
            rendered = [r[0] for r in rendered]
        if not tokenize:
            return rendered if batched else rendered[0]
        # with tensors, a single conversation keeps its batch dimension (as the tokenizer's call does)
        as_batch = batched or (spans is not None and return_tensors is not None)
        enc = self(rendered if as_batch else rendered[0], padding=padding, truncation=truncation,
                   max_length=max_length, add_special_tokens=False,
                   return_tensors=None if spans is not None else return_tensors, **(tokenizer_kwargs or {}))
        if spans is not None:  # the tokens the {% generation %} blocks wrote: 1, the others 0
            masks = [_assistant_mask(e.offsets, s) for e, s in zip(enc.encodings, spans)]
            enc["assistant_masks"] = masks if as_batch else masks[0]
            enc.convert_to_tensors(return_tensors)
        return enc if return_dict else enc["input_ids"]

    def get_chat_template(self, chat_template=None, tools=None) -> str:
        """The template text a call of ``apply_chat_template`` would use."""
        return _select(self, chat_template, tools)

    # ---- saving and loading --------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        """Load from a local folder holding ``tokenizer.json`` (and its configs). See ``AutoTokenizer``."""
        from .auto import AutoTokenizer

        return AutoTokenizer.from_pretrained(pretrained_model_name_or_path, _cls=cls, **kwargs)

    def _config(self) -> dict:
        config = dict(self.init_kwargs)
        config.update({k: v for k, v in self._special.items() if v is not None})
        if self._additional:
            config["additional_special_tokens"] = list(self._additional)
        config["added_tokens_decoder"] = {
            str(i): {"content": t.content, "lstrip": t.lstrip, "normalized": t.normalized, "rstrip": t.rstrip,
                     "single_word": t.single_word, "special": t.special}
            for i, t in sorted(self._tokenizer.get_added_tokens_decoder().items())}
        config["model_max_length"] = self.model_max_length
        config["padding_side"] = self.padding_side
        config["truncation_side"] = self.truncation_side
        config["clean_up_tokenization_spaces"] = self.clean_up_tokenization_spaces
        if self.chat_template is not None:
            config["chat_template"] = self.chat_template
        if self.model_input_names != PreTrainedTokenizerFast.model_input_names:
            config["model_input_names"] = list(self.model_input_names)
        config["tokenizer_class"] = getattr(self, "_tokenizer_class", None) or "PreTrainedTokenizerFast"
        return config

    def save_pretrained(self, save_directory, **kwargs) -> tuple[str, ...]:
        """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json`` to a folder.

        ``AutoTokenizer.from_pretrained`` (ember's or transformers') reads the folder back. Each file
        is written to a temporary name and renamed. Returns the paths written.

        Raises:
            NotADirectoryError: ``save_directory`` exists and is a file.
        """
        save_directory = os.fspath(save_directory)
        if os.path.isfile(save_directory):
            raise NotADirectoryError(f"Provided path ({save_directory}) should be a directory, not a file")
        os.makedirs(save_directory, exist_ok=True)
        paths = tuple(os.path.join(save_directory, name) for name in (CONFIG_FILE, SPECIAL_TOKENS_MAP_FILE,
                                                                     TOKENIZER_FILE))
        write_json(paths[0], self._config())
        write_json(paths[1], self.special_tokens_map)
        backend = copy.deepcopy(self._tokenizer)
        # save the engine as it was loaded, not with the last call's padding and truncation
        if self._saved_truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**self._saved_truncation)
        if self._saved_padding is None:
            backend.no_padding()
        else:
            backend.enable_padding(**{k: v for k, v in self._saved_padding.items() if k != "pad_to_multiple_of"},
                                   pad_to_multiple_of=self._saved_padding.get("pad_to_multiple_of"))
        write_atomically(paths[2], lambda f: f.write(backend.to_str(pretty=True)))
        return paths

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name_or_path={self.name_or_path!r}, vocab_size={self.vocab_size}, "
                f"model_max_length={self.model_max_length}, padding_side={self.padding_side!r}, "
                f"truncation_side={self.truncation_side!r}, special_tokens={self.special_tokens_map})")


def _select(tok, name, tools):
    return chat_template.select_template(name, tok.chat_template, tools)


def _render(template, chat, **variables):
    return chat_template.render_chat(template, chat, **variables)


def _assistant_mask(offsets, spans):
    return chat_template.assistant_mask(offsets, spans)


def _special_property(attr):
    return property(lambda self: self._get_special(attr), lambda self, v: self._set_special(attr, v),
                    doc=f"The {attr.replace('_', ' ')} (a string), or None.")


def _special_id_property(attr):
    return property(lambda self: self._special_id(attr), lambda self, v: self._set_special_id(attr, v),
                    doc=f"The id of the {attr.replace('_', ' ')}, or None.")


for _attr in SPECIAL_TOKENS_ATTRIBUTES:
    setattr(PreTrainedTokenizerFast, _attr, _special_property(_attr))
    setattr(PreTrainedTokenizerFast, _attr + "_id", _special_id_property(_attr))


def load_tokenizer_config(folder: str) -> dict:
    """``tokenizer_config.json`` merged with ``special_tokens_map.json`` and ``chat_template.jinja``, if present."""
    config = {}
    path = os.path.join(folder, CONFIG_FILE)
    if os.path.isfile(path):
        config = read_json(path)
    path = os.path.join(folder, SPECIAL_TOKENS_MAP_FILE)
    if os.path.isfile(path):
        config.update(read_json(path))  # transformers lets the map override the config's tokens
    path = os.path.join(folder, CHAT_TEMPLATE_FILE)
    if os.path.isfile(path) and "chat_template" not in config:
        with open(path, encoding="utf-8") as f:
            config["chat_template"] = f.read()
    return config

