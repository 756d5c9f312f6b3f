"""Hugging Face-layout language models: BERT, GPT-2 and Llama, their configs, outputs, cache and generation."""

from .auto import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSequenceClassification
from .bert import BertForSequenceClassification, BertModel
from .cache import DynamicCache
from .configuration import BertConfig, GPT2Config, LlamaConfig, PretrainedConfig
from .decoding import DecodeBatch, DecodingSequence
from .gpt2 import GPT2LMHeadModel, GPT2Model
from .llama import LlamaForCausalLM, LlamaModel
from .modeling_utils import PreTrainedModel
from .outputs import ModelOutput
from .small import LSTMLanguageModel, PositionalEncoding, TextCNN, TransformerClassifier
from .streamers import TextIteratorStreamer, TextStreamer

__all__ = ["AutoConfig", "AutoModel", "AutoModelForCausalLM", "AutoModelForSequenceClassification", "BertConfig",
           "BertForSequenceClassification", "BertModel", "DecodeBatch", "DecodingSequence", "DynamicCache",
           "GPT2Config", "GPT2LMHeadModel", "GPT2Model", "LlamaConfig", "LlamaForCausalLM", "LlamaModel",
           "ModelOutput", "PreTrainedModel", "PretrainedConfig", "TextIteratorStreamer", "TextStreamer",
           "LSTMLanguageModel", "PositionalEncoding", "TextCNN", "TransformerClassifier"]
