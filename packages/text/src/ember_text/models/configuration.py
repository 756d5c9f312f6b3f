"""Model configurations read from and written to ``config.json`` (transformers.PretrainedConfig)."""

from __future__ import annotations

import copy
import os

from .._io import read_json, write_json

CONFIG_NAME = "config.json"


class PretrainedConfig:
    """A model's hyper-parameters; each key of ``config.json`` becomes an attribute.

    Subclasses set ``model_type`` and their defaults; ``attribute_map`` gives transformers'
    aliases (``hidden_size`` for GPT-2's ``n_embd``). Unknown keys are kept and written back.
    """

    model_type = ""
    attribute_map: dict[str, str] = {}
    defaults: dict = {}

    def __init__(self, **kwargs):
        common = {"id2label": None, "label2id": None, "num_labels": None, "problem_type": None,
                  "tie_word_embeddings": True, "pad_token_id": None, "bos_token_id": None, "eos_token_id": None,
                  "output_hidden_states": False, "use_cache": True, "dtype": None, "architectures": None}
        values = {**common, **copy.deepcopy(self.defaults), **kwargs}
        if "torch_dtype" in values:  # the older name of ``dtype``
            torch_dtype = values.pop("torch_dtype")
            values["dtype"] = values.get("dtype") or torch_dtype
        num_labels = values.pop("num_labels")
        id2label = values.pop("id2label")
        values.pop("label2id")
        if id2label is not None:
            id2label = {int(k): v for k, v in id2label.items()}
        elif num_labels is not None:
            id2label = {i: f"LABEL_{i}" for i in range(num_labels)}
        else:
            id2label = {0: "LABEL_0", 1: "LABEL_1"}
        self.id2label = id2label
        for key, value in values.items():
            setattr(self, self.attribute_map.get(key, key), value)

    def __getattr__(self, name):
        alias = type(self).attribute_map.get(name)
        if alias is not None:
            return getattr(self, alias)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        super().__setattr__(type(self).attribute_map.get(name, name), value)

    @property
    def num_labels(self) -> int:
        return len(self.id2label)

    @property
    def label2id(self) -> dict:
        return {v: k for k, v in self.id2label.items()}

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        out["id2label"] = {str(k): v for k, v in self.id2label.items()}
        out["label2id"] = self.label2id
        out["model_type"] = self.model_type
        return out

    @classmethod
    def from_dict(cls, config: dict, **kwargs):
        if "num_labels" in kwargs:  # a new label count replaces the saved labels, as in transformers
            config = {k: v for k, v in config.items() if k not in ("id2label", "label2id")}
        config = {k: v for k, v in {**config, **kwargs}.items() if k not in ("model_type", "transformers_version")}
        return cls(**config)

    @classmethod
    def from_pretrained(cls, folder, **kwargs):
        """The config in ``folder/config.json`` (or the file itself); kwargs override its keys.

        Raises:
            OSError: no config.json there. ValueError: invalid JSON, or another model_type.
        """
        folder = os.fspath(folder)
        path = folder if os.path.isfile(folder) else os.path.join(folder, CONFIG_NAME)
        if not os.path.isfile(path):
            raise OSError(f"{folder!r} does not hold a {CONFIG_NAME} (ember_text reads local folders only)")
        config = read_json(path)
        if cls.model_type and config.get("model_type", cls.model_type) != cls.model_type:
            raise ValueError(f"{path} describes a {config.get('model_type')!r} model, not {cls.model_type!r}")
        return cls.from_dict(config, **kwargs)

    def save_pretrained(self, save_directory) -> str:
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(os.fspath(save_directory), CONFIG_NAME)
        write_json(path, self.to_dict())
        return path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()})"


class BertConfig(PretrainedConfig):
    """BERT's hyper-parameters (Hugging Face transformers' ``BertConfig``; Devlin et al., 2019,
    arXiv:1810.04805), with transformers' defaults (bert-base: ``vocab_size`` 30522,
    ``hidden_size`` 768, ``num_hidden_layers`` 12, ``num_attention_heads`` 12,
    ``intermediate_size`` 3072, ``max_position_embeddings`` 512, ``layer_norm_eps`` 1e-12, ...).
    Every keyword argument becomes an attribute, unknown ones included (see
    :class:`PretrainedConfig`).
    """
    model_type = "bert"
    defaults = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
                "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
                "position_embedding_type": "absolute", "classifier_dropout": None}


class GPT2Config(PretrainedConfig):
    """GPT-2's hyper-parameters (Hugging Face transformers' ``GPT2Config``; Radford et al., 2019),
    with transformers' defaults (the 124M model: ``vocab_size`` 50257, ``n_positions`` 1024,
    ``n_embd`` 768, ``n_layer`` 12, ``n_head`` 12, ``layer_norm_epsilon`` 1e-5, ...).
    ``hidden_size``, ``max_position_embeddings``, ``num_attention_heads`` and
    ``num_hidden_layers`` are aliases of the ``n_*`` names. Every keyword argument becomes an
    attribute (see :class:`PretrainedConfig`).
    """
    model_type = "gpt2"
    attribute_map = {"hidden_size": "n_embd", "max_position_embeddings": "n_positions",
                     "num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}
    defaults = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
                "n_inner": None, "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1,
                "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5, "initializer_range": 0.02,
                "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                "reorder_and_upcast_attn": False, "bos_token_id": 50256, "eos_token_id": 50256,
                "summary_first_dropout": 0.1}


class LlamaConfig(PretrainedConfig):
    """Llama's hyper-parameters (Hugging Face transformers' ``LlamaConfig``; Touvron et al., 2023,
    arXiv:2302.13971), with transformers' defaults (Llama-7B: ``vocab_size`` 32000,
    ``hidden_size`` 4096, ``intermediate_size`` 11008, 32 layers and heads, ``rms_norm_eps``
    1e-6, ``rope_theta`` 10000.0, untied embeddings, ...). ``num_key_value_heads`` defaults to
    ``num_attention_heads`` (no grouped-query attention) and ``head_dim`` to
    ``hidden_size // num_attention_heads``. Every keyword argument becomes an attribute (see
    :class:`PretrainedConfig`).
    """
    model_type = "llama"
    defaults = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": None, "hidden_act": "silu",
                "max_position_embeddings": 2048, "initializer_range": 0.02, "rms_norm_eps": 1e-6,
                "rope_theta": 10000.0, "rope_scaling": None, "rope_parameters": None, "attention_bias": False,
                "attention_dropout": 0.0, "mlp_bias": False, "head_dim": None, "tie_word_embeddings": False,
                "bos_token_id": 1, "eos_token_id": 2, "pretraining_tp": 1}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads

    def rope(self) -> dict:
        """The RoPE settings: ``rope_type`` ("default", "linear", "llama3", "dynamic", "yarn"), ``rope_theta`` and the
        type's own keys.

        transformers 5 writes them as ``rope_parameters``; older configs as ``rope_theta`` plus
        ``rope_scaling`` (whose ``type`` is the older name of ``rope_type``).
        """
        params = dict(self.rope_scaling or {})
        params.update(self.rope_parameters or {})
        params.setdefault("rope_theta", self.rope_theta)
        older = params.pop("type", None)
        params.setdefault("rope_type", older or "default")
        return params
