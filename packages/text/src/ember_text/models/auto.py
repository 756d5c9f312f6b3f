"""AutoConfig / AutoModel*: the class is chosen from config.json's ``model_type`` (no code from the folder runs)."""

from __future__ import annotations

import os

from .._io import read_json
from .bert import BertForSequenceClassification, BertModel
from .configuration import CONFIG_NAME, BertConfig, GPT2Config, LlamaConfig
from .gpt2 import GPT2LMHeadModel, GPT2Model
from .llama import LlamaForCausalLM, LlamaModel

CONFIGS = {"bert": BertConfig, "gpt2": GPT2Config, "llama": LlamaConfig}
MODELS = {"bert": BertModel, "gpt2": GPT2Model, "llama": LlamaModel}
CAUSAL_LM = {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}
SEQUENCE_CLASSIFICATION = {"bert": BertForSequenceClassification}


def _model_type(folder: str) -> tuple[str, dict]:
    folder = os.fspath(folder)
    path = os.path.join(folder, CONFIG_NAME)
    if not os.path.isfile(path):
        raise OSError(f"{folder!r} does not hold a {CONFIG_NAME} (ember_text reads local folders only)")
    config = read_json(path)
    if "model_type" not in config:
        raise ValueError(f"{path} has no 'model_type' key")
    return config["model_type"], config


def _pick(table: dict, model_type: str, what: str):
    if model_type not in table:
        raise ValueError(f"Unrecognized configuration model_type {model_type!r} for {what}; supported: "
                         f"{', '.join(sorted(table))}")
    return table[model_type]


class AutoConfig:
    """The config class of a model folder, picked by its ``config.json``'s ``model_type``
    (Hugging Face transformers' ``AutoConfig``): use ``AutoConfig.from_pretrained(folder,
    **overrides)``. Constructing it directly raises OSError.
    """
    def __init__(self):
        raise OSError("AutoConfig is designed to be instantiated using `AutoConfig.from_pretrained(folder)`.")

    @classmethod
    def from_pretrained(cls, folder, **kwargs):
        """The config class for the folder's model_type, read from config.json. Raises ValueError for others."""
        model_type, config = _model_type(folder)
        return _pick(CONFIGS, model_type, "AutoConfig").from_dict(config, **kwargs)


def _auto(name: str, table: dict):
    def from_pretrained(cls, folder, *args, **kwargs):
        model_type, _ = _model_type(folder)
        return _pick(table, model_type, name).from_pretrained(folder, *args, **kwargs)

    def from_config(cls, config, **kwargs):
        return _pick(table, config.model_type, name)(config, **kwargs)

    def init(self):
        raise OSError(f"{name} is designed to be instantiated using `{name}.from_pretrained(folder)` or "
                      f"`{name}.from_config(config)`.")

    doc = (f"{name}.from_pretrained(folder, dtype=..., ``**config_overrides``): the model class for config.json's "
           f"model_type ({', '.join(sorted(table))}).")
    return type(name, (), {"__init__": init, "from_pretrained": classmethod(from_pretrained),
                           "from_config": classmethod(from_config), "__doc__": doc})


AutoModel = _auto("AutoModel", MODELS)
AutoModelForCausalLM = _auto("AutoModelForCausalLM", CAUSAL_LM)
AutoModelForSequenceClassification = _auto("AutoModelForSequenceClassification", SEQUENCE_CLASSIFICATION)
