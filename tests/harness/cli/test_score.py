"""``streambench score detection | calibration | ranking``: files in, the library's figures out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.io.calibration_file import CalibrationFileError, read_calibration_file
from streambench.protocols.metrics import detection_metrics, ece, mce, ranking_metrics

runner = CliRunner()
SCORES = "- - real 0.9\n- - real 0.8\n- - fake 0.3\n- - real 0.4\n- - fake 0.6\n- - fake 0.1\n"


def test_detection_json_equals_the_library_and_plot_is_a_png(tmp_path: Path) -> None:
    (tmp_path / "scores.txt").write_text(SCORES)
    res = runner.invoke(
        app,
        ["score", "detection", str(tmp_path / "scores.txt"), "--json", "--plot", str(tmp_path / "det.png")],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    expected = detection_metrics([1, 1, 0, 1, 0, 0], [0.9, 0.8, 0.3, 0.4, 0.6, 0.1])
    assert doc["eer"] == pytest.approx(expected.eer) == pytest.approx(1 / 3)
    assert doc["auc"] == pytest.approx(8 / 9) and doc["eer_threshold"] == 0.6
    assert (tmp_path / "det.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    at = runner.invoke(
        app, ["score", "detection", str(tmp_path / "scores.txt"), "--threshold", "0.35", "--json"]
    )
    assert json.loads(at.output)["far"] == pytest.approx(1 / 3) and json.loads(at.output)["frr"] == 0.0


def test_detection_malformed_file_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text("- - real 0.9\n- - maybe 0.5\n")
    res = runner.invoke(app, ["score", "detection", str(tmp_path / "bad.txt")])
    assert res.exit_code == 2 and "bad.txt, line 2: unknown label 'maybe'" in res.output


def test_calibration_seed_003_example(tmp_path: Path) -> None:
    # seed 003: confidences 0.9 (right), 0.5 (wrong), 0.3 (right) with edges [0, 0.4, 0.6, 1.0]
    (tmp_path / "cal.txt").write_text("0.9 1\n0.5 0\n\n0.3 1\n")
    res = runner.invoke(
        app, ["score", "calibration", str(tmp_path / "cal.txt"), "--edges", "0,0.4,0.6,1", "--json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    conf, correct = read_calibration_file(tmp_path / "cal.txt")
    edges = [0, 0.4, 0.6, 1.0]
    assert doc["ece"] == pytest.approx(ece(conf, correct, bins=edges)) and doc["mce"] == pytest.approx(
        mce(conf, correct, bins=edges)
    )
    assert [b["count"] for b in doc["bins"]] == [1, 1, 1]
    ten = json.loads(runner.invoke(app, ["score", "calibration", str(tmp_path / "cal.txt"), "--json"]).output)
    assert len(ten["bins"]) == 10 and ten["bins"][0]["accuracy"] is None  # empty bins have no means


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("0.9 1\n1.5 0\n", "line 2: confidence '1.5' is not in"),
        ("0.9 yes\n", "line 1: correct must be 0 or 1"),
        ("0.9\n", "line 1: expected 2 fields"),
        ("", "no samples"),
    ],
)
def test_calibration_file_errors(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "c.txt").write_text(text)
    with pytest.raises(CalibrationFileError, match=problem):
        read_calibration_file(tmp_path / "c.txt")


def test_ranking_table_and_json(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 0.9 s\nq1 Q0 b 2 0.8 s\nq2 Q0 c 1 0.7 s\n")
    (tmp_path / "qrels.txt").write_text("q1 0 b 1\nq2 0 c 2\nq2 0 d 1\n")
    args = [
        "score",
        "ranking",
        "--run",
        str(tmp_path / "run.txt"),
        "--qrels",
        str(tmp_path / "qrels.txt"),
        "--k",
        "1,2",
    ]
    doc = json.loads(runner.invoke(app, [*args, "--json"]).output)
    run = {"q1": {"a": 0.9, "b": 0.8}, "q2": {"c": 0.7}}
    qrels = {"q1": {"b": 1}, "q2": {"c": 2, "d": 1}}
    assert doc["2"] == pytest.approx(ranking_metrics(run, qrels, 2))
    assert doc["1"]["precision@1"] == 0.5 and doc["1"]["recall@1"] == 0.25
    table = runner.invoke(app, args)
    assert table.exit_code == 0 and "ndcg" in table.output
    bad = runner.invoke(app, [*args[:-1], "one"])
    assert bad.exit_code == 2 and "expected comma-separated integers" in bad.output
