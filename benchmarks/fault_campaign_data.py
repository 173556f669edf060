"""The fault campaign's scenarios of the data readers (damaged feature, audio and video files);
benchmarks/fault_campaign.py runs them. Not a test module."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from fault_campaign import Ctx, Scenario
from fault_campaign_checks import clean, clear_error, recorded, write


def _npz(path: Path, t: int = 50, **arrays: np.ndarray) -> None:
    base = {
        "features": np.random.default_rng(0).normal(size=(t, 8)).astype(np.float32),
        "labels": (np.arange(t) // 10 % 2).astype(np.int64),
    }
    base.update(arrays)
    np.savez(path, **base)


class _Pickled:
    def __init__(self, canary: str) -> None:
        self.canary = canary

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.canary}",)


def feature_data(bad: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        data = directory / "data"
        data.mkdir()
        _npz(data / "a.npz")
        bad(data)
        (directory / "data.toml").write_text(
            '[data]\nkind = "feature_arrays"\ndirectory = "data"\nframe_rate_hz = 25\n'
            'classes = ["background", "event"]\n'
        )

    return setup


def _wav(path: Path, seconds: float = 1.0, rate: int = 16000, data: np.ndarray | None = None) -> None:
    import soundfile

    samples = (
        data if data is not None else np.sin(np.arange(int(seconds * rate)) / 10).astype(np.float32) * 0.3
    )
    soundfile.write(str(path), samples, rate, subtype="FLOAT" if samples.dtype == np.float32 else None)


def audio_data(bad: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        data = directory / "speech"
        data.mkdir()
        _wav(data / "a.wav")
        (data / "a.txt").write_text("0.2\t0.6\tspeech\n")
        bad(data)
        (directory / "data.toml").write_text('[data]\nkind = "audio_files"\ndirectory = "speech"\n')

    return setup


def video_data(bad: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(directory: Path) -> None:
        clips = directory / "clips"
        subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve().parents[1] / "examples/video/make_clips.py"),
                str(clips),
                "--clips",
                "1",
            ],
            check=True,
            capture_output=True,
        )
        bad(clips)
        (directory / "data.toml").write_text('[data]\nkind = "video_files"\ndirectory = "clips"\n')

    return setup


def _wav_header_lies(d: Path) -> None:
    data = bytearray((d / "a.wav").read_bytes())
    data[40:44] = struct.pack("<I", 10**9)
    (d / "a.wav").write_bytes(bytes(data))


def data_scenarios() -> list[Scenario]:
    rng = np.random.default_rng(1)
    feature_cases: dict[str, Callable[[Path], None]] = {
        "npy_truncated": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.npy").write_bytes((d / "b.npy").read_bytes()[:300]),
            (d / "b.txt").write_text("0.1\t0.5\tevent\n"),
        ),
        "npy_random_bytes": lambda d: (
            (d / "b.npy").write_bytes(rng.bytes(2000)),
            (d / "b.txt").write_text(""),
        ),
        "npy_pickled_object": lambda d: (
            np.save(
                d / "b.npy",
                np.array([_Pickled(str(d.parent / "pickle_ran"))], dtype=object),
                allow_pickle=True,
            ),
            (d / "b.txt").write_text(""),
        ),
        "npy_header_huge_shape": lambda d: (
            (d / "b.npy").write_bytes(
                b"\x93NUMPY\x01\x00v\x00"
                + (
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 1000000), }".ljust(117)
                    + "\n"
                ).encode()
            ),
            (d / "b.txt").write_text(""),
        ),
        "npz_lengths_differ": lambda d: _npz(d / "b.npz", other=np.zeros((7, 3), np.float32)),
        "npz_labels_short": lambda d: _npz(d / "b.npz", labels=np.zeros(10, np.int64)),
        "npz_labels_out_of_range": lambda d: _npz(d / "b.npz", labels=np.full(50, 7, np.int64)),
        "npz_labels_negative": lambda d: _npz(d / "b.npz", labels=np.full(50, -1, np.int64)),
        "npz_labels_float": lambda d: _npz(d / "b.npz", labels=np.full(50, 0.5)),
        "npz_timestamps_decreasing": lambda d: _npz(d / "b.npz", timestamps=np.linspace(2, 0, 50)),
        "npz_timestamps_nan": lambda d: _npz(d / "b.npz", timestamps=np.full(50, np.nan)),
        "npz_zero_frames": lambda d: _npz(d / "b.npz", t=0),
        "npz_scalar_features": lambda d: _npz(d / "b.npz", features=np.float32(3.0)),
        "npz_nan_features": lambda d: _npz(d / "b.npz", features=np.full((50, 8), np.nan, np.float32)),
        "npz_string_features": lambda d: _npz(d / "b.npz", features=np.array([["a"] * 8] * 50)),
        "npz_random_bytes": lambda d: (d / "b.npz").write_bytes(rng.bytes(3000)),
        "h5_random_bytes": lambda d: (d / "b.h5").write_bytes(rng.bytes(3000)),
        "label_csv_garbage": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.csv").write_text("onset,offset,label\nabc,def,event\n"),
        ),
        "label_txt_two_fields": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.txt").write_text("0.1\tevent\n"),
        ),
        "label_txt_latin1": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.txt").write_bytes("0.1\t0.5\t\xe9v\xe9nement\n".encode("latin-1")),
        ),
        "label_end_before_start": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.txt").write_text("0.9\t0.1\tevent\n"),
        ),
        "label_missing": lambda d: np.save(d / "b.npy", np.ones((40, 8), np.float32)),
        "label_unknown_class": lambda d: (
            np.save(d / "b.npy", np.ones((40, 8), np.float32)),
            (d / "b.txt").write_text("0.1\t0.5\tdragon\n"),
        ),
        "directory_empty": lambda d: (d / "a.npz").unlink(),
    }
    audio_cases: dict[str, Callable[[Path], None]] = {
        "wav_random_bytes": lambda d: (d / "a.wav").write_bytes(rng.bytes(5000)),
        "wav_empty_file": lambda d: (d / "a.wav").write_bytes(b""),
        "wav_no_samples": lambda d: _wav(d / "a.wav", data=np.zeros(0, np.float32)),
        "wav_truncated": lambda d: (d / "a.wav").write_bytes((d / "a.wav").read_bytes()[:3000]),
        "wav_header_lies": _wav_header_lies,
        "wav_nan_samples": lambda d: _wav(d / "a.wav", data=np.full(16000, np.nan, np.float32)),
        "wav_rate_1hz": lambda d: _wav(d / "a.wav", rate=1, data=np.zeros(3, np.float32)),
        "label_past_end": lambda d: (d / "a.txt").write_text("0.2\t9.0\tspeech\n"),
        "label_negative": lambda d: (d / "a.txt").write_text("-1\t0.5\tspeech\n"),
        "label_text_numbers": lambda d: (d / "a.txt").write_text("one\ttwo\tspeech\n"),
        "label_binary": lambda d: (d / "a.txt").write_bytes(rng.bytes(300)),
        "label_two_files": lambda d: (d / "a.csv").write_text("0.1,0.2,speech\n"),
        "label_missing": lambda d: (d / "a.txt").unlink(),
        "label_csv_header_only": lambda d: (
            (d / "a.txt").unlink(),
            (d / "a.csv").write_text("onset,offset,label\n"),
        ),
    }
    video_cases: dict[str, Callable[[Path], None]] = {
        "mp4_random_bytes": lambda d: (d / "clip-0.mp4").write_bytes(rng.bytes(20000)),
        "mp4_empty": lambda d: (d / "clip-0.mp4").write_bytes(b""),
        "mp4_truncated": lambda d: (d / "clip-0.mp4").write_bytes((d / "clip-0.mp4").read_bytes()[:1500]),
        "mp4_is_text": lambda d: (d / "clip-0.mp4").write_text("not a video\n"),
        "label_missing": lambda d: (d / "clip-0.txt").unlink(),
        "label_garbage": lambda d: (d / "clip-0.txt").write_text("x\ty\tz\n"),
    }
    out = []
    base = [
        "streambench",
        "run",
        "--config",
        "data.toml",
        "--adapter",
        "null",
        "--warmup-frames",
        "5",
        "--output-dir",
        "results",
    ]
    for kind, cases, make in (
        ("features", feature_cases, feature_data),
        ("audio", audio_cases, audio_data),
        ("video", video_cases, video_data),
    ):
        for name, bad in cases.items():
            check = _pickle_check if name == "npy_pickled_object" else _data_check
            out.append(
                Scenario(
                    f"data_{kind}_{name}", "data", "cli", base, ok=(0, 1, 2), setup=make(bad), check=check
                )
            )
    for name, rel in (("read_data_dir", "data/a.npz"), ("list_data_dir", "data")):
        act = "read_path" if name.startswith("read") else "list_path"
        target = lambda d, rel=rel: (d / "campaign_target.txt").write_text(str(d / rel))  # noqa: E731
        out.append(
            Scenario(
                f"data_evil_{name}",
                "data",
                "cli",
                [
                    *base[:5],
                    "campaign_models:Evil",
                    *base[6:],
                    "-o",
                    f"act={act}",
                    "-o",
                    "arg=@",
                    "-o",
                    "at_call=8",
                ],
                setup=lambda d, t=target: (feature_data(lambda x: None)(d), t(d)),
                ok=(0,),
                check=clean,
            )
        )
    out.append(
        Scenario(
            "data_missing_directory",
            "data",
            "cli",
            base,
            ok=(2,),
            check=clear_error("nowhere"),
            setup=write(
                "data.toml", '[data]\nkind = "feature_arrays"\ndirectory = "nowhere"\nframe_rate_hz = 25\n'
            ),
        )
    )
    for kind in ("ave", "llp"):
        out.append(
            Scenario(
                f"data_{kind}_missing_files",
                "data",
                "cli",
                base,
                ok=(2,),
                check=clear_error("data.toml", "Field required"),  # names the file and each missing field
                setup=write("data.toml", f'[data]\nkind = "{kind}"\n'),
            )
        )
    return out


def _data_check(ctx: Ctx) -> tuple[str, str] | None:
    if ctx.rc == 2:
        err = ctx.stderr.strip().splitlines()[-1:] or [""]
        if not any(w in err[0] for w in ("data", "a.", "b.", "clip-0", "speech", "file")):
            return "wrong", f"the error names no file: {err[0][:200]}"
        return None
    return clean(ctx) if ctx.rc == 0 else recorded(frame=None)(ctx)


def _pickle_check(ctx: Ctx) -> tuple[str, str] | None:
    if (ctx.dir / "pickle_ran").exists():
        return "escape", "a pickled object in a data file ran code in the harness's process"
    return _data_check(ctx)


def scenarios() -> list[Scenario]:
    return data_scenarios()
