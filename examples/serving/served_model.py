"""The model behind the example servers (websocket_server.py, grpc_server.py): one session's model state,
answering one frame at a time with its own time of the model (``model_ns``, the server's model-only
figure), in the reply format of docs/serving.md.

Replace :class:`SessionModel` with your own model: a fresh state per session, ``answer`` per frame.
Here it is a streambench adapter (default: the causal reference model), built once per session.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from streambench import Frame, Prediction
from streambench.adapters.registry import create_adapter


class SessionModel:
    """One session (one stream): a fresh model state, fed frame by frame."""

    def __init__(self, adapter: str = "reference", options: dict[str, Any] | None = None) -> None:
        self.model = create_adapter(adapter, options)

    def describe(self) -> dict[str, Any]:
        """What the ``ready`` message says: the model's name and its classes, in order."""
        return {"model": self.model.info.name, "classes": list(self.model.info.classes)}

    def answer(self, index: int, t: float, inputs: dict[str, np.ndarray | None]) -> dict[str, Any]:
        """The reply to one frame: its predictions and the model's own time on it (ns)."""
        start = time.perf_counter_ns()
        try:
            out = self.model.predict(Frame(index=index, t=t, inputs=inputs))
        except Exception as exc:  # the model failed: the client records it at this frame
            return {"index": index, "error": f"{type(exc).__name__}: {exc}"}
        model_ns = time.perf_counter_ns() - start
        outputs = [] if out is None else [out] if isinstance(out, Prediction) else out
        predictions = [
            {"scores": np.asarray(p.scores, dtype=np.float32).tolist(), "refers_to": p.refers_to}
            for p in outputs
        ]
        return {"index": index, "predictions": predictions, "model_ns": model_ns}
