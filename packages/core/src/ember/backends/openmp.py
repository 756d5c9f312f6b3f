"""``ember.backends.openmp``: ember runs no OpenMP runtime of its own (numpy's BLAS threads
are set with ``ember.set_num_threads``): ``is_available()`` is False (torch's CPU build says
True)."""


def is_available() -> bool:
    """Whether ember was built with OpenMP: False."""
    return False
