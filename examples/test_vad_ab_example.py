"""The README's A/B latency gate on real audio: Silero VAD on the recordings of examples/vad.toml, base
against head in the gate's default rounds, in a test: the data, engine and threads of the run
configuration, as ``streambench ab --config examples/vad.toml`` takes them. From the repository's top:

    python -m tests.data.speech_like speech     # the recordings examples/vad.toml reads
    pytest examples/test_vad_ab_example.py

Both sides run this checkout (no --streambench-base-path): an A/A job, which the gate must decide (an
undecided gate fails the test). tests/harness/integrations/test_pytest_ab.py runs it.
"""


def test_vad_latency_gate(streambench_ab):
    report = streambench_ab(config="examples/vad.toml", fail_on="p95:+10%")
    assert report.verdict == "no regression"  # the same code on both sides
    assert all(side.frames % 204 == 0 for side in report.sides)  # whole recordings of 204 frames each
