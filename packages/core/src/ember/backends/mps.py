"""``ember.backends.mps``: Apple's Metal backend, which ember does not have (torch docs,
"torch.backends.mps"): both queries answer False, as torch built without MPS does."""


def is_available() -> bool:
    """Whether an MPS device can be used: False."""
    return False


def is_built() -> bool:
    """Whether ember was built with MPS: False."""
    return False
