"""OFFENDER (sandbox): a model that reads a file it must not, such as the data set's labels.

:class:`FileReaderAdapter` tries to read the file its option ``path`` names, once in its constructor and
again at every ``reset_state()``. Where it can (no sandbox, or a sandbox that leaves the file readable)
it cheats with what it read; where it cannot (the worker's Landlock sandbox,
``harness/execution/sandbox.py``) it is the offenders' honest per-frame model,
``sigmoid(gain * mean of the payloads)``.

How the cheat shows, by ``on_read``:

* ``"raise"`` (default): ``predict()`` raises ``RuntimeError("read the data: <path> (<n> bytes)")``, so a
  test sees at once that the file was readable;
* ``"bias"``: the event logit gains a bias computed from the file's bytes (between ``bias / 2`` and
  ``bias``), the quiet way a real cheat would use labels it found.

:attr:`FileReaderAdapter.read_outcome` says what happened at the last attempt either way.
"""

from __future__ import annotations

import zlib
from typing import ClassVar, Literal

from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, _two_class_scores, frame_feature

__all__ = ["FileReaderAdapter", "FileReaderOptions"]


class FileReaderOptions(OffenderOptions):
    """Options of :class:`FileReaderAdapter`."""

    path: str = Field(
        "",
        description="the file it tries to read (a data set's file, a result in the store). An option "
        "naming an existing path is made readable by the harness's sandbox (model files come so): path_hex",
    )
    path_hex: str = Field(
        "", description="the same path, hex-encoded: hidden from the harness, as a path hard-coded in a model"
    )
    on_read: Literal["raise", "bias"] = Field(
        default="raise", description="raise: predict() fails naming the file it read; bias: scores shift"
    )
    bias: float = Field(default=4.0, gt=0.0, description="the largest logit bias the file's content adds")


class FileReaderAdapter(_OffenderBase):
    """OFFENDER (sandbox): reads ``path`` in ``__init__`` and ``reset_state()``; cheats when it could."""

    Options: ClassVar[type[AdapterOptions]] = FileReaderOptions
    NAME: ClassVar[str] = "offender-file-reader"

    def __init__(self, options: FileReaderOptions | None = None) -> None:
        if options is None or not (options.path or options.path_hex):
            raise ValueError("offender-file-reader needs the option 'path' or 'path_hex' (the file to read)")
        super().__init__(options)
        self._path = options.path or bytes.fromhex(options.path_hex).decode()
        self._on_read = options.on_read
        self._bias_scale = float(options.bias)
        self._content: bytes | None = None
        self.read_ok = False
        self.read_outcome = "not tried"
        self._attempt()

    def _attempt(self) -> None:
        try:
            with open(self._path, "rb") as handle:
                content = handle.read()
        except OSError as exc:
            self.read_outcome = f"could not read {self._path}: {type(exc).__name__}: {exc.strerror or exc}"
            return  # keeps what an earlier attempt read, as a real cheat would
        self._content = content
        self.read_ok = True
        self.read_outcome = f"read {self._path} ({len(content)} bytes)"

    def _bias(self) -> float:
        if self._content is None:
            return 0.0
        return self._bias_scale * (0.5 + (zlib.crc32(self._content) % 1000) / 2000.0)

    def reset_state(self) -> None:
        self._attempt()

    def predict(self, frame: Frame) -> PredictOutput:
        if self._content is not None and self._on_read == "raise":
            raise RuntimeError(f"read the data: {self._path} ({len(self._content)} bytes)")
        logit = self._gain * frame_feature(frame.inputs) + self._bias()
        return Prediction(scores=_two_class_scores(logit, len(self._classes)))
