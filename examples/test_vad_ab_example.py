"""The README's A/B latency gate on real audio (issue 27 item 6): Silero VAD on the recordings of
examples/vad.toml, base against head in interleaved rounds, in a test: the data, engine and threads of the
run configuration, as ``streambench ab --config examples/vad.toml`` takes them. From the repository's top:

    python -m tests.data.speech_like speech     # the recordings examples/vad.toml reads
    pytest examples/test_vad_ab_example.py

(tests/harness/integrations/test_pytest_ab.py runs it.)
"""


def test_vad_latency_gate(streambench_ab):
    report = streambench_ab(
        config="examples/vad.toml", fail_on="p95:+10%", rounds=8, max_rounds=None, restart_every=4
    )
    assert all(side.frames == 8 * 2 * 204 for side in report.sides)  # 8 pairs x 2 recordings of 204 frames
