"""torchtext.functional: to_tensor, truncate, add_token, str_to_int on token-id lists."""

from __future__ import annotations

import ember
from ember.nn.utils.rnn import pad_sequence

__all__ = ["to_tensor", "truncate", "add_token", "str_to_int"]


def _is_nested(x) -> bool:
    return isinstance(x, list) and len(x) > 0 and isinstance(x[0], list)


def to_tensor(input, padding_value: int | None = None, dtype=ember.long):
    """A tensor of token ids of ``dtype`` (default int64) from ``input``: ``[L]`` from a list,
    ``[N, L_max]`` from a list of lists (torchtext.functional.to_tensor).

    Rows of a batch are right-padded with ``padding_value``; without one, a ragged batch is an
    error (the rows must have one length).

    Raises:
        TypeError: input that is neither a list of ints nor a list of such lists.
        ValueError: a ragged batch without ``padding_value``.
    """
    if _is_nested(input):
        if padding_value is None:
            lengths = {len(row) for row in input}
            if len(lengths) > 1:
                raise ValueError(f"to_tensor: the rows have different lengths {sorted(lengths)}; give "
                                 "padding_value= to pad them")
            return ember.tensor(input, dtype=dtype)
        return pad_sequence([ember.tensor(ids, dtype=dtype) for ids in input], batch_first=True,
                            padding_value=float(padding_value))
    if isinstance(input, list) and (len(input) == 0 or isinstance(input[0], int)):
        return ember.tensor(input, dtype=dtype)
    raise TypeError("Input type not supported")


def truncate(input, max_seq_len: int):
    """Keep the first ``max_seq_len`` tokens of ``input``, a list (or of each list of a batch)
    (torchtext.functional.truncate). Raises TypeError for another input.
    """
    if _is_nested(input):
        return [ids[:max_seq_len] for ids in input]
    if isinstance(input, list):
        return input[:max_seq_len]
    raise TypeError("Input type not supported")


def add_token(input, token_id, begin: bool = True):
    """Put ``token_id`` (an int, or a string for string tokens) at the start (``begin``) or end of
    ``input``, a list or each list of a batch (torchtext.functional.add_token). Raises TypeError
    for another input.
    """
    if _is_nested(input):
        return [add_token(ids, token_id, begin) for ids in input]
    if isinstance(input, list):
        return [token_id, *input] if begin else [*input, token_id]
    raise TypeError("Input type not supported")


def str_to_int(input):
    """Convert the string tokens (digits) of ``input``, a list or a batch of lists, to ints
    (torchtext.functional.str_to_int). Raises TypeError for another input, ValueError for a token
    that is not an integer.
    """
    if _is_nested(input):
        return [[int(x) for x in row] for row in input]
    if isinstance(input, list):
        return [int(x) for x in input]
    raise TypeError("Input type not supported")
