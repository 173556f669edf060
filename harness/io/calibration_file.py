"""Calibration files: one prediction per line, ``CONFIDENCE CORRECT`` (seed 003, ECE / reliability).

``CONFIDENCE`` is the model's confidence in its predicted label, a number in [0, 1]; ``CORRECT`` is 1
when that label was right and 0 when it was wrong. Blank lines are skipped; anything else that does not
fit raises :class:`CalibrationFileError` naming the file and line.
"""

from __future__ import annotations

import math
import os

import numpy as np
import numpy.typing as npt

from streambench.harness.io.lines import LineFileError, fields_of_lines

__all__ = ["CalibrationFileError", "read_calibration_file"]


class CalibrationFileError(LineFileError):
    """A calibration file that does not follow ``CONFIDENCE CORRECT`` per line."""


def read_calibration_file(
    path: str | os.PathLike[str],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """``(confidences, correct)`` of a calibration file."""
    confidences: list[float] = []
    correct: list[bool] = []
    for number, (conf_text, correct_text) in fields_of_lines(
        path, 2, "(CONFIDENCE CORRECT)", CalibrationFileError
    ):
        try:
            confidence = float(conf_text)
        except ValueError:
            raise CalibrationFileError(path, number, f"confidence {conf_text!r} is not a number") from None
        if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
            raise CalibrationFileError(path, number, f"confidence {conf_text!r} is not in [0, 1]")
        if correct_text not in ("0", "1"):
            raise CalibrationFileError(path, number, f"correct must be 0 or 1, got {correct_text!r}")
        confidences.append(confidence)
        correct.append(correct_text == "1")
    if not confidences:
        raise CalibrationFileError(path, None, "no samples: the file has no lines")
    return np.array(confidences, dtype=np.float64), np.array(correct, dtype=bool)
