"""A 30 frames/s video classifier for examples/video (``--adapter torch-module``, state mode): is a bright
object in the frame? The share of bright pixels, smoothed over a few frames, against a threshold; the
weights are set by hand (the example has no training step). :func:`build` sizes it from the data."""

from __future__ import annotations

import torch
from torch import nn


class FlashDetector(nn.Module):
    """``forward(x [B, H*W*3] uint8 values as float, state [B, 1]) -> (logits [B, 2], state)``."""

    def __init__(self, flash: int, num_classes: int, memory: float = 0.5) -> None:
        super().__init__()
        self.flash, self.num_classes, self.memory = flash, num_classes, memory

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, 1)

    def forward(self, x: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        bright = (x > 160).float().mean(dim=1, keepdim=True)  # a 16 x 16 square: 8 % of a 64 x 48 frame
        state = self.memory * state + (1 - self.memory) * bright
        logits = torch.zeros(x.shape[0], self.num_classes)
        logits[:, self.flash] = 200.0 * (state[:, 0] - 0.03)
        return logits, state


def build(classes: tuple[str, ...], input_dims: dict[str, int]) -> FlashDetector:
    """The detector for the data's classes (background and ``flash``)."""
    return FlashDetector(list(classes).index("flash"), len(classes))
