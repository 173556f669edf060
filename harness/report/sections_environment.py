"""The per-run section about the environment a run was measured in: the manifest item by item (seed 004
§6.2.2's lock list of what affects timing), its fingerprint, and the threads (docs/results.md "The
report")."""

from __future__ import annotations

from streambench.harness.instruments.manifest import EnvironmentManifest
from streambench.harness.instruments.threads import thread_summary
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.html import Markup, absent, concat, kv_table, kv_value, markup, value_or_null
from streambench.harness.results.files import EnvironmentRecord

__all__ = ["environment_section"]


def _environment_source(bundle: RunBundle) -> tuple[EnvironmentManifest, str] | None:
    """The manifest and fingerprint to show: the online result's, else the first other result that
    recorded one (a causality-only run has its own)."""
    if bundle.result is not None:
        return bundle.result.environment, bundle.result.fingerprint
    for result in bundle.results.values():
        if isinstance(result, EnvironmentRecord) and result.environment is not None and result.fingerprint:
            return result.environment, result.fingerprint
    return None


def environment_section(bundle: RunBundle) -> Markup:
    """The environment manifest item by item (the lock list of what affects timing), threads and clock;
    a mapping item (packages, flags) as a key/value list."""
    source = _environment_source(bundle)
    if source is None:
        return absent(bundle.result_reason)
    environment, fingerprint = source
    rows = []
    for name, item in environment:
        if hasattr(item, "value"):
            rows.append((name, value_or_null(item.value, item.reason)))
        else:
            rows.append((name, kv_value(item)))
    parts = [
        markup("<p>Fingerprint <code>{}</code> (hash of the items that affect timing).</p>", fingerprint),
        markup("<details open><summary>Manifest</summary>{}</details>", kv_table(rows)),
    ]
    if bundle.result is not None:
        threads = bundle.result.threads
        thread_rows = [
            ("intra-op threads", f"{threads.intra_op} (before: {threads.intra_op_before})"),
            ("inter-op threads", f"{threads.inter_op} (before: {threads.inter_op_before})"),
            ("requested", kv_value(threads.requested.model_dump(mode="json"))),
            ("in the adapter's process", thread_summary(threads)),
        ]
        parts.append(markup("<details><summary>Threads</summary>{}</details>", kv_table(thread_rows)))
    return concat(parts)
