"""A keyword spotter over 40-band frames: band-pattern matching, a leaky memory of a few frames, and a
softmax over background and the keywords. The weights are set by hand (the example has no training step):
each keyword's logit is the energy of its bands against the others', integrated over time."""

from __future__ import annotations

import torch
from torch import nn

KEYWORD_BANDS = {"yes": (4, 16), "no": (20, 32)}


class KeywordSpotter(nn.Module):
    """``forward(x [B, D], state [B, K]) -> (logits [B, C], state)``: state mode, batch 1 per frame."""

    def __init__(self, classes: tuple[str, ...], dims: int, memory: float = 0.8) -> None:
        super().__init__()
        keywords = [c for c in classes if c in KEYWORD_BANDS]
        self.match = nn.Linear(dims, len(keywords))
        with torch.no_grad():  # each keyword: the mean of its bands minus the mean of every other band
            self.match.weight.zero_()
            for k, word in enumerate(keywords):
                low, high = KEYWORD_BANDS[word]
                inside = torch.zeros(dims, dtype=torch.bool)
                inside[low:high] = True
                self.match.weight[k, inside] = 1.0 / inside.sum()
                self.match.weight[k, ~inside] = -1.0 / (~inside).sum()
            self.match.bias.fill_(-0.45)
        self.memory = memory
        self.columns = [classes.index(word) for word in keywords]
        self.num_classes = len(classes)
        self.keywords = len(keywords)

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, self.keywords)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        state = self.memory * state + (1 - self.memory) * self.match(x)
        logits = torch.zeros(x.shape[0], self.num_classes)
        logits[:, self.columns] = 12.0 * state
        return logits, state


def build(classes: tuple[str, ...], input_dims: dict[str, int], memory: float = 0.8) -> KeywordSpotter:
    """The spotter for the data's ``classes`` (background and any of yes / no) and payload sizes."""
    return KeywordSpotter(tuple(classes), sum(input_dims.values()), memory)
