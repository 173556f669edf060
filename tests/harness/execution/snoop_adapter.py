"""A test fixture for issue 24, item 2 ("the worker knows only what the model needs"): an honest
constant model that, on each stream's first frame, searches its own process for what a sealed worker
must never hold — its command line, its environment, and every string reachable from the garbage
collector's containers — and reports what it found by raising (the test reads the recorded error).

The strings to look for reach it reversed and rot13-encoded in an option, so the needles themselves are
not what it finds; each needle is decoded into a local only while searching."""

from __future__ import annotations

import codecs
import gc
import os
import sys
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)


class SnoopOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None
    hidden: list[str] = Field(default_factory=list, description="rot13 of the reversed strings to look for")


class SnoopAdapter(StreamingAdapter):
    Options: ClassVar[type[AdapterOptions]] = SnoopOptions

    def __init__(self, options: SnoopOptions | None = None) -> None:
        opts = options if options is not None else SnoopOptions()
        super().__init__(opts)
        self._classes = opts.classes or ("background", "event")
        self._hidden = list(opts.hidden)
        self._looked = False
        self._scores = np.full(len(self._classes), 0.5, dtype=np.float32)
        self._info = AdapterInfo(name="snoop", classes=self._classes, modalities=("any",))

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._looked = False  # look again on each stream's first frame

    def predict(self, frame: Frame) -> PredictOutput:
        if not self._looked:
            self._looked = True
            found = _search([codecs.decode(h, "rot13")[::-1] for h in self._hidden])
            if found:
                raise RuntimeError("FOUND " + "; ".join(found))
        return Prediction(scores=self._scores)


def _search(needles: list[str]) -> list[str]:
    found = []
    places: list[tuple[str, str]] = [("argv", " ".join(sys.argv))]
    places += [(f"environ {key}", f"{key}={value}") for key, value in os.environ.items()]
    for where, text in places:
        found += [f"{needle!r} in {where}" for needle in needles if needle in text]
    own = {id(n) for n in needles}
    texts: set[str] = set()
    for obj in gc.get_objects():
        if obj is needles:
            continue
        if isinstance(obj, dict):
            items: Any = [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple)):
            items = obj
        else:
            continue
        for item in items:
            if type(item) is str and id(item) not in own:
                texts.add(item)
            elif type(item) is bytes:
                texts.add(item.decode("latin-1"))
    for text in texts:
        found += [f"{needle!r} in a reachable string" for needle in needles if needle in text]
    return found[:6]
