"""ember.backends.cudnn: torch.backends.cudnn's flags and defaults."""

import torch

import ember


def test_cudnn_flags_exist_with_torch_defaults():
    # programs written for PyTorch set these; ember keeps them (no cuDNN behind them)
    for flag in ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit"):
        assert getattr(ember.backends.cudnn, flag) == getattr(torch.backends.cudnn, flag), flag
    assert ember.backends.cudnn.is_available() is torch.backends.cudnn.is_available() is False
    assert ember.backends.cudnn.version() is None
