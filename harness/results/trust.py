"""What of the sealed, sandboxed worker a run did without (DESIGN.md, "Causality": "where that cannot be
enforced, the result says so"): each gap a reason a figure may be the model's word, not the harness's.

The full measure is a sealed worker (the data, its labels and the seed held by the harness, frames fed one
at a time), sandboxed (the data set, the results store and other processes out of its reach) that may
start no process (harness/execution/no_processes.py). A run without one of them, by choice
(``--no-sealed``, ``--sandbox off``, ``--in-process``) or because the machine lacks it (no Landlock, no
seccomp), says so on its verdict lines, in ``--json``, in its report, and in the execution label that
``compare`` refuses to mix (:func:`execution_label`).
"""

from __future__ import annotations

from streambench.harness.execution.sandbox import SandboxRecord

__all__ = ["execution_label", "trust_gaps"]

_PROCESSES_ALLOWED = "new processes allowed"


def trust_gaps(mode: str, sandbox: SandboxRecord | None) -> list[str]:
    """One sentence per missing safeguard of a run whose adapter ran in ``mode`` with ``sandbox``."""
    if mode == "in-process":
        return ["in-process run (--in-process): the model shared the harness's clock, data and labels"]
    if mode == "isolated":
        return [
            "not sealed (--no-sealed): the model's worker built the data set itself, its labels and seed "
            "included, and timed itself: every figure is the worker's word"
        ]
    if sandbox is None:  # a sealed run recorded before the sandbox
        return []
    gaps = []
    if sandbox.status == "unsandboxed":
        gaps.append(
            f"unsandboxed ({sandbox.reason or 'no reason recorded'}): the model could read the data set, its "
            "labels and the results store"
        )
    if sandbox.processes is not None and sandbox.processes.startswith(_PROCESSES_ALLOWED):
        gaps.append(f"{sandbox.processes}: CPU the model spent in them was not counted")
    return gaps


def execution_label(mode: str, sandbox: SandboxRecord | None) -> str:
    """Where the adapter ran, and what of the sandbox it lacked: ``sealed``, ``sealed, unsandboxed``,
    ``sealed, processes allowed``, ``isolated``, ``in-process`` (runs of two labels do not compare)."""
    if mode != "sealed" or sandbox is None:
        return mode
    lacks = []
    if sandbox.status == "unsandboxed":
        lacks.append("unsandboxed")
    if sandbox.processes is not None and sandbox.processes.startswith(_PROCESSES_ALLOWED):
        lacks.append("processes allowed")
    return ", ".join([mode, *lacks])
