"""The calibration verdict: whether to trust a judge, one sentence built from its figures
(Krippendorff's bars for α with its interval, Landis and Koch's bands for κ), and the page
ending with it; the page says "3 judge samples" when every item has as many."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.calibration import AnalysisOptions, analyse
from harness.calibration.judgments import load_judgments
from harness.calibration.report import (
    BootstrapEstimate,
    PairwiseJudgeReport,
    PointwiseJudgeReport,
)
from harness.report.calibration_verdict import (
    judge_verdict,
    kappa_band,
    pairwise_verdict,
    pointwise_verdict,
)
from harness.report.html.calibration_page import calibration_page, count_range
from tests.helpers.cli import run_cli

ROOT = Path(__file__).parents[1]
POINTWISE = ROOT / "examples" / "calibration" / "pointwise_judgments.jsonl"


def _e(value: float | None, low: float | None = None, high: float | None = None,
       n: int = 40) -> BootstrapEstimate:
    return BootstrapEstimate(value=value, ci_low=low, ci_high=high, n=n,
                             undefined=None if value is not None else "every score the same")


def _pointwise(alpha: BootstrapEstimate, kappa: float = 0.5) -> PointwiseJudgeReport:
    # only the fields the verdict reads; the rest of a report is not needed to judge it
    return PointwiseJudgeReport.model_construct(
        krippendorff_alpha=alpha, krippendorff_alpha_nominal=_e(0.1),
        krippendorff_alpha_ordinal=alpha, krippendorff_alpha_interval=_e(0.2),
        cohen_kappa=_e(kappa))


@pytest.mark.parametrize(("value", "low", "high", "trust"), [
    (0.85, 0.70, 0.93, "trust"),       # reliable, interval above the tentative bar
    (0.85, 0.60, 0.95, "caution"),     # reliable value, interval too wide
    (0.70, 0.67, 0.78, "caution"),     # tentative band
    (0.800, 0.667, 0.9, "trust"),      # both bars exactly: Krippendorff's >=
    (0.666, 0.5, 0.75, "distrust"),    # just under the tentative bar
    (0.30, 0.10, 0.50, "distrust"),
])
def test_alpha_against_krippendorffs_bars_with_its_interval(
        value: float, low: float, high: float, trust: str) -> None:
    verdict = pointwise_verdict(_pointwise(_e(value, low, high)))
    assert verdict.trust == trust
    assert f"{value:.3f} [{low:.3f}, {high:.3f}]" in verdict.sentence
    assert "Krippendorff's α (ordinal)" in verdict.sentence and "40 items" in verdict.sentence
    assert verdict.sentence.startswith({"trust": "Trust this judge:",
                                        "caution": "Trust this judge with caution:",
                                        "distrust": "Do not trust this judge yet:"}[trust])


def test_a_wide_interval_below_the_bar_says_more_items_may_change_it() -> None:
    assert "more items" in pointwise_verdict(_pointwise(_e(0.5, 0.1, 0.85))).sentence
    assert "more items" not in pointwise_verdict(_pointwise(_e(0.5, 0.1, 0.7))).sentence


def test_without_an_interval_the_value_alone_decides_and_the_sentence_says_so() -> None:
    verdict = pointwise_verdict(_pointwise(_e(0.9)))
    assert verdict.trust == "trust" and "0.900 (no interval)" in verdict.sentence


def test_an_undefined_alpha_gives_no_verdict_and_says_why() -> None:
    verdict = pointwise_verdict(_pointwise(_e(None)))
    assert verdict.trust == "undecided" and "every score the same" in verdict.sentence


@pytest.mark.parametrize(("kappa", "band"), [
    (-0.1, "poor"), (0.0, "poor"), (0.2, "slight"), (0.21, "fair"), (0.4, "fair"),
    (0.41, "moderate"), (0.61, "substantial"), (0.8, "substantial"), (0.81, "almost perfect"),
])
def test_kappa_bands_are_landis_and_kochs(kappa: float, band: str) -> None:
    assert kappa_band(kappa) == band


def test_the_sentence_names_kappa_and_its_band() -> None:
    sentence = pointwise_verdict(_pointwise(_e(0.85, 0.7, 0.9), kappa=0.55)).sentence
    assert "Cohen's κ 0.550 is moderate agreement" in sentence


def _pairwise(accuracy: BootstrapEstimate, consistency: float) -> PairwiseJudgeReport:
    return PairwiseJudgeReport.model_construct(accuracy=accuracy,
                                               position_consistency=_e(consistency))


@pytest.mark.parametrize(("accuracy", "consistency", "trust"), [
    (_e(0.9, 0.82, 0.95), 0.9, "trust"),
    (_e(0.9, 0.75, 0.95), 0.9, "caution"),
    (_e(0.9, 0.82, 0.95), 0.7, "caution"),
    (_e(0.6, 0.45, 0.75), 0.9, "distrust"),   # a coin is inside the interval
    (_e(0.9, 0.82, 0.95), 0.6, "distrust"),   # the order decides too often
])
def test_pairwise_rule_of_thumb(accuracy: BootstrapEstimate, consistency: float,
                                trust: str) -> None:
    verdict = pairwise_verdict(_pairwise(accuracy, consistency))
    assert verdict.trust == trust and "rule of thumb" in verdict.sentence
    assert judge_verdict(_pairwise(accuracy, consistency)) == verdict


def test_count_range_says_one_number_when_every_item_has_as_many() -> None:
    assert count_range((3, 3), "judge samples") == "3 judge samples"
    assert count_range((2, 3), "raters") == "2–3 raters"


def test_the_page_ends_with_the_verdict_built_from_its_figures() -> None:
    judgments = load_judgments(POINTWISE)
    report = analyse(judgments, AnalysisOptions(n_resamples=100, pass_threshold=4))
    html = calibration_page(report, judgments)
    expected = judge_verdict(report.judges[0], report.human_baseline)
    main = html[:html.index("</main>")]
    last = main[main.rindex("<section"):]
    assert 'id="verdict"' in last and 'data-trust="' + expected.trust + '"' in last
    sentence = expected.sentence.replace("'", "&#39;")
    assert sentence in last


def test_the_page_says_3_judge_samples_when_every_item_has_3(tmp_path: Path) -> None:
    lines = [json.dumps({"item_id": f"i{i}", "human": [1 + i % 5, 1 + (i + 1) % 5],
                         "judge": [1 + i % 5] * 3}) for i in range(12)]
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    judgments = load_judgments(path)
    html = calibration_page(analyse(judgments, AnalysisOptions(n_resamples=50)), judgments)
    assert "(2 raters, 3 judge samples each)" in html and "3–3" not in html


def test_the_terminal_report_ends_with_one_verdict_per_judge() -> None:
    done = run_cli("calibrate", "--judgments", POINTWISE, "--resamples", "100",
                   columns=400)
    assert done.returncode == 0, done.stderr
    tail = done.stdout.strip().splitlines()[-2:]
    assert [line.split(":")[:2] for line in tail] == [["verdict", " strict-prompt"],
                                                      ["verdict", " lenient-prompt"]]
    report = analyse(load_judgments(POINTWISE), AnalysisOptions(n_resamples=100))
    assert judge_verdict(report.judges[0], report.human_baseline).sentence in tail[0]
