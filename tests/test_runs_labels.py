"""Human labels as data of a run: the Label model (contract 10), what can be labelled on a
sample, the labels table (last one counts, history kept, safe with several writers), the
run's recorded scenarios and rubrics, and the random queue."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.formats import load_scenarios
from harness.judging.rubric import load_rubrics
from harness.runs.labels import check_label, label_targets, random_queue, sample_rubrics
from harness.runs.store import RunStore, StoreError
from tests.helpers.labelled_runs import WEATHER, label, offline_run, write_labels_repeatedly


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return offline_run(tmp_path / "run")


# -- the Label model -------------------------------------------------------------------


def test_label_sets_labelled_at_and_keeps_values_as_given() -> None:
    made = label(target="criterion:final_response_quality/correctness", value=4)
    assert made.labelled_at.endswith("+00:00")
    assert made.value == 4 and isinstance(made.value, int)
    assert made.to_json() == {"scenario_id": "weather-current-paris", "epoch": 0,
                              "annotator": "ana", "target": made.target, "value": 4,
                              "random": True, "labelled_at": made.labelled_at}


@pytest.mark.parametrize(("fields", "expected"), [
    ({"target": "passed", "value": 1}, "takes true or false"),
    ({"target": "rubric:safety", "value": "true"}, "value"),
    ({"target": "score", "value": True}, "takes a number"),
    ({"target": "score", "value": 1.5}, "from 0 to 1"),
    ({"target": "criterion:x/y", "value": "4"}, "value"),
    ({"target": "verdict"}, "criterion:<rubric id>/<criterion id>"),
    ({"target": "criterion:x"}, "expected"),
    ({"annotator": "  "}, "must not be blank"),
    ({"annotator": ""}, "at least 1 character"),
    ({"epoch": -1}, "greater than or equal to 0"),
    ({"epoch": "0"}, "valid integer"),
    ({"labelled_at": "yesterday"}, "ISO 8601"),
    ({"random": "yes"}, "valid boolean"),
    ({"extra": 1}, "Extra inputs are not permitted"),
])
def test_label_refuses_what_contract_10_does_not_allow(fields: dict[str, object],
                                                       expected: str) -> None:
    with pytest.raises(ValidationError, match=expected):
        label(**fields)  # type: ignore[arg-type]


# -- what a reviewer can label ---------------------------------------------------------


def test_targets_give_the_judges_verdict_on_the_rubrics_own_scale(run_dir: Path) -> None:
    with RunStore.open(run_dir) as store:
        record = store.sample("weather-current-paris", 0)
        rubrics = store.rubrics()
    assert record is not None
    targets = {t.target: t for t in label_targets(record, rubrics)}
    assert targets["passed"].judge_value is record.passed
    assert targets["score"].judge_value == record.score
    judged = next(j for j in record.judgments if j["rubric_id"] == "final_response_quality")
    assert targets["rubric:final_response_quality"].judge_value is judged["passed"]
    correctness = targets["criterion:final_response_quality/correctness"]
    assert correctness.kind == "scale"
    assert [p.value for p in correctness.values] == [1, 2, 3, 4, 5]
    assert all(type(p.value) is int for p in correctness.values)  # as the rubric writes them
    assert correctness.values[0].meaning.startswith("Wrong")  # the criterion's own words
    # The judge's raw answer, as it gave it (not the normalised value the record keeps).
    raw = [v["score"] for vote in judged["judgments"] for v in vote["verdicts"]
           if v["criterion_id"] == "correctness"]
    assert correctness.judge_votes == raw
    assert correctness.judge_value == raw[0]
    assert correctness.judge_reasoning and correctness.question.startswith("Is the final")
    # Every criterion of every rubric the sample was judged with is there.
    expected = {f"criterion:{j['rubric_id']}/{c['criterion_id']}" for j in record.judgments
                for c in j["criteria"]}
    assert expected <= set(targets)


def test_check_label_names_an_unknown_target_and_a_value_off_the_scale(run_dir: Path) -> None:
    with RunStore.open(run_dir) as store:
        record = store.sample("weather-current-paris", 0)
        assert record is not None
        targets = label_targets(record, store.rubrics())
    ok = label(target="criterion:final_response_quality/correctness", value=5)
    assert check_label(ok, targets) is None
    off = label(target="criterion:final_response_quality/correctness", value=6)
    assert check_label(off, targets) == ("value: 6 is not on the scale of "
                                         "criterion:final_response_quality/correctness; "
                                         "expected one of 1, 2, 3, 4, 5")
    half = label(target="criterion:final_response_quality/correctness", value=4.5)
    assert check_label(half, targets) is not None
    unknown = label(target="rubric:safety")
    problem = check_label(unknown, targets)
    assert problem is not None and problem.startswith("target: this sample has no 'rubric:safety'")


def test_inline_rubrics_of_a_scenario_replace_the_runs_own() -> None:
    rubrics = load_rubrics([])
    scenarios = load_scenarios([WEATHER])
    inline = rubrics["safety"].model_copy(update={"description": "inline"})
    scenario = scenarios[0].model_copy(update={"inline_rubrics": [inline]})
    assert sample_rubrics(rubrics, scenario)["safety"].description == "inline"
    assert sample_rubrics(rubrics, None) == rubrics


# -- the labels table ------------------------------------------------------------------


def test_the_last_label_counts_and_the_history_is_kept(run_dir: Path) -> None:
    first = label(value=True, labelled_at="2026-11-27T10:00:00Z")
    second = label(value=False, labelled_at="2026-11-27T11:00:00Z", comment="on reflection")
    other = label(annotator="bo", value=True, labelled_at="2026-11-27T10:30:00Z")
    with RunStore.open(run_dir) as store:
        assert store.labels() == []  # a store with no labels table yet
        store.add_labels([first, other])
        store.add_labels([second])
        # Written last but labelled earlier: an old file imported again does not win.
        store.add_labels([label(value=True, labelled_at="2026-11-27T09:00:00Z")])
    with RunStore.open(run_dir) as store:
        assert store.labels() == [second, other]
        history = store.labels(history=True)
    assert [h.labelled_at for h in history] == [
        "2026-11-27T09:00:00Z", "2026-11-27T10:00:00Z", "2026-11-27T10:30:00Z",
        "2026-11-27T11:00:00Z"]


def test_add_labels_is_all_or_nothing(run_dir: Path) -> None:
    kept = label(value=True)
    with RunStore.open(run_dir) as store:
        store.add_labels([kept])
        # The second row of the next write fails (as a full disk would): neither is kept.
        db = sqlite3.connect(run_dir / "run.sqlite")
        with db:
            db.execute("CREATE TRIGGER refuse BEFORE INSERT ON labels WHEN NEW.annotator = "
                       "'bo' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        db.close()
        with pytest.raises(StoreError, match="cannot write the labels .*refused.*none was stored"):
            store.add_labels([label(annotator="cy"), label(annotator="bo")])
        assert store.labels(history=True) == [kept]


def test_two_reviewers_and_the_run_write_at_once_and_no_label_is_lost(run_dir: Path) -> None:
    count = 300
    spawn = multiprocessing.get_context("spawn")
    start = spawn.Barrier(3)  # the two reviewers and the run begin together
    writers = [spawn.Process(target=write_labels_repeatedly,
                             args=(str(run_dir), name, count, start))
               for name in ("ana", "bo")]
    failures: list[BaseException] = []

    def run_writes_samples() -> None:
        try:
            with RunStore.open(run_dir) as store:
                record = store.sample("weather-current-paris", 0)
                assert record is not None
                start.wait()
                for epoch in range(100, 100 + count):
                    store.write_sample(record.model_copy(update={"epoch": epoch}))
        except BaseException as err:
            failures.append(err)

    for writer in writers:
        writer.start()
    sampler = threading.Thread(target=run_writes_samples)
    sampler.start()
    for writer in writers:
        writer.join(timeout=120)
    sampler.join(timeout=120)
    assert [w.exitcode for w in writers] == [0, 0] and not failures
    with RunStore.open(run_dir) as store:
        history = store.labels(history=True)
        assert len(history) == 2 * count
        assert {(lb.annotator, lb.comment) for lb in history} == {
            (name, f"version {n}") for name in ("ana", "bo") for n in range(count)}
        assert store.count() == 2 * 6 + count


# -- what the run ran --------------------------------------------------------------------


def test_the_run_records_its_scenarios_and_rubrics_as_they_were(run_dir: Path) -> None:
    loaded = {s.id: s for s in load_scenarios([WEATHER])}
    with RunStore.open(run_dir) as store:
        recorded = store.scenario_definitions()
        rubrics = store.rubrics()
    assert list(recorded) == list(loaded)
    for sid, scenario in loaded.items():
        assert recorded[sid] == scenario
        assert recorded[sid].source == scenario.source
    assert rubrics == load_rubrics([])


def test_a_store_from_before_reads_the_stored_paths(run_dir: Path, tmp_path: Path) -> None:
    db = sqlite3.connect(run_dir / "run.sqlite")
    with db:
        db.execute("DELETE FROM meta WHERE key IN ('scenario_definitions', "
                   "'rubric_definitions')")
    db.close()
    with RunStore.open(run_dir) as store:
        assert list(store.scenario_definitions()) == [s.id for s in load_scenarios([WEATHER])]
        assert set(store.rubrics()) == set(load_rubrics([]))
    # The files are gone: one clear error.
    moved = tmp_path / "moved"
    db = sqlite3.connect(run_dir / "run.sqlite")
    with db:
        db.execute("UPDATE config SET json = replace(json, ?, ?)",
                   (str(WEATHER), str(moved / "weather.yaml")))
    db.close()
    with RunStore.open(run_dir) as store, pytest.raises(
            StoreError, match="were not recorded .* reading them from the stored paths failed"):
        store.scenario_definitions()


# -- the random queue --------------------------------------------------------------------


def test_the_random_queue_is_one_seeded_order_that_new_samples_join(run_dir: Path) -> None:
    with RunStore.open(run_dir) as store:
        first = random_queue(store)
        scored = {(s, e) for s, e, status, *_ in store.score_rows() if status == "scored"}
        assert set(first) == scored and len(first) == len(scored)
        assert first != sorted(first)  # shuffled (12 samples: sorted by chance is 1 in 12!)
    with RunStore.open(run_dir) as store:
        assert random_queue(store) == first
        record = store.sample(*first[0])
        assert record is not None
        store.write_sample(record.model_copy(update={"epoch": 99}))
        grown = random_queue(store)
    assert [key for key in grown if key[1] != 99] == first


def test_the_random_queue_orders_by_a_hash_of_its_recorded_seed_and_each_key(
        run_dir: Path) -> None:
    """The order is the SHA-256 of "seed NUL scenario NUL epoch" (docs/labels.md), the seed
    16 hex digits drawn once: two runs draw different seeds, a recorded seed is kept."""
    import hashlib
    import shutil

    from harness.runs.labels import QUEUE_SEED_KEY

    other = Path(shutil.copytree(run_dir, run_dir.parent / "other"))
    with RunStore.open(run_dir) as store, RunStore.open(other) as copy:
        assert store.meta_value(QUEUE_SEED_KEY) is None
        order = random_queue(store)
        seed = store.meta_value(QUEUE_SEED_KEY)
        assert seed is not None and len(seed) == 16 and int(seed, 16) >= 0
        assert order == sorted(order, key=lambda key: hashlib.sha256(
            f"{seed}\0{key[0]}\0{key[1]}".encode()).hexdigest())
        assert random_queue(copy) != order and copy.meta_value(QUEUE_SEED_KEY) != seed
        copy.record_meta_once(QUEUE_SEED_KEY, "x")  # already recorded: kept
        assert copy.meta_value(QUEUE_SEED_KEY) not in (None, "x")
    with RunStore.open(run_dir) as store:
        assert random_queue(store) == order and store.meta_value(QUEUE_SEED_KEY) == seed


# -- small pieces the messages and pages use -----------------------------------------------


def test_some_names_six_then_counts_the_rest() -> None:
    from harness.runs.labels import some

    six = [f"s{i}" for i in range(6)]
    assert some(six) == "s0, s1, s2, s3, s4, s5"
    assert some([*six, "s6"]) == "s0, s1, s2, s3, s4, s5, … (7 in all)"
    assert some(["a", "b", "c"], shown=2) == "a, b, … (3 in all)"
    assert some([]) == ""


def test_the_pass_fail_target_asks_its_question_with_pass_and_fail(run_dir: Path) -> None:
    with RunStore.open(run_dir) as store:
        record = store.sample("weather-current-paris", 0)
        rubrics = store.rubrics()
    assert record is not None
    passed = next(t for t in label_targets(record, rubrics) if t.target == "passed")
    assert (passed.kind, passed.title, passed.question) == (
        "bool", "the sample passed", "Did the agent do what the user needed?")
    assert [(p.value, p.label) for p in passed.values] == [(True, "pass"), (False, "fail")]


def test_a_label_file_keeps_text_as_written(run_dir: Path) -> None:
    from harness.runs.label_files import label_file_text

    text = label_file_text([label(comment="café: ☂ « wrong unit »")])
    assert "café: ☂ « wrong unit »" in text and text.endswith("}\n")


def test_a_run_with_no_sample_names_no_scenario(run_dir: Path) -> None:
    from harness.runs.label_files import RunLabelChecker

    db = sqlite3.connect(run_dir / "run.sqlite")
    with db:
        db.execute("DELETE FROM samples")
    db.close()
    with RunStore.open(run_dir) as store:
        found = RunLabelChecker(store).problem(label())
    assert found == ("scenario_id", "'weather-current-paris' is not a scenario of this run "
                     "(it has none)")


def test_a_store_from_before_reads_only_the_scenarios_it_selected(tmp_path: Path) -> None:
    import asyncio

    from harness.runs.api import run_suite
    from harness.runs.config import RunConfig
    from harness.scenarios.selectors import ScenarioFilter

    run = tmp_path / "selected"
    config = RunConfig(scenario_paths=[str(WEATHER)], offline=True, epochs=1, cache_mode="off",
                       bootstrap_resamples=0, select=ScenarioFilter(keywords=["paris"]))
    asyncio.run(run_suite(config, run))

    def definitions(*, recorded_ids: list[str] | None) -> list[str]:
        db = sqlite3.connect(run / "run.sqlite")
        with db:
            db.execute("DELETE FROM meta WHERE key IN ('scenario_definitions', 'scenario_ids')")
            if recorded_ids is not None:
                db.execute("INSERT INTO meta (key, value) VALUES ('scenario_ids', ?)",
                           (json.dumps(recorded_ids),))
        db.close()
        with RunStore.open(run) as store:
            return list(store.scenario_definitions())

    # no record of either: the run's own selection applies to the files
    assert definitions(recorded_ids=None) == ["weather-current-paris",
                                              "weather-two-turns-paris"]
    # the scenarios the run recorded it ran, when it did
    assert definitions(recorded_ids=["weather-two-turns-paris"]) == ["weather-two-turns-paris"]


def test_every_target_of_a_sample_as_the_page_shows_it(run_dir: Path) -> None:
    """Each target's title, question, ids, levels and the judge's values, pinned whole; a
    judgment that is not a rubric's is skipped, an unscored one has no judge values, a rubric
    the run does not know gives its pass/fail alone, and empty reasoning is not shown."""
    import copy

    with RunStore.open(run_dir) as store:
        record = store.sample("weather-current-paris", 0)
        rubrics = store.rubrics()
    assert record is not None
    [judged] = [j for j in record.judgments if j["rubric_id"] == "final_response_quality"]
    votes = copy.deepcopy(judged)
    votes["judgments"][0]["verdicts"][0]["reasoning"] = ""
    votes["criteria"][0].update(value=0.625, votes=[0.5, 0.625])
    errored = {**copy.deepcopy(judged), "status": "errored", "passed": True}
    unknown = {**copy.deepcopy(judged), "rubric_id": "gone"}
    varied = record.model_copy(update={"judgments": [{"rubric_id": 7}, votes]})
    targets = {t.target: t for t in label_targets(varied, rubrics)}
    assert list(targets)[:3] == ["passed", "score", "rubric:final_response_quality"]
    score = targets["score"]
    assert (score.kind, score.title, score.question, score.values, score.judge_value) == (
        "unit", "the sample's score", "How good was the agent, from 0 (worst) to 1 (best)?",
        [], record.score)
    rubric = rubrics["final_response_quality"]
    whole = targets["rubric:final_response_quality"]
    assert (whole.title, whole.question, whole.rubric_id, whole.criterion_id) == (
        "rubric final_response_quality", rubric.description, "final_response_quality", None)
    assert [p.label for p in whole.values] == ["pass", "fail"]
    assert whole.judge_value is True
    correctness = targets["criterion:final_response_quality/correctness"]
    assert (correctness.title, correctness.rubric_id, correctness.criterion_id) == (
        "correctness (final_response_quality)", "final_response_quality", "correctness")
    criterion = rubric.criterion("correctness")
    assert [(p.value, p.label, p.meaning) for p in correctness.values] == [
        (v, name, meaning) for v, name, meaning in rubric.level_meanings(criterion)]
    # on its 1-5 scale: 0.625 is 3.5, votes 3 and 3.5 (whole numbers stay whole)
    assert correctness.judge_value == 3.5 and correctness.judge_votes == [3, 3.5]
    assert type(correctness.judge_votes[0]) is int
    assert correctness.judge_reasoning == []  # its one reasoning was empty
    assert targets["criterion:final_response_quality/clarity"].judge_reasoning
    # an unscored judgment: no judge value anywhere, though its fields hold some
    quiet = {t.target: t for t in label_targets(
        record.model_copy(update={"judgments": [errored]}), rubrics)}
    assert quiet["rubric:final_response_quality"].judge_value is None
    assert all(t.judge_value is None and t.judge_votes == [] for name, t in quiet.items()
               if name.startswith("criterion:"))
    # a rubric the run does not know: its pass/fail only, with no question
    [gone] = [t for t in label_targets(record.model_copy(update={"judgments": [unknown]}),
                                       rubrics) if t.target.startswith("rubric:")]
    assert (gone.target, gone.question, gone.rubric_id) == ("rubric:gone", "", "gone")
    assert not any(t.target.startswith("criterion:gone/") for t in label_targets(
        record.model_copy(update={"judgments": [unknown]}), rubrics))
