"""The parent's side of the sealed feed (the worker's side: harness/execution/sealed_feed.py):
the streams queued for the worker, each frame handed over when the worker asks for it and timed on this
process's clock (:class:`~streambench.harness.execution.host_timing.FeedStamps`), and the opaque token under
which each stream is fed (the worker never learns a stream id; a stream fed twice gets two tokens).

At a worker's start the queue holds the floor's noise stream (:func:`calibration_stream`), then the
warm-up stream; afterwards one stream per request. :meth:`FrameServer.start_figures` reads the floor
and the start's phases off their stamps."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from streambench.adapters.contract import Stream
from streambench.harness.execution.host_timing import FeedStamps, PipeFloor, StartTimes, floor_of, now_ns
from streambench.harness.execution.lockstep import Turn
from streambench.harness.execution.sealed_feed import calibration_stream, encode_frame, stream_header

__all__ = ["FrameServer", "PastTheEnd"]


class PastTheEnd(Exception):
    """The worker asked for a frame no queued stream has."""


class FrameServer:
    """Queued streams' encoded frames and stamps, and the token -> stream id map of the last request."""

    def __init__(self) -> None:
        self._feeds: list[tuple[list[bytes], FeedStamps]] = []
        self._served = 0
        self._tokens: dict[str, str] = {}
        self._calibration: FeedStamps | None = None
        self._warmup: FeedStamps | None = None
        self.turn: Turn | None = None
        """Fed in turn with another worker's frames (harness/execution/lockstep.py); None: at once."""
        self.cpu: Callable[[], int | None] | None = None
        """The worker's process CPU time, read around the floor's frames; None: not read."""

    def queue(self, stream: Stream, then: bool = False) -> FeedStamps:
        """Encode ``stream``'s frames now (before its first frame is fed); ``then``: after the streams
        already queued (a start's floor, then its warm-up), else in their place."""
        stamps = FeedStamps(request_ns=now_ns())
        frames = [encode_frame(frame) for frame in stream.frames()]
        if not then:
            self._feeds, self._served = [], 0
        self._feeds.append((frames, stamps))
        return stamps

    def header(self, stream: Stream) -> dict[str, Any]:
        """The stream's header under a fresh opaque token, remembered for :meth:`stream_id`."""
        token = secrets.token_hex(8)
        self._tokens = {token: stream.stream_id}
        return stream_header(token, stream.frame_times, stream.t0, stream.segment_length_s)

    def stream_id(self, token: str) -> str:
        """The stream id behind a token the worker named (an error's), or the token itself."""
        return self._tokens.get(token, token)

    def start(self, sample: Stream, warmup: Stream | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A new worker's queue: the floor's noise frames shaped like ``sample``'s, then ``warmup``'s;
        their headers (calibration, warm-up or None) for the worker's spec."""
        self._feeds, self._served = [], 0
        noise = calibration_stream(sample)
        self._calibration = self.queue(noise, then=True)
        self._warmup = self.queue(warmup, then=True) if warmup is not None else None
        calibration = stream_header(secrets.token_hex(8), noise.frame_times, noise.t0, None)
        header = None
        if warmup is not None:
            header = stream_header(secrets.token_hex(8), warmup.frame_times, warmup.t0, None)
        return calibration, header

    def next_frame(self, commit: bytes = b"") -> bytes:
        """The next frame to send, stamped (the request is the end of the frame before it; ``commit``:
        the output of that frame, which came with the request); a prefix that ended without DONE (a
        warm-up slice, the FLOPs frame) gives way to the next stream."""
        asked = now_ns()
        while self._feeds and self._served >= len(self._feeds[0][0]):
            self._feeds.pop(0)
            self._served = 0
        if not self._feeds:
            raise PastTheEnd("the worker asked for a frame past the stream's end")
        frames, stamps = self._feeds[0]
        if not stamps.acks and stamps is self._calibration and self.cpu is not None:
            stamps.cpu_first_ns = self.cpu()
        stamps.acks.append(asked)
        stamps.commits.append(commit)
        if self.turn is not None:  # the frame before has ended: the other side's turn, then ours
            self.turn.ended()
            self.turn.wait()
        stamps.sends.append(now_ns())
        self._served += 1
        return frames[self._served - 1]

    def done(self, commit: bytes = b"") -> None:
        """The worker took the last frame's output (``commit``): stamp the stream's end; the next one is
        fed next."""
        if self._feeds:
            _, stamps = self._feeds.pop(0)
            stamps.done_ns = now_ns()
            if stamps is self._calibration and self.cpu is not None:
                stamps.cpu_done_ns = self.cpu()
            stamps.commits.append(commit)
        self._served = 0
        if self.turn is not None:
            self.turn.ended()

    def start_figures(self, started: int, ready: int) -> tuple[PipeFloor | None, StartTimes]:
        """The floor (from the calibration stream's round trips) and the start's phases on this clock:
        process and imports until the floor's first frame was asked for, the model's import and
        construction until the warm-up's first frame was, the warm-up until ``ready``."""
        calibration, warmup = self._calibration, self._warmup
        host = calibration.host_ns() if calibration is not None else None
        first, last = (calibration.cpu_first_ns, calibration.cpu_done_ns) if calibration else (None, None)
        cpu = last - first if first is not None and last is not None else None
        floor = floor_of(host, cpu) if host is not None and host.size else None
        first = calibration.acks[0] if calibration is not None and calibration.acks else None
        calibrated = calibration.done_ns if calibration is not None else None
        warm = warmup.acks[0] if warmup is not None and warmup.acks else None
        return floor, StartTimes(
            process_s=(first - started) / 1e9 if first is not None else None,
            construction_s=(warm - calibrated) / 1e9 if warm is not None and calibrated is not None else None,
            warmup_s=(ready - warm) / 1e9 if warm is not None else None,
        )
