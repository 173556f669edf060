"""The event matching helpers of protocols/metrics/event_matching.py not covered by the sed_eval
comparisons of test_event_detection.py."""

from __future__ import annotations

import numpy as np

from streambench.protocols.metrics.event_matching import first_flag_delays


def test_the_first_flag_says_how_late_an_event_was_answered_matched_or_not() -> None:
    """Hand-computed, collar 0.2 s: events at 1, 5 and 8 s. The detections at 0.7 s (too early: before
    1 - 0.2) and 1.5 s (the first in the window [0.8, 5)) flag the first event 0.5 s late; the one at 6.5 s
    flags the second 1.5 s late (a collar of 0.2 s would miss it); nothing starts in [7.8, inf) but 7.7."""
    ref = np.array([[1.0, 3.0], [5.0, 6.0], [8.0, 9.0]])
    det = np.array([[0.7, 0.75], [1.5, 1.7], [2.0, 4.0], [6.5, 7.0], [7.7, 7.75]])
    np.testing.assert_allclose(first_flag_delays(ref, det, 0.2), [0.5, 1.5])
    # a 0.35 s collar takes the 0.7 s detection for the first event and the 7.7 s one for the third
    np.testing.assert_allclose(first_flag_delays(ref, det, 0.35), [-0.3, 1.5, -0.3])
    assert first_flag_delays(ref, np.zeros((0, 2)), 0.2).size == 0
