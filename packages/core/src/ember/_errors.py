"""Errors of torch's top level that ember raises too."""


class OutOfMemoryError(RuntimeError):
    """An allocation on a device failed for want of memory (torch.OutOfMemoryError, also
    ``ember.cuda.OutOfMemoryError``). A RuntimeError, so ``except RuntimeError`` still catches
    it; the message names the request's size and the device's total, free, allocated and
    reserved bytes."""
