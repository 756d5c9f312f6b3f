"""CTC decoders (torchaudio.models.decoder's result type): greedy and lexicon-free beam search."""

from ._ctc import CTCDecoder, CTCHypothesis, GreedyCTCDecoder, ctc_decoder

__all__ = ["CTCDecoder", "CTCHypothesis", "GreedyCTCDecoder", "ctc_decoder"]
