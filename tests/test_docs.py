"""The documentation is self-contained: README.md and docs/*.md link only to files (and sections) that exist
in the repository, cite the source documents by title rather than by a path outside it, and docs/metrics.md
defines every figure a result's headline can hold. The README is a guide and docs/ its reference, built as
a site by MkDocs: every page is in the site's navigation, the docs' home page and the README's list, every
measured figure sits in docs/performance.md with its command, machine and date, the README carries no
measurement log, and no page shows the number of an issue (the code's history, for commit messages). (The
commands the pages show are run by tests/test_docs_commands.py.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
METRICS = ROOT / "docs" / "metrics.md"

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_PARENT_PATH = re.compile(r"(?<![\w.])\.\./[^\s`)'\"\]>,;]*")
_ANCHOR_TAG = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
_BARE_SOURCE = re.compile(r"\bseeds?\s+00\d\b|\bseed\s+00\d's\b", re.IGNORECASE)


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` outside fenced code blocks (commands there are examples, not links)."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, ``_``, ``-`` and
    spaces kept), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())  # a link: its text
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        found.update(_ANCHOR_TAG.findall(line))
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in _LINK.finditer(line):
            yield number, match.group(1)
        reference = _REFERENCE.match(line)
        if reference:
            yield number, reference.group(1)


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Every relative link of ``page`` whose file is missing or outside the repository ``root``, or whose
    ``#anchor`` names no heading of its target."""
    problems = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:, file:
            continue
        path_part, _, anchor = target.partition("#")
        where = f"{page.relative_to(root)}:{number}: {target}"
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(root):
            problems.append(f"{where} points outside the repository")
        elif not resolved.exists():
            problems.append(f"{where} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where}: no section #{anchor} in {resolved.relative_to(root)}")
    return problems


def parent_paths(page: Path, root: Path = ROOT) -> list[str]:
    """``../`` paths written in the prose (links or not) that do not resolve inside the repository."""
    problems = []
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in _PARENT_PATH.finditer(line):
            resolved = (page.parent / match.group(0)).resolve()
            if not resolved.is_relative_to(root) or not resolved.exists():
                problems.append(match.group(0))
    return problems


def test_there_are_docs() -> None:
    assert {p.name for p in DOCS} >= {"metrics.md", "protocols.md", "data.md", "adapters.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(page: Path) -> None:
    assert broken_links(page) == []
    assert parent_paths(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_points_at_the_shared_folder(page: Path) -> None:
    """The source documents are cited by title: a user of the package has no ``../shared``."""
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text and "shared/seeds" not in text and "shared/DESIGN" not in text


def test_the_readme_cites_no_source_by_its_internal_number() -> None:
    """ "seed 004 §6.2.2" means nothing to a reader of the README: it links to docs/ instead (docs/metrics.md
    maps the numbers the code's docstrings use to the documents' titles)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    bare = [f"README.md:{n}: {line.strip()}" for n, line in enumerate(lines, 1) if _BARE_SOURCE.search(line)]
    assert bare == []


def test_the_checks_find_planted_problems(tmp_path: Path) -> None:
    """The checks can fail: a page of a fake repository with every kind of bad reference (and the
    example command in a code block, which is not one)."""
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "other.md").write_text("# Other page\n\n## A section\n")
    page = root / "docs" / "page.md"
    page.write_text(
        "# Title\n\n"
        "[fine](other.md#a-section) [fine too](#title) [web](https://example.org/x) [up](../docs/other.md)\n"
        "[missing](nothing.md) [outside](../../elsewhere.md) [no section](other.md#b-section)\n"
        "see ../shared/seeds/ for the rest\n"
        "```bash\ngit worktree add ../base\n```\n"
    )
    problems = broken_links(page, root)
    assert len(problems) == 3
    assert "nothing.md does not exist" in problems[0] and "outside the repository" in problems[1]
    assert "no section #b-section" in problems[2]
    assert parent_paths(page, root) == ["../../elsewhere.md", "../shared/seeds/"]


def test_every_page_is_in_the_sites_navigation() -> None:
    """mkdocs.yml's nav lists exactly the pages of docs/ (mkdocs build --strict refuses a page left out,
    and a nav entry without its page)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:") : config.index("\n\n", config.index("\nnav:"))]
    listed = re.findall(r":\s*([\w-]+\.md)\s*$", nav, flags=re.M)
    assert sorted(listed) == sorted(p.name for p in DOCS)
    assert "strict: true" in config and "anchors: warn" in config  # broken #anchors fail the build too


_ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")
"""An issue's number ("issue 28", "Issues 24, 25", "issue #28"): the history of the code, nothing a reader of
the pages can use (commit messages carry it)."""


def issue_numbers(page: Path, root: Path = ROOT) -> list[str]:
    """Every line of ``page`` (prose or code) that shows an issue's number."""
    text = page.read_text(encoding="utf-8")
    where = page.relative_to(root)
    lines = enumerate(text.splitlines(), 1)
    return [f"{where}:{n}: {line.strip()}" for n, line in lines if _ISSUE.search(line)]


def unlisted(index: Path, pages: list[Path]) -> list[str]:
    """The pages of ``pages`` (the index itself aside) that ``index`` links to nowhere."""
    targets = {(index.parent / target.partition("#")[0]).resolve() for _, target in links(index)}
    return [p.name for p in pages if p.resolve() != index.resolve() and p.resolve() not in targets]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_shows_an_issue_number(page: Path) -> None:
    assert issue_numbers(page) == []


def test_the_docs_index_and_the_readme_list_every_page() -> None:
    """docs/index.md (the site's home) and the README's Documentation list link every page of docs/."""
    assert unlisted(ROOT / "docs" / "index.md", DOCS) == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listing = readme[readme.index("\n## Documentation\n") :]
    targets = {target.partition("#")[0] for target in re.findall(r"\]\((docs/[^)]+)\)", listing)}
    assert sorted(p.name for p in DOCS if p.name != "index.md" and f"docs/{p.name}" not in targets) == []


def test_the_index_and_issue_checks_find_planted_problems(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (docs / name).write_text(f"# {name}\n")
    index = docs / "index.md"
    index.write_text("# Home\n\n[A](a.md) and [the B section](b.md#b)\n")
    assert unlisted(index, sorted(docs.glob("*.md"))) == ["c.md"]
    page = docs / "a.md"
    page.write_text("# A\n\nSince issue 28 it works\n(Issue #3, item 2).\nRank #1 of 3 issues.\n")
    found = issue_numbers(page, tmp_path)
    assert found == ["docs/a.md:3: Since issue 28 it works", "docs/a.md:4: (Issue #3, item 2)."]


def test_the_readme_is_a_guide_not_a_lab_notebook() -> None:
    """About 300 lines for a newcomer's ten minutes, and no measurement log: no commit hashes, no tables of
    measured runs (those are docs/performance.md's)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 330
    assert re.findall(r"\bcommit `?[0-9a-f]{7}", readme) == []
    assert "docs/performance.md" in readme


def test_every_measurement_names_its_command_machine_and_date() -> None:
    """Each section of docs/performance.md that reports a figure says how to reproduce it, on what and
    when (or that the date was not recorded)."""
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    sections = re.split(r"^## ", page, flags=re.M)[1:]
    assert len(sections) >= 10
    for section in sections:
        title = section.splitlines()[0]
        if title == "The benchmarks":
            continue
        assert re.search(r"[Cc]ommands?\b", section), f"{title}: no command"
        assert "2 cores" in section, f"{title}: no machine"
        assert re.search(r"20\d\d-\d\d-\d\d|earlier session", section), f"{title}: no date"


def test_slugs_follow_github() -> None:
    assert slug("Detection: EER, FAR, FRR, AUC, F1, balanced accuracy") == (
        "detection-eer-far-frr-auc-f1-balanced-accuracy"
    )
    assert slug("Ranking: Hit@k, MRR") == "ranking-hitk-mrr"
    assert slug("`synthetic_spoof`") == "synthetic_spoof"


# --------------------------------------------------------------------------------------------------
# the headline figures


def _code_spans() -> str:
    """The inline code of docs/metrics.md, where it names fields and keys."""
    return "\n".join(re.findall(r"`([^`\n]+)`", METRICS.read_text(encoding="utf-8")))


def _documented(name: str) -> bool:
    """``name`` appears, as a whole name, in an inline code span of docs/metrics.md."""
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", _code_spans()) is not None


def _registered_key_forms() -> list[str]:
    """Every protocol's headline keys as it writes them for ``--fail-on`` ("f1@<Δt>ms, frame_acc, ...")."""
    from streambench.harness.runs import registry

    forms = []
    for protocol in registry.protocols():
        _, written = protocol.figure_keys
        for part in written.split(", "):
            forms.append(part.split(" (")[0].strip())
    return forms


def _stability_keys() -> list[str]:
    from streambench.harness.runs.stability import headline_figures

    overall = SimpleNamespace(jaccard=0.5, flips=1.0, lifetime_runs=2.0, transient_ratio=0.1, num_frames=9)
    result = SimpleNamespace(
        report=SimpleNamespace(overall=overall),
        events=SimpleNamespace(curve=[SimpleNamespace(delta_ms=0.0, f1_micro=0.5)]),
    )
    return [f.key for f in headline_figures(result)]  # type: ignore[arg-type]


def _detection_keys() -> list[str]:
    from streambench.harness.runs.detection import headline_figures

    metrics = SimpleNamespace(eer=0.1, auc=0.9, f1=0.8, balanced_accuracy=0.85)
    report = SimpleNamespace(
        metrics=metrics, utterances=[0, 1], by_heard=[SimpleNamespace(heard_s=None, eer=0.1, n_scored=2)]
    )
    return [f.key for f in headline_figures(SimpleNamespace(report=report))]  # type: ignore[arg-type]


def _causality_checks() -> list[str]:
    """The check names, read from the code that names them."""
    names = set()
    audit = ROOT / "harness" / "runs" / "causality"
    for path in [*audit.glob("*.py"), ROOT / "protocols" / "causality.py"]:
        source = path.read_text(encoding="utf-8")
        names |= set(re.findall(r"\bname=\"([a-z_]+)\"", source))
        names |= set(re.findall(r"_guarded\(\(\"([a-z_]+)\"", source))
    from streambench.harness.runs.causality.sequence import SEQUENCE_CHECKS

    return sorted(names | set(SEQUENCE_CHECKS))


def test_every_headline_key_is_defined_in_the_metrics_page() -> None:
    forms = _registered_key_forms()
    assert "f1@<Δt>ms" in forms and "stability.<figure>" in forms  # the forms are read, not assumed
    missing = [form for form in forms if not _documented(form)]
    assert missing == [], f"headline keys not in docs/metrics.md: {missing}"


@pytest.mark.processes
def test_every_concrete_headline_key_is_defined_in_the_metrics_page(tmp_path: Path) -> None:
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.runs.catalog import load_headline
    from streambench.harness.runs.session import execute_run
    from streambench.protocols.robustness import Axis

    config = RunConfig.model_validate(
        {
            "adapter": "null",
            "data": {"num_streams": 2, "duration_s": 2},
            "engine": {"warmup_frames": 0},
            "output_dir": tmp_path,
            "run_id": "docs",
        }
    )
    _, _, run_dir = execute_run(config)
    online = [f.key for f in load_headline(run_dir).figures]
    assert "p95" in online and "f1@0ms" in online
    fixed = [key for key in online if not key.startswith("f1@")]
    fixed += [key for key in _stability_keys() + _detection_keys() if not re.search(r"@", key)]
    fixed += [f"f1[{axis}" for axis in Axis.__args__ if axis != "clean"] + ["f1[clean]"]
    checks = _causality_checks()
    assert {"occlusion", "caching", "gradient_flow", "determinism"} <= set(checks)
    missing = [key for key in [*fixed, *checks] if not _documented(key)]
    assert missing == [], f"not in docs/metrics.md: {missing}"


def test_every_metric_field_of_the_result_schema_is_defined_in_the_metrics_page() -> None:
    """The fields a user reads in result.json and the other result files: the online headline, curves,
    latency, timeline and resource blocks, and the other protocols' figures."""
    from streambench.harness.results.files import ResourceRecord
    from streambench.harness.results.quality import MeasurementQuality
    from streambench.protocols.detection import HeardPoint, OperatingPoint
    from streambench.protocols.hysteresis_experiments import Row
    from streambench.protocols.metrics import LatencySummary
    from streambench.protocols.online import CurvePoint, Headline
    from streambench.protocols.online_speed import ReplayFigures, SpeedFigures
    from streambench.protocols.robustness import PointResult
    from streambench.protocols.stability import FlipsRelation, StabilityFigures

    models = [
        Headline,
        CurvePoint,
        SpeedFigures,
        ReplayFigures,
        ResourceRecord,
        MeasurementQuality,
        OperatingPoint,
        HeardPoint,
        StabilityFigures,
        FlipsRelation,
        Row,
        PointResult,
    ]
    names = {name for model in models for name in model.model_fields}
    names |= set(LatencySummary.__dataclass_fields__)
    names -= {"variant", "experiment", "setting", "arm", "limits", "notes", "n_real", "n_fake", "frames"}
    missing = sorted(name for name in names if not _documented(name))
    assert missing == [], f"result fields not defined in docs/metrics.md: {missing}"
