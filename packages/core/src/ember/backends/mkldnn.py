"""``ember.backends.mkldnn``: torch.backends.mkldnn's flags. ember's CPU kernels are numpy's
and its own, not oneDNN: ``is_available()`` is False (torch's CPU build says True); the
flags are kept so that scripts setting them run, and are read by nothing."""

import contextlib

enabled = True
deterministic = False
allow_tf32 = False


def is_available() -> bool:
    """Whether oneDNN (MKL-DNN) is used: False."""
    return False


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True):
    """Set the flags for the block, as torch.backends.mkldnn.flags does."""
    global_names = globals()
    saved = {k: global_names[k] for k in ("enabled", "deterministic", "allow_tf32")}
    global_names.update(enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        global_names.update(saved)
