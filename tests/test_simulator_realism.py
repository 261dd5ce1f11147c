"""``harness simulator-realism``: the user-turn features on hand-written conversations, the
distances and their intervals against scipy on samples of known distributions, the realism
score's direction, bad input (one line each), and the command end to end on the shipped real
conversations and an offline run made here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from harness.errors import InputError
from harness.formats.real_conversations import load_real_conversations
from harness.models.types import Message
from harness.runs.sample import SampleRecord
from harness.runs.simulated_users import simulated_users
from harness.runs.store import RunStore, StoreError
from harness.stats.realism import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    compare_users,
    ks_statistic,
    wasserstein,
)
from harness.stats.user_turn_features import (
    FEATURE_NAMES,
    Utterance,
    conversation_features,
    fact_words,
    is_closing,
    is_correction,
    mattr,
    question_count,
    utterances,
    words,
)
from harness.transcript import StopReason, Transcript
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real-conversations" / "oasst1-en-40.jsonl"
SCENARIOS = ROOT / "scenarios"


def conversation_features_of(messages: list[Message]) -> dict[str, list[float]]:
    return conversation_features(utterances(messages))


# -- features ---------------------------------------------------------------------------


def test_features_of_a_hand_written_conversation() -> None:
    conversation = [
        Utterance("user", "Hi, my order A-1001 hasn't arrived. Can you check? Is it lost??"),
        Utterance("agent", "Sure, which email is it under?"),
        Utterance("user", "No, I said the order A-1001. It's under jo@example.com, thanks"),
    ]
    f = conversation_features(conversation)
    assert f["user_turns"] == [2.0]
    assert f["words_per_turn"] == [12.0, 10.0]
    assert f["questions_per_turn"] == [2.0, 0.0]
    # A-1001 is new in the first turn and said before in the second; the e-mail is new.
    # Sentence-initial capitals (Hi, Can, Is, No, It's) and the pronoun I are no facts.
    assert f["new_facts_per_turn"] == [1.0, 1.0]
    # Only a turn after an agent turn can correct it.
    assert f["corrections_per_turn"] == [1.0]
    assert f["ends_with_closing"] == [1.0]
    assert f["user_has_last_word"] == [1.0]
    # 22 user words, 20 distinct (order and a-1001 twice): fewer than a window, so the TTR.
    assert f["lexical_diversity"] == [pytest.approx(20 / 22)]


def test_an_agent_that_speaks_last_and_a_plain_last_turn() -> None:
    f = conversation_features([Utterance("user", "What's the weather in Paris today?"),
                               Utterance("agent", "18 °C and sunny.")])
    assert f["user_has_last_word"] == [0.0]
    assert f["ends_with_closing"] == [0.0]
    assert f["corrections_per_turn"] == []  # no user turn after the agent's
    assert f["new_facts_per_turn"] == [1.0]  # Paris


def test_names_mid_sentence_are_facts_and_sentence_starts_are_not() -> None:
    assert fact_words("Book a table for Alice at 19:30.\nTomorrow works. I'd like Rome") == {
        "alice", "19:30", "rome"}
    assert fact_words("I'm flying to Oslo") == {"oslo"}


def test_words_and_question_marks() -> None:
    assert words("don't stop: A-1001, 3.5 kg!") == ["don't", "stop", "A-1001", "3.5", "kg"]
    assert question_count("why?? and how? ok") == 2
    assert question_count("no question here") == 0


@pytest.mark.parametrize(("text", "correcting"), [
    ("No, the other one", True), ("no,the other one", True), ("that’s not it", True),
    ("that's not what I asked", True), ("Nobody, really", False),
    ("Actually it was Tuesday", True), ("you got it wrong", True), ("I said blue", True),
    ("Notably, it works", False), ("I know a wrongdoer", False), ("sounds fine", False),
])
def test_correction_markers_are_whole_words(text: str, correcting: bool) -> None:
    assert is_correction(text) is correcting


@pytest.mark.parametrize(("text", "closing"), [
    ("Thanks a lot!", True), ("perfect, bye", True), ("Thank you", True),
    ("thanksgiving plans?", False), ("tell me more", False),
])
def test_closing_markers(text: str, closing: bool) -> None:
    assert is_closing(text) is closing


def test_mattr_is_the_mean_type_token_ratio_over_every_window() -> None:
    rng = np.random.default_rng(3)
    tokens = [f"w{i}" for i in rng.integers(0, 12, size=70)]
    window = 25
    by_hand = np.mean([len(set(tokens[i:i + window])) / window
                       for i in range(len(tokens) - window + 1)])
    assert mattr(tokens, window) == pytest.approx(by_hand)
    assert mattr(tokens[:10], window) == len(set(tokens[:10])) / 10
    assert mattr([], window) is None


# -- distances, intervals and the score ----------------------------------------------------


def _conversations(values: np.ndarray) -> list[dict[str, list[float]]]:
    """One conversation per value, every feature that value (one value per conversation)."""
    return [{name: [float(v)] for name in FEATURE_NAMES} for v in values]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ks_and_wasserstein_match_scipy_ties_included(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.poisson(3, size=57).astype(float)
    b = rng.poisson(4, size=31).astype(float)
    assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic)
    c, d = rng.normal(size=40), rng.normal(0.5, 2, size=90)
    assert ks_statistic(c, d) == pytest.approx(stats.ks_2samp(c, d).statistic)
    assert wasserstein(c, d) == pytest.approx(stats.wasserstein_distance(c, d))


def test_turn_level_figures_pool_every_turn_of_every_conversation() -> None:
    rng = np.random.default_rng(5)
    real = [{name: list(rng.normal(size=int(rng.integers(1, 5)))) for name in FEATURE_NAMES}
            for _ in range(30)]
    sim = [{name: list(rng.normal(1, 1, size=int(rng.integers(1, 5))))
            for name in FEATURE_NAMES} for _ in range(20)]
    result = compare_users(real, sim, resamples=50, seed=1)
    for f in result.features:
        a = np.concatenate([c[f.name] for c in real])
        b = np.concatenate([c[f.name] for c in sim])
        assert f.n_real == a.size and f.n_simulated == b.size
        assert f.real_mean == pytest.approx(a.mean())
        assert f.ks is not None and f.wasserstein is not None
        assert f.ks.value == pytest.approx(stats.ks_2samp(a, b).statistic)
        assert f.wasserstein.value == pytest.approx(stats.wasserstein_distance(a, b))


def test_the_bootstrap_interval_agrees_with_scipy_bootstrap() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.normal(size=80), rng.normal(0.6, 1, size=60)
    result = compare_users(_conversations(a), _conversations(b), resamples=4000, seed=2)
    ks = result.features[0].ks
    w1 = result.features[0].wasserstein
    assert ks is not None and w1 is not None
    for figure, statistic in ((ks, ks_statistic), (w1, wasserstein)):
        reference = stats.bootstrap((a, b), lambda x, y, f=statistic: f(x, y),
                                    vectorized=False, paired=False, n_resamples=4000,
                                    method="percentile", random_state=7).confidence_interval
        # Two independent Monte Carlo runs of the same percentile bootstrap.
        spread = reference.high - reference.low
        assert figure.ci_low == pytest.approx(reference.low, abs=0.06 * spread + 0.01)
        assert figure.ci_high == pytest.approx(reference.high, abs=0.06 * spread + 0.01)


def test_score_is_one_minus_the_mean_ks_and_its_interval_holds_it() -> None:
    rng = np.random.default_rng(4)
    result = compare_users(_conversations(rng.normal(size=50)),
                           _conversations(rng.normal(0.3, 1, size=50)), resamples=300)
    assert result.score is not None
    ks = [f.ks.value for f in result.features if f.ks is not None]
    assert result.score.value == pytest.approx(1 - np.mean(ks))
    assert result.score.ci_low <= result.score.value <= result.score.ci_high
    assert 0 <= result.score.ci_low <= result.score.ci_high <= 1


def test_same_distribution_scores_high_and_the_score_falls_with_the_shift() -> None:
    rng = np.random.default_rng(8)
    real = rng.normal(size=200)
    base = rng.normal(size=200)
    scores = []
    for shift in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0):
        result = compare_users(_conversations(real), _conversations(base + shift),
                               resamples=100, seed=3)
        assert result.score is not None
        scores.append(result.score.value)
    assert scores[0] > 0.85
    assert all(later < earlier for earlier, later in itertools.pairwise(scores))
    assert scores[-1] < 0.1  # four standard deviations apart: hardly any overlap
    same = compare_users(_conversations(real), _conversations(base), resamples=400, seed=3)
    shifted = compare_users(_conversations(real), _conversations(base + 1), resamples=400,
                            seed=3)
    assert same.score is not None and shifted.score is not None
    assert shifted.score.ci_high < same.score.ci_low


def test_the_bootstrap_is_seeded() -> None:
    rng = np.random.default_rng(9)
    real, sim = _conversations(rng.normal(size=30)), _conversations(rng.normal(size=30))
    one = compare_users(real, sim, resamples=200, seed=5)
    assert one == compare_users(real, sim, resamples=200, seed=5)
    assert one.score != compare_users(real, sim, resamples=200, seed=6).score


def test_a_feature_one_set_lacks_is_left_out_of_the_score() -> None:
    rng = np.random.default_rng(2)
    real = _conversations(rng.normal(size=20))
    sim = _conversations(rng.normal(size=20))
    for c in sim:
        c["corrections_per_turn"] = []
    result = compare_users(real, sim, resamples=100)
    assert result.features_left_out == ["corrections_per_turn"]
    left = next(f for f in result.features if f.name == "corrections_per_turn")
    assert left.ks is None and left.simulated_mean is None and left.n_simulated == 0
    assert result.score is not None
    kept = [f.ks.value for f in result.features if f.ks is not None]
    assert len(kept) == len(FEATURE_NAMES) - 1
    assert result.score.value == pytest.approx(1 - np.mean(kept))


def test_one_conversation_is_not_a_distribution() -> None:
    with pytest.raises(ValueError, match="at least 2 in each set"):
        compare_users(_conversations(np.ones(1)), _conversations(np.ones(5)))


# -- the shipped real conversations -------------------------------------------------------


def test_the_shipped_conversations_read_and_every_one_has_a_user() -> None:
    conversations = load_real_conversations(REAL)
    assert len(conversations) == 40
    assert len({c.id for c in conversations}) == 40
    for c in conversations:
        features = conversation_features_of(c.messages)
        assert features["user_turns"][0] >= 1
        assert features["user_has_last_word"] == [0.0]  # each ends on the assistant's answer


# -- bad input ----------------------------------------------------------------------------


def _offline_run(tmp_path: Path, *targets: str, epochs: int = 2) -> Path:
    out = tmp_path / "run"
    result = run_cli("run", *targets, "--offline", "--epochs", str(epochs), "--out", out)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline run of the support scenarios (mock agent, simulator and judge)."""
    return _offline_run(tmp_path_factory.mktemp("realism"), str(SCENARIOS / "support.yaml"),
                        str(SCENARIOS / "weather.yaml"))


def _write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _conversation_line(id_: str, *roles: str) -> str:
    return json.dumps({"id": id_, "messages": [{"role": r, "content": f"{r} text"}
                                               for r in roles]})


def _one_error_line(result_stderr: str) -> str:
    lines = [line for line in result_stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result_stderr
    assert "Traceback" not in result_stderr
    return lines[0]


def test_bad_real_files_are_one_line_each(tmp_path: Path, simulated_run: Path) -> None:
    good = _conversation_line("a", "user", "assistant")
    cases = {
        "missing.jsonl": (None, "missing.jsonl"),
        "empty.jsonl": ("", "no lines"),
        "one.jsonl": (good + "\n", "at least 2 conversations"),
        "roles.jsonl": (good + "\n" + _conversation_line("b", "system", "assistant") + "\n",
                        "roles.jsonl:2: messages: at least one user message"),
        "notjson.jsonl": (good + "\n{not json\n", "notjson.jsonl:2: not valid JSON"),
        "field.jsonl": (good + "\n" + json.dumps({"id": "b", "mesages": []}) + "\n",
                        "field.jsonl:2"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        if text is not None:
            path.write_text(text, encoding="utf-8")
        result = run_cli("simulator-realism", path, simulated_run)
        assert result.returncode == 2, (name, result.stdout)
        line = _one_error_line(result.stderr)
        assert expected in line, (name, line)
        assert name in line


def test_the_non_user_roles_message_names_the_roles(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", _conversation_line("x", "system", "assistant", "tool"))
    with pytest.raises(InputError, match=r"r\.jsonl:1: messages: .*system, assistant, tool"):
        load_real_conversations(path)


def test_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run_cli("simulator-realism", REAL, tmp_path / "empty")
    line = _one_error_line(result.stderr)
    assert result.returncode == 2 and "no run store found" in line and "empty" in line
    with pytest.raises(StoreError):
        simulated_users(tmp_path / "empty")


def test_a_run_of_scripted_users_only_says_so(tmp_path: Path) -> None:
    run = _offline_run(tmp_path, f"{SCENARIOS / 'weather.yaml'}:weather-python-agent")
    result = run_cli("simulator-realism", REAL, run)
    assert result.returncode == 2
    line = _one_error_line(result.stderr)
    assert str(run) in line
    assert "no simulator model wrote one" in line and "2 have scripted users" in line


def test_a_run_with_one_simulated_conversation(tmp_path: Path) -> None:
    run = _offline_run(tmp_path, f"{SCENARIOS / 'weather.yaml'}:weather-current-paris",
                       epochs=1)
    result = run_cli("simulator-realism", REAL, run)
    assert result.returncode == 2
    assert "at least 2 samples with simulated users" in _one_error_line(result.stderr)


# -- end to end ---------------------------------------------------------------------------


def test_json_output_names_every_figure(simulated_run: Path) -> None:
    result = run_cli("simulator-realism", REAL, simulated_run, "--json", "--resamples", "200",
                     "--seed", "4")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    comparison = out["comparison"]
    assert comparison["n_real_conversations"] == 40
    assert comparison["resamples"] == 200 and comparison["seed"] == 4
    assert [f["name"] for f in comparison["features"]] == list(FEATURE_NAMES)
    # The run's simulated conversations, recomputed from the store, give the same figures.
    found = simulated_users(simulated_run)
    assert out["simulated"]["n_conversations"] == len(found.conversations)
    assert out["simulated"]["n_scripted_left_out"] == found.n_scripted > 0
    assert out["simulated"]["simulator_models"] == ["mock:simulator"]
    real = [conversation_features_of(c.messages) for c in load_real_conversations(REAL)]
    sim = [conversation_features(turns) for _, turns in found.conversations]
    by_name = {f["name"]: f for f in comparison["features"]}
    words_real = np.concatenate([c["words_per_turn"] for c in real])
    words_sim = np.concatenate([c["words_per_turn"] for c in sim])
    assert by_name["words_per_turn"]["real_mean"] == pytest.approx(words_real.mean())
    assert by_name["words_per_turn"]["ks"]["value"] == pytest.approx(
        stats.ks_2samp(words_real, words_sim).statistic)
    for f in comparison["features"]:
        if f["ks"] is not None:
            assert set(f["ks"]) == {"value", "ci_low", "ci_high"}
            assert set(f["wasserstein"]) == {"value", "ci_low", "ci_high"}
    score = comparison["score"]
    assert 0 <= score["ci_low"] <= score["value"] <= score["ci_high"] <= 1
    assert any("offline models" in note for note in out["notes"])
    assert any("scripted users" in note for note in out["notes"])


def test_the_command_defaults_are_the_library_defaults(simulated_run: Path) -> None:
    out = json.loads(run_cli("simulator-realism", REAL, simulated_run, "--json").stdout)
    assert out["comparison"]["resamples"] == DEFAULT_RESAMPLES
    assert out["comparison"]["seed"] == DEFAULT_SEED


def test_the_terminal_table_at_80_columns(simulated_run: Path) -> None:
    result = run_cli("simulator-realism", REAL, simulated_run, "--resamples", "100")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines)
    for name in FEATURE_NAMES:  # each feature whole, on one line
        assert sum(name in line for line in lines) == 1, name
    score_line = next(line for line in lines if line.startswith("realism score"))
    value = json.loads(run_cli("simulator-realism", REAL, simulated_run, "--json",
                               "--resamples", "100").stdout)["comparison"]["score"]["value"]
    assert score_line.startswith(f"realism score {value:.2f} [")
    assert lines[-1].strip().startswith("40 real conversations")


def _sample(scenario: str, epoch: int, *, simulator: bool, stop: StopReason = "goal_met"
            ) -> SampleRecord:
    messages = [Message(role="user", content=f"Hello from {scenario}"),
                Message(role="assistant", content="", tool_calls=()),
                Message(role="assistant", content="Here you are.")]
    transcript = Transcript(
        scenario_id=scenario, epoch=epoch, stop_reason=stop,
        history=[Message(role="user", content="given, not simulated")], messages=messages,
        models={"agent": "mock:agent", **({"simulator": "mock:simulator"} if simulator
                                          else {})})
    errored = stop == "agent_error"
    return SampleRecord(scenario_id=scenario, epoch=epoch, transcript=transcript,
                        status="errored" if errored else "scored",
                        score=None if errored else 1.0, passed=None if errored else True)


def test_only_simulated_finished_samples_count_and_history_is_left_out(tmp_path: Path
                                                                       ) -> None:
    with RunStore.create(tmp_path / "run", {}) as store:
        for sample in (_sample("a", 0, simulator=True), _sample("a", 1, simulator=True),
                       _sample("b", 0, simulator=False),
                       _sample("c", 0, simulator=True, stop="agent_error")):
            store.write_sample(sample)
    found = simulated_users(tmp_path / "run")
    assert (found.n_samples, found.n_scripted, found.n_errored) == (4, 1, 1)
    assert [cid for cid, _ in found.conversations] == ["a#0", "a#1"]
    assert found.conversations[0][1] == [Utterance("user", "Hello from a"),
                                         Utterance("agent", "Here you are.")]
    assert found.simulator_models == ["mock:simulator"]
