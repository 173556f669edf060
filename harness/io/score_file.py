"""Detection score files in seed 002's format: one ``- - real 0.85`` / ``- - fake 0.23`` line per sample.

Seed 002 (``seeds/002_b79c7f066c0f6558.txt``) "File Format for Saved Scores": four fields separated
by whitespace — two placeholder fields (written as ``-``), the key ``real`` (label 1, bona fide) or
``fake`` (label 0, spoof), and the model's score (higher = more likely real). The seed defines nothing
else, so the reader is strict about everything but whitespace:

- fields may be separated by any run of spaces or tabs, and leading/trailing whitespace is ignored;
- blank (whitespace-only) lines are skipped, e.g. a trailing empty line;
- lines may end in ``\n``, ``\r\n`` or ``\r``, and a leading UTF-8 byte-order mark is ignored;
- the placeholder fields are not interpreted (other tools put speaker and utterance ids there);
- anything else is a :class:`ScoreFileError` naming the file and the line: a wrong number of fields
  (this includes ``#`` comments and headers, which the format does not have), a key other than
  ``real`` / ``fake`` (case-sensitive), an unparsable score, a NaN or infinite score; and a file
  without any score line ("no samples").

The writer produces exactly the seed's layout with the shortest text that reads back to the same
float64, and replaces the target atomically (temporary file in the same directory + ``os.replace``).
"""

from __future__ import annotations

import math
import os

import numpy as np
import numpy.typing as npt

from streambench.harness.io.atomic import atomic_write_text
from streambench.harness.io.lines import LineFileError, fields_of_lines

LABEL_OF_KEY = {"real": 1, "fake": 0}


class ScoreFileError(LineFileError):
    """A score file that does not follow seed 002's format; ``path`` and ``line`` (1-based) say where."""


def _parse_score(token: str) -> float | None:
    """The float of ``token``, or None if it is not a plain decimal or exponent number."""
    if "_" in token:  # float() accepts digit separators ("1_000"); a score file should not
        return None
    try:
        return float(token)
    except ValueError:
        return None


def read_score_file(path: str | os.PathLike[str]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64]]:
    """``(labels, scores)`` of a seed-002 score file: int8 labels (1 = real, 0 = fake), float64 scores.

    Raises :class:`ScoreFileError` (a ``ValueError``) naming the file and line for a malformed line,
    and naming the file when it holds no samples or is not UTF-8 text.
    """
    labels: list[int] = []
    scores: list[float] = []
    for number, fields in fields_of_lines(path, 4, "'- - real|fake SCORE'", ScoreFileError):
        key, token = fields[2], fields[3]
        if key not in LABEL_OF_KEY:
            raise ScoreFileError(path, number, f"unknown label {key!r}, expected 'real' or 'fake'")
        score = _parse_score(token)
        if score is None:
            raise ScoreFileError(path, number, f"score {token!r} is not a number")
        if math.isnan(score):
            raise ScoreFileError(path, number, f"score is NaN ({token!r})")
        if math.isinf(score):
            raise ScoreFileError(path, number, f"score is infinite ({token!r})")
        labels.append(LABEL_OF_KEY[key])
        scores.append(score)
    if not labels:
        raise ScoreFileError(path, None, "no samples: the file has no score lines")
    return np.array(labels, dtype=np.int8), np.array(scores, dtype=np.float64)


def write_score_file(path: str | os.PathLike[str], labels: npt.ArrayLike, scores: npt.ArrayLike) -> None:
    """Write ``labels`` (1 = real, 0 = fake) and ``scores`` as a seed-002 score file, atomically.

    One ``- - real|fake SCORE`` line per sample, each ending in a newline; the score is written with
    Python's shortest round-trip repr of its float64 value, so :func:`read_score_file` returns the same
    numbers. Refuses (``ValueError`` naming the argument) labels other than 0/1, NaN/Inf scores, unequal
    lengths and empty input, since the reader would reject such a file.
    """
    y = np.asarray(labels)
    s = np.asarray(scores)
    if y.ndim != 1 or s.ndim != 1:
        raise ValueError(f"labels and scores must be 1-D arrays, got shapes {y.shape} and {s.shape}")
    if y.shape != s.shape:
        raise ValueError(f"scores has {s.shape[0]} entries, expected one per label ({y.shape[0]})")
    if y.size == 0:
        raise ValueError("labels is empty: there are no samples to write")
    if not (np.issubdtype(s.dtype, np.integer) or np.issubdtype(s.dtype, np.floating)):
        raise ValueError(f"scores must be real numbers, got dtype {s.dtype}")
    s64 = s.astype(np.float64)
    if not np.isfinite(s64).all():
        i = int(np.argmax(~np.isfinite(s64)))
        raise ValueError(f"scores contains {'NaN' if np.isnan(s64[i]) else 'Inf'} at index {i}")
    numeric = np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)
    if y.dtype != np.bool_ and not numeric:
        raise ValueError(f"labels must be bool or 0/1 numbers, got dtype {y.dtype}")
    bad = (y != 0) & (y != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"labels must contain only 0 (fake) and 1 (real); found {y[i].item()!r} at index {i}"
        )
    keys = np.where(y.astype(np.bool_), "real", "fake").tolist()
    text = "".join(f"- - {k} {v!r}\n" for k, v in zip(keys, s64.tolist(), strict=True))
    atomic_write_text(path, text)
