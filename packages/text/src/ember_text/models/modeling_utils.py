"""PreTrainedModel: from_pretrained / save_pretrained over a Hugging Face model folder."""

from __future__ import annotations

import os
import warnings

import ember
from ember import nn

from .configuration import PretrainedConfig
from .weights import load_state_dict_from_folder, save_state_dict_to_folder

_DTYPES = {"float32": ember.float32, "float16": ember.float16, "bfloat16": ember.bfloat16,
           "float64": ember.float64}


def resolve_dtype(dtype, config: PretrainedConfig):
    """An ember dtype from ``dtype`` (an ember dtype, its name, or "auto": the config's dtype), or None."""
    if dtype is None:
        return None
    if dtype == "auto":
        dtype = getattr(config, "dtype", None) or "float32"
    if isinstance(dtype, str):
        name = dtype.replace("torch.", "")
        if name not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)} or 'auto', got {dtype!r}")
        return _DTYPES[name]
    return dtype


class PreTrainedModel(nn.Module):
    """Base of the Hugging Face-layout models: config, weight loading with transformers' state_dict keys.

    Subclasses set ``config_class``, ``base_model_prefix`` (the attribute holding the base model:
    "bert", "transformer", "model"), ``_tied_weights`` (parameter name -> the one it shares) and
    ``_head_prefixes`` (heads that may be missing from a base-model checkpoint and are then
    freshly initialized, as for fine-tuning). ``config`` is the model's
    :class:`PretrainedConfig`, kept as ``self.config`` (transformers' ``PreTrainedModel``).
    """

    config_class = PretrainedConfig
    base_model_prefix = ""
    _tied_weights: dict[str, str] = {}
    _head_prefixes: tuple[str, ...] = ()
    _ignore_unexpected: tuple[str, ...] = ()

    def __init__(self, config: PretrainedConfig):
        super().__init__()
        self.config = config

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    @property
    def device(self):
        return next(self.parameters()).device

    def tie_weights(self) -> None:
        """Make each tied parameter the same Parameter as its source (GPT-2's lm_head and wte)."""
        if not getattr(self.config, "tie_word_embeddings", True):
            return
        for name, source in self._tied_weights.items():
            owner, _, attr = name.rpartition(".")
            setattr(self.get_submodule(owner) if owner else self, attr, self.get_parameter(source))

    def _init_weights(self, module) -> None:
        std = getattr(self.config, "initializer_range", 0.02)
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)

    def post_init(self) -> None:
        self.apply(self._init_weights)
        self.tie_weights()

    def _match_keys(self, state: dict) -> dict:
        """Rename a checkpoint's keys to this model's: add or strip the base-model prefix as transformers does."""
        own = self.state_dict()
        prefix = self.base_model_prefix + "." if self.base_model_prefix else ""
        if not prefix:
            return state
        has_prefix = any(k.startswith(prefix) for k in state)
        wants_prefix = any(k.startswith(prefix) for k in own)
        if wants_prefix and not has_prefix:
            return {prefix + k: v for k, v in state.items()}
        if has_prefix and not wants_prefix:
            return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
        return state

    def load_hf_state_dict(self, state: dict) -> None:
        """Load ``state`` (transformers' keys) into the model, checking every key and shape.

        Raises:
            KeyError: a parameter of the model missing from ``state`` (heads excepted, see the class doc).
            ValueError: a tensor whose shape differs from the parameter's (both shapes named).
        """
        state = self._match_keys(state)
        own = self.state_dict()
        tied = set(self._tied_weights) if getattr(self.config, "tie_word_embeddings", True) else set()
        missing = [k for k in own if k not in state and k not in tied]
        heads = [k for k in missing if k.startswith(self._head_prefixes)] if self._head_prefixes else []
        missing = [k for k in missing if k not in heads]
        if missing:
            raise KeyError(f"the checkpoint lacks {len(missing)} of the model's weights: {missing[:8]}"
                           f"{' ...' if len(missing) > 8 else ''}")
        if heads:
            warnings.warn(f"Some weights of {type(self).__name__} were not in the checkpoint and are newly "
                          f"initialized: {heads}. Train the model before using it for predictions.", stacklevel=3)
        unexpected = [k for k in state if k not in own and not any(p in k for p in self._ignore_unexpected)]
        if unexpected:
            warnings.warn(f"Weights of the checkpoint not used by {type(self).__name__}: {unexpected[:8]}",
                          stacklevel=3)
        for key, param in own.items():
            if key not in state or key in tied:
                continue
            value = state[key]
            if tuple(value.shape) != tuple(param.shape):
                raise ValueError(f"size mismatch for {key}: copying a param with shape {list(value.shape)} from "
                                 f"checkpoint, the shape in current model is {list(param.shape)}.")
        with ember.no_grad():
            for key, param in own.items():
                if key in state and key not in tied:
                    param.copy_(state[key].to(param.dtype))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, config=None, dtype=None, torch_dtype=None,
                        **kwargs):
        """The model saved in a local folder: ``config.json`` and ``model.safetensors`` or ``pytorch_model.bin``.

        Args:
            config: a config to use instead of the folder's.
            dtype: the parameters' dtype (an ember dtype, a name, or "auto" for the config's);
                default float32. ``torch_dtype`` is its older name.
            kwargs: config overrides (``num_labels=4``, ...); hub arguments are ignored.

        Raises:
            OSError: no such folder, no config.json, or no weights file.
            KeyError or ValueError: a missing or mis-shaped weight (see ``load_hf_state_dict``).
        """
        folder = os.fspath(pretrained_model_name_or_path)
        for ignored in ("revision", "cache_dir", "trust_remote_code", "local_files_only", "token", "force_download",
                        "low_cpu_mem_usage", "device_map", "attn_implementation", "use_safetensors"):
            kwargs.pop(ignored, None)
        if not os.path.isdir(folder):
            raise OSError(f"{folder!r} is not a folder (ember_text loads local folders only; download the model "
                          "first, e.g. with huggingface_hub.snapshot_download)")
        if config is None:
            config = cls.config_class.from_pretrained(folder, **kwargs)
        if dtype is None:
            dtype = torch_dtype
        model = cls(config, *model_args)
        model.load_hf_state_dict(load_state_dict_from_folder(folder))
        target = resolve_dtype(dtype, config)
        if target is not None and target != ember.float32:
            model.to(target)
        model.eval()
        return model

    def save_pretrained(self, save_directory, safe_serialization: bool = True, **kwargs) -> None:
        """Write ``config.json`` and the weights (``model.safetensors`` by default); tied copies are left out."""
        save_directory = os.fspath(save_directory)
        if os.path.isfile(save_directory):
            raise NotADirectoryError(f"Provided path ({save_directory}) should be a directory, not a file")
        os.makedirs(save_directory, exist_ok=True)
        self.config.architectures = [type(self).__name__]
        self.config.save_pretrained(save_directory)
        state = self.state_dict()
        if getattr(self.config, "tie_word_embeddings", True):
            for name in self._tied_weights:
                state.pop(name, None)
        save_state_dict_to_folder(state, save_directory, safe_serialization)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
