"""The pytest plugin (entry point ``pytest11: harness``): scenarios as test items.

Off unless asked for. A session collects scenarios only with ``--harness-scenarios PATH``
(every scenario file under PATH, as ``harness run PATH`` reads them) or with the ini option
``harness_collect = true`` (then ``*.scenario.yaml`` / ``*.scenario.yml`` files in the test
tree). Without either, the plugin adds command-line options, two fixtures and nothing
else: no items, no hooks at collection time, and this module imports only pytest (the
harness is imported when a scenario is collected or a fixture is used).

One test item per scenario (a :class:`pytest.Function`, so that it is given the session's
``tmp_path_factory`` as any test is). The first item to run runs every selected scenario
item once, in one run (one store, one ``summary.json``, one ``report.html``), through the
engine of ``harness run``; each item then reports its scenario's result, failing with
:func:`harness.testing.outcome.failure_message`. Deselected items (``-k``, ``-m``) are not
run. Under pytest-xdist a worker cannot know which items it will be given, so there each
item runs its own scenario (one run directory per item).

``--harness-gate-on corrected-lower-bound`` gates the suite, as ``harness run --gate-on
corrected-lower-bound`` does: one more item, :data:`SUITE_ITEM`, passes when the lower end
of the suite's pass rate corrected by random human labels (``--harness-labels FILE``, or
the run's stored ones) reaches ``--harness-min-pass-rate``, and with fewer than 10 random
labels fails saying how many more it needs. A scenario's few epochs give no corrected figure,
so its item then fails only on errored samples; the terminal summary prints the gate's line
whether it passed or not. Under xdist the suite item runs every selected scenario in a run of
its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.models.hub import ModelHub
    from harness.runs.api import RunResult
    from harness.runs.config import RunConfig
    from harness.testing.server import LoopbackServer

TREE_SUFFIXES = (".scenario.yaml", ".scenario.yml")
MAX_EPOCHS = 10_000  # RunConfig.epochs' bound, kept equal by a test (this module imports
# only pytest until it is used)
_RUN_KEY = pytest.StashKey["RunResult | BaseException"]()
CORRECTED = "corrected-lower-bound"
SUITE_ITEM = "harness::suite-gate"
"""The node id of the item that gates the suite on the corrected lower bound."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent-eval-harness scenarios as test items")
    group.addoption("--harness-scenarios", action="append", default=[], metavar="PATH",
                    help="collect every scenario file under PATH (repeatable)")
    group.addoption("--harness-epochs", type=_epochs, default=5, metavar="K",
                    help="samples per scenario (default 5)")
    group.addoption("--harness-agent", metavar="MODEL", help="the agent model, for every "
                    "scenario")
    group.addoption("--harness-simulator", metavar="MODEL", help="the user simulator model")
    group.addoption("--harness-judge", action="append", default=[], metavar="MODEL",
                    help="the judge model (repeat for a panel)")
    group.addoption("--harness-offline", action="store_true",
                    help="mock: models for every role not named")
    group.addoption("--harness-min-pass-rate", type=float, default=1.0, metavar="P",
                    help="a scenario passes when its pass rate reaches P (default 1.0)")
    group.addoption("--harness-gate-on", choices=("mean", "lower-bound", CORRECTED),
                    default="mean",
                    help="compare P with each scenario's pass rate or its interval's lower "
                    "bound; or (corrected-lower-bound) with the lower bound of the suite's "
                    "pass rate corrected by random human labels, in one more item")
    group.addoption("--harness-labels", metavar="FILE",
                    help="with --harness-gate-on corrected-lower-bound: human labels of the "
                    "run's samples (contract 10 JSONL) instead of those stored in the run")
    group.addoption("--harness-out", metavar="DIR",
                    help="the run directory (default: one under pytest's temporary folder)")
    parser.addini("harness_collect", type="bool", default=False,
                  help="collect *.scenario.yaml files in the test tree as harness items")


def _epochs(text: str) -> int:
    """``--harness-epochs``: a whole number a run accepts, refused as a usage error (as
    ``abc`` is) rather than by the run's configuration on every item."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_EPOCHS:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of epochs from 1 to {MAX_EPOCHS}, got {text!r}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    paths = [Path(p) for p in config.getoption("harness_scenarios")]
    if not paths and not config.getini("harness_collect"):
        return
    rate = config.getoption("harness_min_pass_rate")
    if not 0.0 <= rate <= 1.0:
        raise pytest.UsageError(f"--harness-min-pass-rate must be in [0, 1], got {rate}")
    root = config.invocation_params.dir
    _check_labels_option(config, root)
    resolved = [(p if p.is_absolute() else root / p).resolve() for p in paths]
    for path in resolved:
        if not path.exists():
            raise pytest.UsageError(f"--harness-scenarios {path}: no such file or directory")
        if str(path) not in config.args:  # a path already collected is not collected twice
            config.args.append(str(path))
    config.pluginmanager.register(ScenarioCollection(config, resolved), "harness-scenarios")


def _check_labels_option(config: pytest.Config, root: Path) -> None:
    """``--harness-labels``: only with the corrected gate (it would be silently ignored),
    a file that exists and whose every line is a label (checked again against the run once
    it has run); kept as an absolute path."""
    given = config.getoption("harness_labels")
    if given is None:
        return
    if config.getoption("harness_gate_on") != CORRECTED:
        raise pytest.UsageError("--harness-labels applies only with --harness-gate-on "
                                f"{CORRECTED} (the labels correct the gated figure)")
    from harness.errors import HarnessError
    from harness.files import read_text
    from harness.runs.label_files import parse_label_lines

    path = (root / given).resolve()
    if not path.is_file():
        raise pytest.UsageError(f"--harness-labels {path}: no such file")
    try:
        parsed = parse_label_lines(path, read_text(path, "a JSONL file of labels"))
    except HarnessError as err:
        raise pytest.UsageError(str(err)) from None
    if not parsed:
        raise pytest.UsageError(f"{path}: holds no labels; expected one JSON object a line "
                                "(contract 10)")
    config.option.harness_labels = str(path)


class ScenarioCollection:
    """The hooks of a session that asked for scenarios, and its one run."""

    def __init__(self, config: pytest.Config, roots: list[Path]) -> None:
        self.config = config
        self.roots = roots
        self.tree = bool(config.getini("harness_collect"))

    def _wanted(self, path: Path) -> bool:
        if self.tree and path.name.endswith(TREE_SUFFIXES):
            return True
        if any(path.is_relative_to(root) for root in self.roots):
            from harness.formats import is_scenario_file

            return is_scenario_file(path)
        return False

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector
                            ) -> pytest.Collector | None:
        if self._wanted(file_path):
            return ScenarioFile.from_parent(parent, path=file_path)
        return None

    @pytest.hookimpl(tryfirst=True)  # before -k and -m deselect, so they see the item
    def pytest_collection_modifyitems(self, session: pytest.Session,
                                      items: list[pytest.Item]) -> None:
        if self.config.getoption("harness_gate_on") == CORRECTED and any(
                isinstance(i, ScenarioItem) for i in items):
            group = SuiteNode.from_parent(session, name="harness", nodeid="harness")
            items.append(SuiteGateItem.from_parent(group, name="suite-gate"))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        # From the reports (under xdist the item ran in a worker), passed or failed.
        lines = [str(value) for reports in terminalreporter.stats.values()
                 for report in reports if getattr(report, "when", None) == "call"
                 for key, value in getattr(report, "user_properties", ())
                 if key == GATE_PROPERTY]
        if lines:
            terminalreporter.section("harness suite gate")
            for line in lines:
                terminalreporter.write_line(line)

    def run_for(self, item: ScenarioItem | SuiteGateItem,
                tmp_path_factory: pytest.TempPathFactory) -> RunResult:
        """The run holding ``item``'s scenario: this process's one run of every selected
        scenario item (under xdist, a run of this item alone; for the suite item, of every
        selected scenario), in a directory from ``tmp_path_factory`` unless
        ``--harness-out``. A failure to start the run (bad input, a missing model) is kept
        and raised for every item."""
        workers = hasattr(self.config, "workerinput")
        holder = item.stash if workers else self.config.stash
        if _RUN_KEY not in holder:
            items = [item] if workers and isinstance(item, ScenarioItem) else [
                i for i in item.session.items if isinstance(i, ScenarioItem)]
            try:
                holder[_RUN_KEY] = self._run(items, item, tmp_path_factory)
            except Exception as err:
                holder[_RUN_KEY] = err
        got = holder[_RUN_KEY]
        if isinstance(got, BaseException):
            raise got
        return got

    def _config(self, items: list[ScenarioItem]) -> RunConfig:
        from harness.scenarios.selectors import Selection, merge_selections
        from harness.testing.evaluation import run_config

        selections = merge_selections(Selection(i.path, (i.scenario_id,)) for i in items)
        opt = self.config.getoption
        return run_config(
            # One selector per id, so an id holding "," or ":" is never split.
            [f"{s.path}:{one}" for s in selections for one in s.ids or ()],
            agent=opt("harness_agent"), simulator=opt("harness_simulator"),
            judge=opt("harness_judge"), offline=opt("harness_offline"),
            epochs=opt("harness_epochs"),
            cache_path=str(self.config.rootpath / ".harness" / "cache.sqlite"),
        )

    def _run(self, items: list[ScenarioItem], first: pytest.Item,
             tmp_path_factory: pytest.TempPathFactory) -> RunResult:
        from harness.runs import event_loop
        from harness.runs.api import run_suite
        from harness.testing.evaluation import write_report

        out = self.config.getoption("harness_out")
        if out is None:
            run_dir = tmp_path_factory.mktemp("harness-run")
        else:
            run_dir = Path(out).resolve()
            if hasattr(self.config, "workerinput"):
                run_dir = run_dir / first.nodeid.replace("/", "_").replace(":", "_")
        result = event_loop.run(run_suite(self._config(items), run_dir))
        write_report(result.run_dir)
        return result


class ScenarioFile(pytest.File):
    """A scenario file (or ADK eval set): one item per scenario in it."""

    def collect(self) -> Iterator[ScenarioItem]:
        from harness.formats import load_scenarios

        for scenario in load_scenarios([self.path]):
            yield ScenarioItem.from_parent(self, name=scenario.id, scenario_id=scenario.id)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        from harness.errors import HarnessError

        if isinstance(excinfo.value, HarnessError):
            return str(excinfo.value)  # already says file, field and what was expected
        return super().repr_failure(excinfo)


def _scenario_test(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """The test function of every scenario item: the item is ``request.node``; fixtures are
    pytest's public way to hand a test the session's temporary directories."""
    item = request.node
    assert isinstance(item, ScenarioItem)
    item.check_scenario(tmp_path_factory)


class ScenarioItem(pytest.Function):
    """One scenario: passes when its result in the session's run passes."""

    def __init__(self, *, scenario_id: str, **kwargs: Any) -> None:
        super().__init__(callobj=_scenario_test, **kwargs)
        self.scenario_id = scenario_id

    def check_scenario(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        """Fail unless the scenario's result in the session's run passes."""
        from harness.testing.outcome import assert_passes

        plugin = self.config.pluginmanager.get_plugin("harness-scenarios")
        assert isinstance(plugin, ScenarioCollection)
        result = plugin.run_for(self, tmp_path_factory)
        gate_on = self.config.getoption("harness_gate_on")
        if gate_on == CORRECTED:  # the suite item gates; here only errors fail
            assert_passes(result, scenario=self.scenario_id, min_pass_rate=0.0)
            return
        assert_passes(result, scenario=self.scenario_id,
                      min_pass_rate=self.config.getoption("harness_min_pass_rate"),
                      gate_on=gate_on)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        from harness.errors import HarnessError

        if isinstance(excinfo.value, AssertionError | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # a test function's: --tb decides the style

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"scenario {self.scenario_id}"


GATE_PROPERTY = "harness_suite_gate"
"""The suite item's user property holding each gate line (also in JUnit XML)."""


def _suite_gate_test(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> None:
    item = request.node
    assert isinstance(item, SuiteGateItem)
    item.check_suite(tmp_path_factory)


class SuiteNode(pytest.Collector):
    """The parent of the suite item (not a file: the gate covers every scenario file), so
    that its node id reads ``harness::suite-gate``."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        return []  # its one item is added after collection


class SuiteGateItem(pytest.Function):
    """The suite's gate on the lower bound of its pass rate corrected by random human
    labels (``--harness-gate-on corrected-lower-bound``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(callobj=_suite_gate_test, **kwargs)

    def check_suite(self, tmp_path_factory: pytest.TempPathFactory) -> None:
        """Fail unless the suite's corrected pass rate's lower bound reaches the threshold
        (and no sample errored, and the run was not stopped early); the gate's line goes to
        the terminal summary either way."""
        from harness.testing.outcome import failure_message, suite_gate

        if not any(isinstance(i, ScenarioItem) for i in self.session.items):
            raise AssertionError("the suite gate has nothing to measure: no scenario item is "
                                 "selected (-k or -m deselected them all)")
        plugin = self.config.pluginmanager.get_plugin("harness-scenarios")
        assert isinstance(plugin, ScenarioCollection)
        result = plugin.run_for(self, tmp_path_factory)
        labels = self.config.getoption("harness_labels")
        options: dict[str, Any] = {
            "min_pass_rate": self.config.getoption("harness_min_pass_rate"),
            "gate_on": CORRECTED, "labels": None if labels is None else Path(labels),
            "labels_option": "--harness-labels FILE"}
        gate = suite_gate(result, **options)
        self.user_properties.extend(
            (GATE_PROPERTY, f"{'passed' if c.passed else 'FAILED'}: {c.detail}")
            for c in gate.checks)
        message = failure_message(result, **options)
        if message is not None:
            raise AssertionError(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str | Any:
        from harness.errors import HarnessError

        if isinstance(excinfo.value, AssertionError | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, "the suite's corrected pass rate"


@pytest.fixture(scope="session")
def _harness_loopback_server() -> Iterator[LoopbackServer]:
    from harness.testing.server import LoopbackServer

    with LoopbackServer() as server:
        yield server


@pytest.fixture
def harness_loopback(_harness_loopback_server: LoopbackServer) -> Iterator[LoopbackServer]:
    """The loopback model server on 127.0.0.1 (one per session), reset for this test: script
    its replies with ``enqueue(Reply...)`` or ``set_responder``; read ``requests``."""
    _harness_loopback_server.reset()
    yield _harness_loopback_server
    _harness_loopback_server.reset()


@pytest.fixture
def harness_hub(harness_loopback: LoopbackServer,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelHub]:
    """A :class:`~harness.models.hub.ModelHub` whose ``openai:``, ``anthropic:`` and
    ``gemini:`` models are the loopback server (test keys, fast retries, no cache). For this
    test the environment points there too (base URLs and test keys), so
    ``harness.testing.evaluate`` with those models calls the server, never a real service."""
    from harness.models.hub import ModelHub
    from harness.testing.hub import loopback_config, loopback_environ

    for name, value in loopback_environ(harness_loopback).items():
        monkeypatch.setenv(name, value)
    hub = ModelHub(loopback_config(harness_loopback), environ=loopback_environ(harness_loopback))
    yield hub
    hub.close()
