"""The shared JSON reader (harness/io/json_file.py) behind the configuration and protocol result files:
the documented error for any bad file, naming the line; a byte-order mark read."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.io.config_file import ConfigError, load_config_file
from streambench.harness.results.files import ResultFileError, load_protocol_result
from streambench.harness.runs.robustness import RobustnessResult


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[" * 100_000, r"not valid JSON \(RecursionError"),
        (b'{"n": ' + b"9" * 5000 + b"}", r"not valid JSON \(ValueError"),
        (b'{\n"a": "\xff"}', "line 2: not UTF-8 text"),
        (b'{\n "a": }', "line 2: not valid JSON"),
    ],
)
def test_json_files_give_their_documented_errors(tmp_path: Path, data: bytes, message: str) -> None:
    config, protocol = tmp_path / "c.json", tmp_path / "robustness.json"
    config.write_bytes(data)
    protocol.write_bytes(data)
    with pytest.raises(ConfigError, match=message):
        load_config_file(config)
    with pytest.raises(ResultFileError, match=message):
        load_protocol_result(protocol, RobustnessResult)


def test_json_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(b'\xef\xbb\xbf{"adapter": "null"}')
    assert load_config_file(path) == {"adapter": "null"}
    with pytest.raises(ResultFileError, match=r"robustness\.json: no such robustness\.json"):
        load_protocol_result(tmp_path / "robustness.json", RobustnessResult)
