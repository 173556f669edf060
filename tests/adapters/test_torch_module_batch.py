"""Batched serving is causal across streams (issue 28): ``predict_batch`` of the torch-module wrapper
(adapters/torch_module.py) equals ``predict`` stream by stream, the state batched along its axis."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from streambench.adapters.contract import Frame
from streambench.adapters.torch_module import TorchModuleAdapter, TorchModuleOptions


class StepGru(nn.Module):
    """State mode: ``forward(x [B, D], h [1, B, H]) -> (logits [B, C], h')``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(4, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h


class ResettableGru(StepGru):
    def reset(self) -> None:
        return None


def _gru(max_batch_size: int, mode: str = "state") -> TorchModuleAdapter:
    options = TorchModuleOptions(
        factory="x:y",
        classes=("a", "b", "c"),
        input_dims={"audio": 4},
        max_batch_size=max_batch_size,
        state_batch_axis=1,
        mode=mode,  # type: ignore[arg-type]
    )
    return TorchModuleAdapter(options, module=ResettableGru())


def test_torch_module_batch_equals_predict_with_the_state_batched_along_its_axis() -> None:
    rng = np.random.default_rng(1)
    streams = [[Frame(i, 0.04 * (i + 1), {"audio": rng.normal(size=4).astype(np.float32)}) for i in range(6)]]
    streams += [
        [Frame(i, 0.04 * (i + 1), {"audio": rng.normal(size=4).astype(np.float32)}) for i in range(4)]
    ]
    single, batched = _gru(0), _gru(8)
    expected = []
    for frames in streams:
        single.reset_state()
        expected.append(np.stack([single.predict(f).scores for f in frames]))  # type: ignore[union-attr]
    got: list[list[np.ndarray]] = [[], []]
    for i in range(6):  # stream 1 joins at its first frame with a fresh (None) state, ends after 4
        items = [(7, streams[0][i])] + ([(9, streams[1][i - 2])] if 2 <= i < 6 else [])
        for (key, _), out in zip(items, batched.predict_batch(items), strict=True):
            got[0 if key == 7 else 1].append(out.scores)  # type: ignore[union-attr]
    for k in range(2):
        assert np.allclose(np.stack(got[k]), expected[k], atol=1e-6)
