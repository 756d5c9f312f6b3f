"""SentenceTransformer: sentence embeddings from a sentence-transformers folder (its names, arguments, defaults).

The folder's ``modules.json`` lists the modules in order; the ones built here are
``Transformer`` (the Hugging Face model and tokenizer in the module's folder, with
``sentence_bert_config.json``'s ``max_seq_length``), ``Pooling`` (``1_Pooling/config.json``:
cls, mean, max, mean_sqrt_len_tokens, weightedmean or lasttoken over the unpadded tokens) and
``Normalize`` (L2), which needs no files and loads even when its folder is absent. Reimers &
Gurevych, 2019: "Sentence-BERT". No code from the folder runs.
"""

from __future__ import annotations

import os

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from ._io import read_json
from .models.auto import AutoModel
from .tokenization import AutoTokenizer

POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
_LEGACY_POOLING_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                        "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                        "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}


class Transformer(nn.Module):
    """A Hugging Face encoder and its tokenizer; adds ``token_embeddings`` ``[B, S, D]`` to the features."""

    def __init__(self, model_name_or_path: str, max_seq_length: int | None = None, do_lower_case: bool = False):
        super().__init__()
        config_path = os.path.join(model_name_or_path, "sentence_bert_config.json")
        if os.path.isfile(config_path):
            st_config = read_json(config_path)
            max_seq_length = max_seq_length if max_seq_length is not None else st_config.get("max_seq_length")
            do_lower_case = st_config.get("do_lower_case", do_lower_case)
        self.auto_model = AutoModel.from_pretrained(model_name_or_path)
        self.tokenizer = AutoTokenizer.from_pretrained(model_name_or_path)
        limit = getattr(self.auto_model.config, "max_position_embeddings", None)
        if max_seq_length is None:
            max_seq_length = min(self.tokenizer.model_max_length, limit or self.tokenizer.model_max_length)
        self.max_seq_length = int(max_seq_length)
        self.do_lower_case = bool(do_lower_case)

    def get_word_embedding_dimension(self) -> int:
        return self.auto_model.config.hidden_size

    def tokenize(self, texts: list[str]) -> dict:
        if self.do_lower_case:
            texts = [t.lower() for t in texts]
        return dict(self.tokenizer(texts, padding=True, truncation="longest_first", return_tensors="ember",
                                   max_length=self.max_seq_length))

    def forward(self, features: dict) -> dict:
        inputs = {k: features[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in features}
        features["token_embeddings"] = self.auto_model(**inputs).last_hidden_state
        return features


class Pooling(nn.Module):
    """Token embeddings to one sentence embedding ``[B, D]`` (``[B, D * modes]`` for several modes).

    Raises:
        ValueError: a pooling mode not in ``POOLING_MODES``.
    """

    def __init__(self, word_embedding_dimension: int, pooling_mode="mean", **legacy):
        super().__init__()
        legacy_modes = [mode for key, mode in _LEGACY_POOLING_KEYS.items() if legacy.pop(key, False)]
        legacy.pop("include_prompt", None)
        if legacy:
            raise TypeError(f"unexpected Pooling option(s) {sorted(legacy)}")
        modes = legacy_modes or ([pooling_mode] if isinstance(pooling_mode, str) else list(pooling_mode))
        for mode in modes:
            if mode not in POOLING_MODES:
                raise ValueError(f"pooling mode {mode!r} is not supported; expected one of {POOLING_MODES}")
        self.modes = modes
        self.word_embedding_dimension = word_embedding_dimension

    @classmethod
    def load(cls, folder: str) -> Pooling:
        config = read_json(os.path.join(folder, "config.json"))
        dim = config.pop("word_embedding_dimension", None) or config.pop("embedding_dimension")
        return cls(dim, **config)

    def get_sentence_embedding_dimension(self) -> int:
        return self.word_embedding_dimension * len(self.modes)

    def forward(self, features: dict) -> dict:
        tokens = features["token_embeddings"]
        mask = features.get("attention_mask")
        if mask is None:
            mask = ember.ones(tokens.shape[:-1], dtype=ember.int64)
        outputs = []
        m = mask[..., None].to(tokens.dtype)
        for mode in self.modes:
            if mode == "cls":
                first = mask.int().argmax(dim=1)
                outputs.append(tokens[ember.arange(tokens.shape[0]), first])
            elif mode == "max":
                outputs.append(tokens.masked_fill(m == 0, float("-inf")).max(dim=1).values)
            elif mode in ("mean", "mean_sqrt_len_tokens"):
                total = (tokens * m).sum(dim=1)
                count = m.sum(dim=1).clamp(min=1e-9)
                outputs.append(total / (count if mode == "mean" else count.sqrt()))
            elif mode == "weightedmean":
                weights = ember.arange(1, tokens.shape[1] + 1, dtype=tokens.dtype).view(1, -1, 1)
                weights = weights - mask.int().argmax(dim=1).to(tokens.dtype).view(-1, 1, 1)  # left padding
                wm = m * weights
                outputs.append((tokens * wm).sum(dim=1) / wm.sum(dim=1).clamp(min=1e-9))
            else:  # lasttoken: the last position the mask keeps
                values, index = mask.flip(1).max(1)
                last = tokens.shape[1] - 1 - index
                last = ember.where(values == 0, ember.full_like(last, tokens.shape[1] - 1), last)
                outputs.append(tokens[ember.arange(tokens.shape[0]), last])
        features["sentence_embedding"] = ember.cat(outputs, dim=-1)
        return features


class Normalize(nn.Module):
    """L2-normalize the sentence embedding."""

    def forward(self, features: dict) -> dict:
        features["sentence_embedding"] = F.normalize(features["sentence_embedding"], p=2, dim=1)
        return features


_MODULE_TYPES = ("Transformer", "Pooling", "Normalize")


class SentenceTransformer(nn.Sequential):
    """A sentence-transformers model read from a local folder (sentence_transformers.SentenceTransformer).

    Args:
        model_name_or_path: the folder holding ``modules.json`` (or a plain Hugging Face encoder
            folder, which gets mean pooling, as sentence-transformers gives it).
        modules: build from these modules instead of a folder.
        device: accepted and ignored (sentence-transformers moves the model there): the model
            stays where its weights were loaded, on the CPU; call ``.to(device)``.
        cache_folder, trust_remote_code, revision...: accepted for compatibility; the
            folder is local and no code from it is run.

    Raises:
        OSError: the folder does not exist.
        ValueError: a module type this package does not build, or neither a folder nor modules.
    """

    def __init__(self, model_name_or_path: str | None = None, modules=None, device=None, **kwargs):
        if modules is None:
            if model_name_or_path is None:
                raise ValueError("give a folder (model_name_or_path) or modules")
            modules = self._load_modules(os.fspath(model_name_or_path))
        super().__init__(*modules) if not isinstance(modules, dict) else super().__init__(modules)
        self.eval()

    @staticmethod
    def _load_modules(folder: str) -> list:
        if not os.path.isdir(folder):
            raise OSError(f"{folder!r} is not a folder (ember_text loads local folders only)")
        path = os.path.join(folder, "modules.json")
        if not os.path.isfile(path):
            transformer = Transformer(folder)
            return [transformer, Pooling(transformer.get_word_embedding_dimension(), "mean")]
        built = []
        for entry in sorted(read_json(path), key=lambda e: e.get("idx", 0)):
            kind = entry["type"].rsplit(".", 1)[-1]
            where = os.path.join(folder, entry.get("path", ""))
            if kind == "Transformer":
                built.append(Transformer(where))
            elif kind == "Pooling":
                built.append(Pooling.load(where))
            elif kind == "Normalize":
                built.append(Normalize())  # no files: its folder may be missing
            else:
                raise ValueError(f"{path}: module type {entry['type']!r} is not supported; supported: "
                                 f"{', '.join(_MODULE_TYPES)}")
        return built

    @property
    def tokenizer(self):
        return self[0].tokenizer

    @property
    def max_seq_length(self) -> int:
        return self[0].max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value: int) -> None:
        self[0].max_seq_length = int(value)

    def get_sentence_embedding_dimension(self) -> int | None:
        for module in reversed(list(self)):
            if hasattr(module, "get_sentence_embedding_dimension"):
                return module.get_sentence_embedding_dimension()
        return None

    def tokenize(self, texts: list[str]) -> dict:
        return self[0].tokenize(texts)

    def forward(self, features: dict) -> dict:
        for module in self:
            features = module(features)
        return features

    def encode(self, sentences, batch_size: int = 32, show_progress_bar: bool | None = None,
               output_value: str = "sentence_embedding", convert_to_numpy: bool = True,
               convert_to_tensor: bool = False, device=None, normalize_embeddings: bool = False, **kwargs):
        """Embed sentences: numpy ``[N, D]`` float32 by default (``[D]`` for one string).

        Args:
            sentences: a string or a list of strings.
            batch_size: sentences per forward pass (they are sorted by length first, so a batch
                pads little; the output keeps the input order).
            show_progress_bar: a tqdm bar over the batches (None: off).
            output_value: "sentence_embedding", or "token_embeddings" (a list of ``[L_i, D]``
                tensors, the padding removed).
            convert_to_numpy: numpy (default) or, if False, a list of ember tensors.
            convert_to_tensor: one ember Tensor ``[N, D]`` (wins over ``convert_to_numpy``).
            normalize_embeddings: L2-normalize each embedding.

        Raises:
            ValueError: an unknown ``output_value``. TypeError: sentences that are not strings.
        """
        if output_value not in ("sentence_embedding", "token_embeddings"):
            raise ValueError(f"output_value must be 'sentence_embedding' or 'token_embeddings', got {output_value!r}")
        single = isinstance(sentences, str)
        sentences = [sentences] if single else list(sentences)
        for s in sentences:
            if not isinstance(s, str):
                raise TypeError(f"sentences must be strings, got {type(s).__name__}")
        order = np.argsort([-len(s) for s in sentences], kind="stable")
        starts = range(0, len(sentences), batch_size)
        if show_progress_bar:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        results = [None] * len(sentences)
        with ember.no_grad():
            for start in starts:
                index = order[start:start + batch_size]
                features = self.forward(self.tokenize([sentences[i] for i in index]))
                if output_value == "token_embeddings":
                    for row, i in enumerate(index):
                        n = int(features["attention_mask"][row].sum())
                        results[i] = features["token_embeddings"][row, :n]
                    continue
                emb = features["sentence_embedding"]
                if normalize_embeddings:
                    emb = F.normalize(emb, p=2, dim=1)
                for row, i in enumerate(index):
                    results[i] = emb[row]
        if output_value == "token_embeddings":
            return results[0] if single else results
        if convert_to_tensor:
            out = ember.stack(results) if results else ember.zeros(0, self.get_sentence_embedding_dimension())
        elif convert_to_numpy:
            out = np.stack([r.float().numpy() for r in results]) if results else np.zeros((0, 0), np.float32)
        else:
            out = results
        return out[0] if single else out
