"""``ember.cpu.amp``: torch.cpu.amp's deprecated spellings of ``ember.amp.autocast("cpu")``
and ``ember.amp.GradScaler("cpu")``, with torch's FutureWarning."""

from ..amp._deprecated import spellings

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = spellings("cpu")
