"""A protocol written against streambench's public API alone (docs/python.md, "Writing a protocol"): the
frames per second a model serves at batch 1, one stream at a time, from the engine's timing of every
predict() call. ``python examples/throughput.py`` registers it and runs it on the reference model."""

from pydantic import BaseModel, Field

import streambench


class ThroughputConfig(BaseModel):
    streams: int = Field(2, ge=1, description="streams measured (the data set's first ones)")


class ThroughputResult(streambench.RunRecord):  # run_id, created_at and adapter come with it
    frames: int = Field(description="frames timed")
    seconds: float = Field(description="the time their predict() calls took, together")
    fps: float | None = Field(description="frames / seconds (None: no time measured)")


class ThroughputProtocol(streambench.RunProtocol[ThroughputConfig, ThroughputResult]):
    name = "throughput"
    summary = "frames per second at batch 1, one stream at a time"
    result_file = "throughput.json"
    result_model = ThroughputResult
    config_model = ThroughputConfig
    figure_keys = (r"throughput\.fps", "throughput.fps")

    def measure(self, run: streambench.RunContext[ThroughputConfig, ThroughputResult]) -> ThroughputResult:
        streams = run.streams()[: run.config.streams]
        frames, nanoseconds = 0, 0
        with run.model() as model:  # built, warmed up, in a sealed worker unless the run says in-process
            for done, stream in enumerate(streams, start=1):
                recording = model.run_stream(stream, "test")  # its state reset first
                frames += recording.num_frames
                nanoseconds += int(recording.latency_ns.sum())
                run.step(done, len(streams), stream.stream_id)
        seconds = nanoseconds / 1e9
        return run.result(frames=frames, seconds=seconds, fps=frames / seconds if seconds else None)

    def headline(self, result: ThroughputResult) -> list[streambench.Figure]:
        return [
            streambench.Figure(
                key="throughput.fps",
                label="FPS",
                unit="fps",
                better="higher",
                value=result.fps,
                reason=None if result.fps is not None else "no time measured",
                n_frames=result.frames,
            )
        ]


if __name__ == "__main__":
    streambench.register(ThroughputProtocol())
    config = {"adapter": "reference", "data": {"kind": "synthetic", "num_streams": 2, "duration_s": 2.0}}
    outcome = streambench.run(config, protocol="throughput")
    print(f"{outcome.result.fps:.0f} frames/s over {outcome.result.frames} frames, in {outcome.run_dir}")
