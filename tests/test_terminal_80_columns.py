"""What a newcomer reads at 80 columns: every command that prints tables (``demo``, ``run``,
``report``, ``stats``, ``compare``, ``pairwise``, ``calibrate``, ``score-transcripts``), run
offline on the examples (``report`` and ``stats`` with human labels too), never splits an
identifier across lines (a scenario, sample or transcript id, a statistic, metric or tag
name, a labelled target, a model name, each known from the command's JSON output), never
shortens one so that it could be another, and never prints a line wider
than 80 columns."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

from harness.report.formatting import ELLIPSIS, Identifier, middle_ellipsis
from harness.resources import data_dir
from harness.wording import plural
from tests.helpers.cli import CliResult, run_cli

WIDTH = 80
EXAMPLES = data_dir("examples")
SCENARIOS = data_dir("scenarios")


def cli(cwd: Path, *args: str) -> CliResult:
    done = run_cli(*args, cwd=cwd, columns=WIDTH)
    assert done.returncode == 0, done.stderr
    return done


def _statistic_names(value: Any) -> Iterator[str]:
    """Every key of ``value`` (a JSON object, nested) that holds a figure with its interval."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if isinstance(inner, dict) and "value" in inner:
                yield key
            yield from _statistic_names(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _statistic_names(inner)


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], set[str]]:
    """Each command's terminal output at 80 columns, and the identifiers their JSON output
    names. Everything runs in one folder with short relative paths, as a user's would."""
    cwd = tmp_path_factory.mktemp("eighty")
    shutil.copytree(SCENARIOS, cwd / "scenarios")
    for name in ("calibration", "transcripts"):
        shutil.copytree(EXAMPLES / name, cwd / name)
    out: dict[str, str] = {}
    run = ("run", "scenarios", "--offline", "--epochs", "3", "--cache-mode", "off")
    out["run"] = cli(cwd, *run, "--out", "a").stdout
    cli(cwd, *run, "--agent", "mock:agent-flaky", "--out", "b", "--json")
    out["demo"] = cli(cwd, "demo", "--epochs", "2", "--out", "d").stdout
    out["report"] = cli(cwd, "report", "b").stdout
    out["stats"] = cli(cwd, "stats", "b/samples.jsonl").stdout
    # A run's human labels: the agreement and the corrected figures after the suite table.
    labels = str(EXAMPLES / "labels" / "weather_labels.jsonl")
    out["report with labels"] = cli(cwd, "report", "a", "--labels", labels).stdout
    out["stats with labels"] = cli(cwd, "stats", "a/samples.jsonl", "--labels", labels).stdout
    labelled = json.loads(cli(cwd, "report", "a", "--labels", labels, "--json").stdout)
    out["compare"] = cli(cwd, "compare", "a", "b").stdout
    # The names in the tests' explanations (scipy.stats.permutation_test, sqrt(C)) are
    # identifiers too.
    methods = re.findall(r'"method": "([^"]+)"', cli(cwd, "compare", "a", "b", "--json").stdout)
    names = {w.rstrip(",;") for m in methods for w in m.split() if re.search(r"[.(]\w", w)}
    out["pairwise"] = cli(cwd, "pairwise", "a", "b", "--judge", "mock:judge", "--rubric",
                          "final_response_quality").stdout
    ids: set[str] = names | {t["target"] for t in labelled["agreement"]["targets"]}
    for kind in ("pointwise", "pairwise"):
        judgments = f"calibration/{kind}_judgments.jsonl"
        out[f"calibrate {kind}"] = cli(cwd, "calibrate", "--judgments", judgments).stdout
        report = json.loads(cli(cwd, "calibrate", "--judgments", judgments, "--json").stdout)
        ids |= set(_statistic_names(report))
        ids |= set(re.findall(r'"judge_id": "([^"]+)"', json.dumps(report)))
    for name in ("seed_transcripts.jsonl", "vertex_dataset.jsonl"):
        path = f"transcripts/{name}"
        out[f"score-transcripts {name}"] = cli(cwd, "score-transcripts", path).stdout
        scored = json.loads(cli(cwd, "score-transcripts", path, "--json").stdout)
        ids |= {t["id"] for t in scored["transcripts"]} | set(scored["summary"]["metrics"])
    for run_dir in ("a", "b", "d/suite"):
        summary = json.loads((cwd / run_dir / "summary.json").read_text())
        ids |= {s["scenario_id"] for s in summary["score"]["scenarios"]}
        ids |= set(summary["metrics"]) | set(summary["tags"])
        for line in (cwd / run_dir / "samples.jsonl").read_text().splitlines():
            sample = json.loads(line)
            ids.add(f"{sample['scenario_id']}#{sample['epoch']}")
    ids |= {"mock:agent", "mock:agent-flaky", "mock:simulator", "mock:judge"}
    return out, {i for i in ids if len(i) >= 4}


def _tokens(line: str) -> list[tuple[int, str]]:
    """``(column, word)`` of each run of characters that are neither spaces nor box lines."""
    words = []
    for match in re.finditer(r"[^\s│┃║|]+", line):
        words.append((cell_len(line[:match.start()]), match.group()))
    return words


def split_identifiers(text: str, ids: set[str]) -> list[str]:
    """Where an identifier starts on one line and goes on in the next: in the same column (a
    table cell folded) or from the end of one line to the start of the next (a wrapped
    sentence)."""
    lines = text.splitlines()
    found = []
    for i, (line, following) in enumerate(itertools.pairwise(lines)):
        below = _tokens(following)
        tokens = _tokens(line)
        for j, (col, word) in enumerate(tokens):
            heads = [i_ for i_ in ids if i_.startswith(word) and i_ != word]
            if not heads:
                continue
            nexts = [w for c, w in below if c == col]
            if j == len(tokens) - 1 and below:
                nexts.append(below[0][1])
            for ident_ in heads:
                if any(ident_.startswith(word + w) or (word + w).startswith(ident_)
                       for w in nexts):
                    found.append(f"line {i + 1}: {ident_!r} split as {word!r} / ...")
    return found


def ambiguous_shortenings(text: str, ids: set[str]) -> list[str]:
    """Shortened identifiers (with an ellipsis) that could be more than one of ``ids``."""
    found = []
    for line in text.splitlines():
        for _, word in _tokens(line):
            if ELLIPSIS not in word or len(word) < 4:
                continue
            head, _, tail = word.partition(ELLIPSIS)
            tail = tail.rstrip(",;:)")
            matches = [i for i in ids if i.startswith(head) and i.endswith(tail)
                       and len(i) >= len(head) + len(tail)]
            if any(i.startswith(head) for i in ids) and len(matches) != 1:
                found.append(f"{word!r} could be any of {sorted(matches)}")
    return found


def too_wide(text: str) -> list[str]:
    # The demo names where the package's own examples are installed: a long install path
    # is left to the terminal to wrap, as any path is.
    return [line for line in text.splitlines()
            if cell_len(line) > WIDTH and str(SCENARIOS.parent) not in line]


COMMANDS = ["demo", "run", "report", "report with labels", "stats", "stats with labels",
            "compare", "pairwise", "calibrate pointwise",
            "calibrate pairwise", "score-transcripts seed_transcripts.jsonl",
            "score-transcripts vertex_dataset.jsonl"]


@pytest.mark.parametrize("command", COMMANDS)
def test_no_identifier_is_split_or_made_ambiguous_at_80_columns(
        printed: tuple[dict[str, str], set[str]], command: str) -> None:
    out, ids = printed
    text = out[command]
    assert text.strip()
    assert split_identifiers(text, ids) == []
    assert ambiguous_shortenings(text, ids) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_no_line_is_wider_than_80_columns(printed: tuple[dict[str, str], set[str]],
                                          command: str) -> None:
    assert too_wide(printed[0][command]) == []


def test_every_scenario_of_a_run_is_named_whole_or_recognisably(
        printed: tuple[dict[str, str], set[str]]) -> None:
    out, ids = printed
    shown = {w for line in out["run"].splitlines() for _, w in _tokens(line)}
    for sid in (i for i in ids if "-" in i and "#" not in i and ":" not in i
                and i.split("-")[0] in {"weather", "home", "files", "support"}):
        assert sid in shown or any(ELLIPSIS in w and sid.startswith(w.split(ELLIPSIS)[0])
                                   and sid.endswith(w.split(ELLIPSIS)[1]) for w in shown), sid


# --- the checks themselves, on text made to break them --------------------------------------


IDS = {"home-living-room-lights-off", "krippendorff_alpha_nominal",
       "krippendorff_alpha_ordinal", "files-action-items#0"}


def test_a_folded_cell_is_found() -> None:
    text = ("│ home-living-room-lights-of │ 0.920 │\n"
            "│ f                          │       │\n")
    assert split_identifiers(text, IDS) == [
        "line 1: 'home-living-room-lights-off' split as 'home-living-room-lights-of' / ..."]


def test_a_wrapped_sentence_is_found() -> None:
    text = "the failed samples were files-action-\nitems#0 and others\n"
    assert len(split_identifiers(text, IDS)) == 1


def test_an_identifier_on_its_own_line_is_not_a_split() -> None:
    text = "home-living-room-lights-off  0.920\nkrippendorff_alpha_ordinal 0.9\n"
    assert split_identifiers(text, IDS) == []


def test_an_ellipsis_at_the_end_that_hides_which_statistic_is_found() -> None:
    assert ambiguous_shortenings("│ krippendorff_alpha_… │ 0.918 │", IDS) == [
        "'krippendorff_alpha_…' could be any of ['krippendorff_alpha_nominal', "
        "'krippendorff_alpha_ordinal']"]
    assert ambiguous_shortenings("│ krippendo…a_ordinal │ 0.918 │", IDS) == []


@pytest.mark.parametrize("width", range(3, 28))
def test_middle_ellipsis_keeps_both_ends_and_fits(width: int) -> None:
    text = "krippendorff_alpha_ordinal"
    short = middle_ellipsis(text, width)
    assert cell_len(short) == min(width, len(text))
    if width < len(text):
        head, _, tail = short.partition(ELLIPSIS)
        assert head and tail and text.startswith(head) and text.endswith(tail)


def test_an_identifier_cell_shows_control_characters_and_no_markup() -> None:
    cell = Identifier("[bold]a\x1b[2Jb")
    assert cell.text == "[bold]a\\x1b[2Jb"


@pytest.mark.parametrize("width", [12, 20, 27, 40])
def test_a_marked_identifier_keeps_its_mark_on_its_line(width: int) -> None:
    """A scenario's footnote mark (" *") stays after its id, the id shortened to make room,
    rather than wrapping onto a line of its own."""
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(max_width=width)
    table.add_row(Identifier("support-cancel-pending-order", mark=" *"))
    console = Console(width=80, record=True, color_system=None)
    console.print(table)
    [line] = [x.rstrip() for x in console.export_text().splitlines() if x.strip()]
    assert line.endswith(" *") and cell_len(line) <= width
    head, _, tail = line.removesuffix(" *").partition(ELLIPSIS)
    sid = "support-cancel-pending-order"
    assert (head, tail) == (sid, "") if width >= len(sid) + 2 else (
        sid.startswith(head) and sid.endswith(tail) and head and tail)


@pytest.mark.parametrize("count, noun, expected", [
    (0, "scenario", "0 scenarios"), (1, "scenario", "1 scenario"),
    (2, "scenario", "2 scenarios"), (1, "match", "1 match"), (3, "match", "3 matches"),
])
def test_counts_agree_with_their_noun(count: int, noun: str, expected: str) -> None:
    assert plural(count, noun, "matches" if noun == "match" else None) == expected


def test_no_output_says_one_with_a_plural_noun(printed: tuple[dict[str, str], set[str]]
                                               ) -> None:
    wrong = [f"{command}: {m.group()}" for command, text in printed[0].items()
             for m in re.finditer(r"(?<![\d.,])1 (scenarios|samples|items|groups|epochs|pairs|"
                                  r"transcripts|raters|errors|calls|rows)\b", text)]
    assert wrong == []
