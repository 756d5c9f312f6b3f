"""Vocab: a token <-> index table (torchtext.vocab.Vocab, whose semantics and errors it follows)."""

from __future__ import annotations

from ember import nn


class Vocab(nn.Module):
    """Maps tokens to indices and back; calling it maps a list of tokens to their indices.

    Args:
        tokens: the tokens in index order (index ``i`` is ``tokens[i]``). torchtext builds a Vocab
            from its C++ object; here the list itself is given (``vocab()`` and
            ``build_vocab_from_iterator`` make one for you).

    Raises:
        RuntimeError: a token appears twice (as torchtext's C++ constructor).
    """

    def __init__(self, tokens=()):
        super().__init__()
        self._itos: list[str] = []
        self._stoi: dict[str, int] = {}
        self._default_index: int | None = None
        for token in tokens:
            if token in self._stoi:
                raise RuntimeError(f"Duplicate token found in tokens list: {token}")
            self._stoi[token] = len(self._itos)
            self._itos.append(token)

    @property
    def is_jitable(self) -> bool:
        return False

    def forward(self, tokens: list[str]) -> list[int]:
        """The indices of ``tokens`` (``lookup_indices``)."""
        return self.lookup_indices(tokens)

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: str) -> bool:
        return token in self._stoi

    def __getitem__(self, token: str) -> int:
        """The index of ``token``; the default index for an unknown token.

        Raises:
            RuntimeError: the token is unknown and no default index is set.
        """
        index = self._stoi.get(token)
        if index is not None:
            return index
        if self._default_index is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self._default_index

    def set_default_index(self, index: int | None) -> None:
        """The index returned for tokens outside the vocabulary (None: unknown tokens raise RuntimeError)."""
        self._default_index = index

    def get_default_index(self) -> int | None:
        return self._default_index

    def insert_token(self, token: str, index: int) -> None:
        """Insert ``token`` at ``index``, shifting the later tokens up by one.

        Raises:
            RuntimeError: the token is already present, or ``index`` is outside ``[0, len(vocab)]``.
        """
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: {self._stoi[token]}")
        if not 0 <= index <= len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds for vocab of size {len(self._itos)}")
        self._itos.insert(index, token)
        self._stoi = {t: i for i, t in enumerate(self._itos)}

    def append_token(self, token: str) -> None:
        """Add ``token`` at the end. Raises RuntimeError if it is already present."""
        if token in self._stoi:
            raise RuntimeError(f"Token {token} already exists in the Vocab with index: {self._stoi[token]}")
        self._stoi[token] = len(self._itos)
        self._itos.append(token)

    def lookup_token(self, index: int) -> str:
        """The token at ``index``. Raises RuntimeError if ``index`` is outside ``[0, len(vocab))``."""
        if not 0 <= index < len(self._itos):
            raise RuntimeError(f"Specified index {index} is out of bounds of the size of itos dictionary: "
                               f"{len(self._itos)}.")
        return self._itos[index]

    def lookup_tokens(self, indices: list[int]) -> list[str]:
        return [self.lookup_token(i) for i in indices]

    def lookup_indices(self, tokens: list[str]) -> list[int]:
        return [self[t] for t in tokens]

    def get_stoi(self) -> dict[str, int]:
        """A copy of the token -> index dict."""
        return dict(self._stoi)

    def get_itos(self) -> list[str]:
        """A copy of the index -> token list."""
        return list(self._itos)

    def __prepare_scriptable__(self):
        return self

    def extra_repr(self) -> str:
        return f"size={len(self)}, default_index={self._default_index}"
