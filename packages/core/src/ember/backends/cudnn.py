"""``ember.backends.cudnn``: torch.backends.cudnn's flags, so the usual
``torch.backends.cudnn.benchmark = True`` line runs. ember's CUDA path does not call cuDNN,
so the flags are kept and read by nothing; defaults are those of a PyTorch build without
cuDNN (torch docs, "torch.backends")."""

enabled = True  # use cuDNN where it applies
benchmark = False  # pick convolution algorithms by timing them
benchmark_limit = None  # algorithms tried per convolution when benchmarking
deterministic = False  # deterministic algorithms only
allow_tf32 = True  # TF32 tensor cores in convolutions


def is_available() -> bool:
    """Whether cuDNN can be used: always False (ember's GPU kernels are its own)."""
    return False


def version():
    """cuDNN's version: None, as torch reports without cuDNN."""
    return None
