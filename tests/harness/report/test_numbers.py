"""Numbers in the report (harness/report/numbers.py), as a person writes them."""

from __future__ import annotations


def test_numbers_read_as_a_person_writes_them() -> None:
    from streambench.harness.report.numbers import human, latency_ms, rate_fps, signed

    assert rate_fps(18170.4) == "18,170 fps" and rate_fps(1.317e7) == "13,170,000 fps"
    assert human(0.0007762) == "0.0007762" and human(11136) == "11,136" and human(0.8131) == "0.8131"
    assert latency_ms(0.0466) == "46.6 µs" and latency_ms(4.25) == "4.25 ms" and latency_ms(7.6e-5) == "76 ns"
    assert latency_ms(1234.0) == "1.23 s" and latency_ms(0.99996) == "1 ms" and latency_ms(0.9994) == "999 µs"
    assert signed(-6070.0) == "\u22126,070" and signed(0.0) == "±0" and signed(0.00018) == "+0.00018"
