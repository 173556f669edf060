"""Sealed frames (DESIGN.md "Causality": causal by construction first, checked second).

A data set may hand out each frame's payload as a view of a whole-stream array (``blocks[i]`` of a
``[T, D]`` array): its ``.base`` then reaches every later frame, and a model could read the future
through it. The engine seals every frame before the timed loop: each array payload becomes an array of
its own (a C-contiguous copy that owns its memory, ``.base is None``) and is made read-only, so

* no attribute of a payload leads beyond the frame (``.base``, the buffer behind ``__array_interface__``,
  a ``memoryview`` of it: the copy's buffer holds that frame's values and nothing else);
* an adapter that writes into its input gets numpy's "assignment destination is read-only" error,
  recorded as its failure at that stream and frame, instead of corrupting the data the harness scores.

The copy is made once per frame while the frame list is built, outside the timed loop, so the per-frame
cost the engine measures does not grow. A payload that is not a numpy array (``None`` for a missing
modality) is passed on unchanged; the frame itself is a new :class:`~streambench.adapters.contract.Frame`.
"""

from __future__ import annotations

import abc
import warnings
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from streambench.adapters.contract import Frame, Stream

__all__ = ["SealedFeed", "frames_of", "seal", "seal_frames"]

# torch.from_numpy of a read-only payload warns that the tensor could be written; the harness hands out
# read-only payloads by design (a model that writes into one gets numpy's error, or torch's undefined
# behaviour if it writes through a tensor), so the warning says nothing new to the user
warnings.filterwarnings("ignore", message="The given NumPy array is not writable", category=UserWarning)


def seal(payload: object) -> object:
    """An array payload as a read-only array that owns its memory; anything else unchanged."""
    if not isinstance(payload, np.ndarray):
        return payload
    own = np.array(payload, copy=True, order="C")  # a fresh buffer: .base is None
    own.flags.writeable = False
    return own


def seal_frames(frames: Iterable[Frame]) -> list[Frame]:
    """Every frame with its payloads sealed (see the module docstring)."""
    return [
        Frame(
            index=frame.index,
            t=frame.t,
            inputs={name: seal(value) for name, value in frame.inputs.items()},
            timestamps=frame.timestamps,
        )
        for frame in frames
    ]


class SealedFeed(abc.ABC):
    """Frames that arrive already sealed and one at a time (the sealed worker's feed,
    :class:`streambench.harness.execution.sealed_feed.ParentFeed`): sized, iterated once, never held as a
    list. A stream whose ``frame_source`` returns one is fed as it comes."""

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[Frame]: ...


def frames_of(stream: Stream) -> Sequence[Frame] | SealedFeed:
    """The frames the engine feeds: a :class:`SealedFeed` as it is, anything else sealed into a list."""
    source = stream.frame_source()
    if isinstance(source, SealedFeed):
        return source
    return seal_frames(source)
