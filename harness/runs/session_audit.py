"""Runs the online session's own audit (the plan and the verdict are pure:
protocols/session_audit.py): replayed and occluded copies of scored streams, fed to the same sealed
worker at random positions among the scored streams, each under a fresh token like any stream.

The variants are not scored and not written to the event log: a resumed run audits the streams its
own session runs. Their recordings are compared with the scored ones after the last stream.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence

from streambench.adapters.contract import Stream
from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.runs.causality.variants import occlude
from streambench.protocols.recording import StreamRecording
from streambench.protocols.session_audit import (
    AuditVariant,
    SessionAuditConfig,
    SessionAuditResult,
    judge_session_audit,
    plan_session_audit,
)

__all__ = ["SessionAuditor"]


class SessionAuditor:
    """The audit of one session: ``before(k)`` (the executor's hook) feeds the variants planned before
    the ``k``-th stream the session runs; :meth:`judge` compares them with what was scored."""

    def __init__(
        self,
        run_variant: Callable[[Stream], StreamRecording],
        streams: Mapping[str, Stream],
        todo: Sequence[str],
        config: SessionAuditConfig | None = None,
    ) -> None:
        self.config = config or SessionAuditConfig()
        self.seed = secrets.randbits(63)  # drawn per run in this process; written to result.json after
        self._run = run_variant
        self._streams = streams
        pairs = [(stream_id, streams[stream_id].num_frames) for stream_id in todo]
        self.variants = plan_session_audit(pairs, self.seed, self.config)
        self.outcomes: list[tuple[AuditVariant, StreamRecording | str]] = []

    def before(self, k: int) -> None:
        for variant in self.variants:
            if variant.before == k:
                self.outcomes.append((variant, self._feed(variant)))

    def _feed(self, variant: AuditVariant) -> StreamRecording | str:
        source = self._streams[variant.source]
        stream = source if variant.cut is None else self._occluded(source, variant.cut)
        try:
            return self._run(stream)
        except AdapterError as exc:
            return f"frame {exc.frame}: {exc.problem}"

    def _occluded(self, source: Stream, cut: int) -> Stream:
        """``source`` with another stream's frames after ``cut`` (real data, so the copy does not give
        itself away by its content); noise where no other stream is as long."""
        donors = [s for s in self._streams.values() if s is not source and s.num_frames >= source.num_frames]
        if not donors:
            return occlude(source, cut, "noise", seed=self.seed)
        donor = donors[(self.seed + cut) % len(donors)]
        return occlude(source, cut, "other_stream", donor=donor)

    def judge(
        self, recordings: Sequence[StreamRecording], failed: Mapping[str, tuple[int | None, str]]
    ) -> SessionAuditResult:
        scored = {r.stream_id: r for r in recordings}
        return judge_session_audit(scored, failed, self.outcomes, self.config, self.seed)
