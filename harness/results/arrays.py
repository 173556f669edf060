"""Reading a run's ``arrays.npz`` (written by :func:`streambench.harness.results.files.write_run`): every
stream's recording (``s<i>/...``) and every failed stream's clock and labels (``f<i>/...``),
each array checked at the edge so that a bad file fails here, naming it, not later far from it."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from streambench.protocols.recording import FailedStream, StreamRecording, failed_from_arrays, from_arrays

__all__ = ["read_arrays"]


def read_arrays(path: Path, error: type[Exception]) -> tuple[list[StreamRecording], list[FailedStream]]:
    """The recordings and the failed streams of an ``arrays.npz``, checked against the shapes and types
    the engine records; never unpickles (an object array is refused). Whatever is wrong raises ``error``
    naming the file, and the stream and array at fault where there is one."""
    import tokenize  # only for the error types of corrupted bytes: a bad .npy header, a bad deflate stream
    import zlib

    try:
        with np.load(path, allow_pickle=False) as arrays:
            recordings = from_arrays(arrays)
            failed = failed_from_arrays(arrays)
            names = list(arrays.files)
    except FileNotFoundError:
        raise error(f"{path}: no such arrays file") from None
    # corrupted bytes surface as BadZipFile (bad CRC, bad header), zlib.error (bad deflate data), EOFError
    # (truncated member), NotImplementedError (a flipped compression method or zip version), TokenError (a
    # flipped .npy header), MemoryError (a header claiming a huge shape); a well-formed file with the wrong
    # arrays as KeyError, TypeError or IndexError
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        EOFError,
        NotImplementedError,
        MemoryError,
        zipfile.BadZipFile,
        zlib.error,
        tokenize.TokenError,
    ) as exc:
        raise error(f"{path}: not a readable arrays file ({type(exc).__name__}: {exc})") from None
    # validated here, at the edge: arrays of other shapes or types would only fail later, far from the file
    numbered = {f"s{i}" for i in range(len(recordings))} | {f"f{i}" for i in range(len(failed))}
    stray = sorted(name for name in names if name.split("/", 1)[0] not in numbered)
    if stray:
        known = f"s0 to s{len(recordings) - 1}" if recordings else "none: there is no s0/meta"
        raise error(
            f"{path}: array {stray[0]!r} belongs to no stream (each stream s<i> has an s<i>/meta; "
            f"streams here: {known})"
        )
    # name: (dtype kinds, dimensions, length of the first dimension: frames T or predictions P)
    layout = {
        "frame_times_ns": ("iu", 1, "T"),
        "latency_ns": ("iu", 1, "T"),
        "labels": ("biu", 2, "T"),
        "emitted_at": ("iu", 1, "P"),
        "refers_to": ("iu", 1, "P"),
        "scores": ("f", 2, "P"),
        "paced_start_ns": ("iu", 1, "T"),
        "device_ns": ("iu", 1, "T"),
        "server_ns": ("iu", 1, "T"),
        "cpu_ns": ("iu", 1, "T"),
        "host_ns": ("iu", 1, "T"),
    }
    for i, rec in enumerate(recordings):
        sizes = {"T": np.shape(rec.frame_times_ns)[:1], "P": np.shape(rec.emitted_at)[:1]}
        for name, (kinds, ndim, length) in layout.items():
            value = getattr(rec, name)
            if value is None:
                continue
            if value.dtype.kind not in kinds or value.ndim != ndim or value.shape[:1] != sizes[length]:
                raise error(
                    f"{path}: stream s{i} ({rec.stream_id!r}): s{i}/{name} has dtype {value.dtype} and shape "
                    f"{value.shape}, expected {ndim} dimensions of kind {kinds!r} and {length} = "
                    f"{sizes[length][0] if sizes[length] else '?'} rows"
                )
    for i, item in enumerate(failed):  # a failed stream: its clock and labels, no output
        times, labels = item.frame_times_ns, item.labels
        if times.dtype.kind not in "iu" or times.ndim != 1 or times.size == 0:
            raise error(
                f"{path}: failed stream f{i} ({item.stream_id!r}): f{i}/frame_times_ns has dtype "
                f"{times.dtype} and shape {times.shape}, expected a non-empty 1-D integer array"
            )
        if labels.dtype.kind not in "biu" or labels.ndim != 2 or labels.shape[0] != times.size:
            raise error(
                f"{path}: failed stream f{i} ({item.stream_id!r}): f{i}/labels has dtype {labels.dtype} and "
                f"shape {labels.shape}, expected 2 dimensions of kind 'biu' and {times.size} rows"
            )
        item.labels = labels.astype(bool)
    return recordings, failed
