"""Mutation score of the test suite, package by package, with mutmut.

A mutant is a small change to the code (``<`` for ``<=``, a constant moved by one, a branch
dropped); a test suite that is there for a package should fail on most of them. For each of
``harness/stats``, ``harness/checks``, ``harness/calibration`` and ``harness/runs`` this script:

1. copies the working tree (uncommitted edits included, ``.git`` and caches left out) into a
   scratch directory, so the tree you work in is never mutated;
2. writes a ``[tool.mutmut]`` section into the copy's ``pyproject.toml`` that mutates only
   that package and runs only the test files that belong to it (``PACKAGES`` below; running
   the whole suite for every mutant would take hours on two cores), in one process per
   mutant (``-n 0``);
3. runs ``mutmut run`` there under a wall-clock limit, then reads ``mutmut results --all
   true`` and prints, per package: mutants, killed, timeouts, survivors, mutants no selected
   test reached ("no tests"), anything else, and the score.

The score follows the usual definition (Stryker's): detected / (mutants checked), where a
mutant is detected when a test failed (killed) or it made the tests hang (timeout); survivors
and mutants no test reached are undetected. A package cut off by ``--timeout`` is scored over
the mutants checked so far, and says so.

mutmut is a tool for this script only, not a dependency of the package or of its test extra.
Pinned version (its configuration keys and its ``results`` output changed across releases):

    python -m pip install mutmut==3.8.1

Usage:

    python benchmarks/mutation_score.py [PACKAGE ...] [--timeout SECONDS] [--max-children N]
        [--survivors FILE] [--keep] [--resume SCRATCH]

PACKAGE is ``stats``, ``checks``, ``calibration`` or ``runs`` (default: all four, one after
the other). ``--timeout`` bounds each package (default 3600 s); ``--max-children`` is the
number of mutants tested at once (default 2); ``--survivors FILE`` writes the diff of every
surviving mutant to FILE (``mutmut show``, about 2 s a mutant); ``--keep`` leaves the
scratch copies in place and prints where they are (``mutmut results``, ``show`` and
``browse`` work there). ``--resume SCRATCH`` goes on in a kept scratch directory instead of a
new one: the working tree is copied over it again, every mutant that survived or that no test
reached is set back to "not checked" (the tests may have changed since), and mutmut tests
those and the ones never reached, keeping the verdicts of killed mutants of unchanged
functions (mutmut re-tests every mutant of a function whose code changed). A package of two
cores' worth of hours is run to the end in several sittings this way, as long as its list of
test files stays the same: a test file added (or removed) changes mutmut's test selection, and
mutmut then re-tests every mutant from the start. Figures seen on a
2-core machine, and the surviving mutants judged equivalent, are in benchmarks/README.md
("mutation_score.py").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT_VERSION = "3.8.1"

# The test files that are there for each package: its own, plus the few elsewhere that
# exercise it directly (the pass/fail and adaptive statistics through the runner, the checks
# through score-transcripts and failure evidence, the run settings, event loop, store and
# scoring of harness/runs through files named for what they test). Left out, as they
# cannot run under mutmut: test_run_workers.py and test_run_ray.py (their worker processes
# start in mutmut's tree and fail to find mutmut's configuration), test_process_state.py (it
# checks signal handlers that mutmut's own runner sets).
PACKAGES: dict[str, list[str]] = {
    "stats": ["tests/test_stats_*.py", "tests/test_runs_adaptive.py"],
    "checks": ["tests/test_checks_*.py", "tests/test_score_transcripts_cli.py",
               "tests/test_runs_failure_evidence.py"],
    "calibration": ["tests/test_calibration_*.py", "tests/test_calibrate_from_run.py",
                    "tests/test_run_agreement.py"],
    "runs": ["tests/test_runs_*.py", "tests/test_pairwise_runs.py",
             "tests/test_pairwise_runs_unit.py",
             "tests/test_run_settings.py", "tests/test_event_loop.py",
             "tests/test_store_integrity.py",
             "tests/test_select_stored.py", "tests/test_scoring_options.py",
             "tests/test_compare_verdict.py", "tests/test_cli_labels.py",
             "tests/test_cost_estimate.py", "tests/test_simulator_panel_*.py",
             "tests/test_failure_attribution*.py"],
}

# Modules not mutated: their code runs in worker processes that Ray or the runner start
# outside mutmut's tree (see above), so no selected test could ever reach a mutant of them;
# tests/test_run_ray.py and tests/test_run_workers.py test them in the full suite.
DO_NOT_MUTATE: dict[str, list[str]] = {
    "runs": ["harness/runs/ray_executor.py", "harness/runs/workers.py"],
}

# What the tests read besides the package and tests/ (example scenarios, rubrics, data, and
# the docs whose examples and field lists tests check: docs/reports.md, docs/checks.md).
ALSO_COPY = ["rubrics", "scenarios", "examples", "schemas", "docs", "README.md", "setup.py"]

_IGNORED_ANYWHERE = shutil.ignore_patterns(
    ".git", "mutants", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache",
    ".mypy_cache", ".venv", ".harness", "build", "dist",
)
# Run outputs at the top of the tree only: harness/runs is a package to mutate.
_IGNORED_AT_TOP = {"runs"}


def _ignored(folder: str, names: list[str]) -> set[str]:
    ignored = set(_IGNORED_ANYWHERE(folder, names))
    if Path(folder).resolve() == ROOT:
        ignored |= _IGNORED_AT_TOP & set(names)
    return ignored
_RESULT_LINE = re.compile(r"^\s+(\S+): (.+)$")
# mutmut names a mutant <module>.x_<function>__mutmut_<n> or <module>.xǁ<class>ǁ<method>...
_MODULE_OF_MUTANT = re.compile(r"^(.*?)\.x[_ǁ]")


@dataclass
class PackageScore:
    package: str
    statuses: dict[str, str] = field(default_factory=dict)  # mutant name -> status
    seconds: float = 0.0
    cut_off: bool = False

    @property
    def counts(self) -> Counter[str]:
        return Counter(self.statuses.values())

    @property
    def checked(self) -> int:
        return sum(n for status, n in self.counts.items() if status != "not checked")

    @property
    def detected(self) -> int:
        return self.counts["killed"] + self.counts["timeout"]

    @property
    def score(self) -> float | None:
        return self.detected / self.checked if self.checked else None

    def survivors(self) -> list[str]:
        return sorted(m for m, s in self.statuses.items() if s in ("survived", "no tests"))


def _tests_for(package: str, root: Path) -> list[str]:
    found = sorted({str(p.relative_to(root)) for pattern in PACKAGES[package]
                    for p in root.glob(pattern)})
    if not found:
        raise SystemExit(f"no test files match {PACKAGES[package]} under {root}")
    return found


SELECTION_PLUGIN = "mutation_test_selection.py"


def _selection_plugin(package: str) -> str:
    """A pytest plugin that collects only ``package``'s test files (``PACKAGES``)."""
    return (
        '"""Written by benchmarks/mutation_score.py: only the test files of harness/'
        f'{package} are collected."""\n\n'
        "import fnmatch\n\n"
        f"PATTERNS = {PACKAGES[package]!r}\n\n\n"
        "def pytest_ignore_collect(collection_path, config):\n"
        "    name = collection_path.name\n"
        '    if collection_path.suffix == ".py" and name.startswith("test_"):\n'
        '        kept = any(fnmatch.fnmatch("tests/" + name, p) for p in PATTERNS)\n'
        "        return None if kept else True\n"
        "    return None\n"
    )


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


def prepare_copy(package: str, scratch: Path) -> Path:
    """Copy the working tree to ``scratch/<package>`` and configure mutmut there.

    A copy already there (``--resume``) is refreshed: the package and the tests are replaced
    whole (a file deleted from the tree goes from the copy too), the rest copied over, and
    mutmut's own ``mutants/`` folder kept.
    """
    copy = scratch / package
    if copy.exists():
        for folder in ("harness", "tests"):
            shutil.rmtree(copy / folder, ignore_errors=True)
    # Copied without the files' times: mutmut re-mutates a file only when it is newer than
    # its mutated copy, so a resumed copy must look newer (it keeps the verdicts of every
    # function whose code did not change).
    shutil.copytree(ROOT, copy, ignore=_ignored, dirs_exist_ok=True,
                    copy_function=shutil.copy)
    mutated = copy / "mutants" / "harness"
    if mutated.is_dir():
        # mutmut refreshes the .py files of its mutated tree, not the package's other files
        # (type stubs that lazy imports read, templates, scripts): bring those up to date
        for source in (copy / "harness").rglob("*"):
            if source.is_file() and source.suffix not in (".py", ".pyc"):
                target = mutated / source.relative_to(copy / "harness")
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, target)
    _tests_for(package, copy)  # at least one test file, or a clear error
    (copy / SELECTION_PLUGIN).write_text(_selection_plugin(package), encoding="utf-8")
    with (copy / "pyproject.toml").open("a", encoding="utf-8") as f:
        f.write(
            "\n[tool.mutmut]\n"
            '# written by benchmarks/mutation_score.py in a scratch copy\n'
            'source_paths = ["harness"]\n'
            f'only_mutate = ["harness/{package}/*"]\n'
            f"do_not_mutate = {_toml_list(DO_NOT_MUTATE.get(package, []))}\n"
            # Every test file is offered and the plugin keeps the package's own, so that a
            # test file added later changes no option: mutmut resets every verdict when its
            # test options change, and keeps them (testing the new file's tests) otherwise.
            'pytest_add_cli_args_test_selection = ["tests"]\n'
            # one process per mutant; the project's addopts ask for xdist workers
            'pytest_add_cli_args = ["-n", "0", "-p", "no:cacheprovider", "-p", '
            f'"{SELECTION_PLUGIN.removesuffix(".py")}"]\n'
            f"also_copy = {_toml_list([*ALSO_COPY, SELECTION_PLUGIN])}\n"
            "use_git_change_detection = false\n"
        )
    return copy


def reopen_undecided(copy: Path, package: str) -> int:
    """Set survivors and unreached mutants of a kept copy back to "not checked".

    mutmut keeps a verdict per mutant in ``mutants/<file>.meta`` (JSON, ``exit_code_by_key``;
    0 is a survivor, 33 "no tests", ``None`` not checked). Returns how many were reopened.
    Files no longer mutated (``DO_NOT_MUTATE``) lose their verdicts altogether.
    """
    reopened = 0
    skipped = {Path(p).name for p in DO_NOT_MUTATE.get(package, [])}
    for meta in sorted((copy / "mutants" / "harness" / package).glob("*.py.meta")):
        if meta.name.removesuffix(".meta") in skipped:
            meta.unlink()
            continue
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes = data.get("exit_code_by_key", {})
        for key, code in codes.items():
            if code in (0, 33):
                codes[key] = None
                reopened += 1
        meta.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return reopened


def _mutmut(*args: str) -> list[str]:
    # `python -m mutmut` re-imports mutmut.__main__ under another name; call its CLI instead.
    return [sys.executable, "-c", "import sys; from mutmut.__main__ import cli; "
            "sys.argv[0] = 'mutmut'; cli()", *args]


def run_package(package: str, scratch: Path, *, timeout: float, max_children: int,
                log: Path) -> PackageScore:
    """Run mutmut over one package in its scratch copy and read back every mutant's status."""
    resumed = (scratch / package / "mutants").is_dir()
    copy = prepare_copy(package, scratch)
    if resumed:
        print(f"harness/{package}: resumed; {reopen_undecided(copy, package)} survivors and "
              "unreached mutants set back to not checked", flush=True)
    result = PackageScore(package)
    started = time.monotonic()
    with log.open("a", encoding="utf-8") as out:
        # A session of its own, so a timeout ends mutmut and every test process it forked.
        proc = subprocess.Popen(_mutmut("run", "--max-children", str(max_children)),
                                cwd=copy, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            result.cut_off = True
        finally:
            # Cut off, interrupted or stopped: end mutmut's whole group, not only its parent.
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    result.seconds = time.monotonic() - started
    if proc.returncode != 0 and not result.cut_off:
        raise SystemExit(f"mutmut failed on harness/{package} (exit {proc.returncode}); "
                         f"its output: {log}")
    listing = subprocess.run(_mutmut("results", "--all", "true"), cwd=copy,
                             capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        match = _RESULT_LINE.match(line)
        if match:
            result.statuses[match.group(1)] = match.group(2)
    return result


def write_survivor_diffs(score: PackageScore, copy: Path, out: Path) -> None:
    with out.open("a", encoding="utf-8") as f:
        for name in score.survivors():
            shown = subprocess.run(_mutmut("show", name), cwd=copy, capture_output=True,
                                   text=True)
            f.write(shown.stdout + "\n")


def _module_of(mutant: str) -> str:
    match = _MODULE_OF_MUTANT.match(mutant)
    return match.group(1) if match else mutant


def report(score: PackageScore) -> str:
    c = score.counts
    other = score.checked - c["killed"] - c["timeout"] - c["survived"] - c["no tests"]
    pct = "n/a" if score.score is None else f"{100 * score.score:.1f}%"
    lines = [
        f"harness/{score.package}: {pct} detected ({score.detected}/{score.checked} checked; "
        f"{len(score.statuses)} mutants, {score.seconds / 60:.1f} min"
        + (", CUT OFF by --timeout: " + f"{c['not checked']} not checked" if score.cut_off
           else "") + ")",
        f"  killed {c['killed']}, timeout {c['timeout']}, survived {c['survived']}, "
        f"no tests {c['no tests']}, other {other}",
    ]
    by_module = Counter(_module_of(m) for m in score.survivors())
    for module, n in sorted(by_module.items()):
        lines.append(f"  undetected in {module}: {n}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", metavar="PACKAGE",
                        help=f"any of {', '.join(PACKAGES)} (default: all)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="wall-clock seconds per package (default 3600)")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--survivors", type=Path, help="write surviving mutants' diffs here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument("--resume", type=Path, metavar="SCRATCH",
                        help="go on in a scratch directory kept by an earlier --keep")
    args = parser.parse_args()
    # A plain `kill` of this script then ends the mutmut run too (see run_package).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    unknown = [p for p in args.packages if p not in PACKAGES]
    if unknown:
        parser.error(f"unknown package(s) {unknown}; choose from {list(PACKAGES)}")
    packages = args.packages or list(PACKAGES)
    try:
        installed = version("mutmut")
    except PackageNotFoundError:
        print(f"mutmut is not installed: python -m pip install mutmut=={MUTMUT_VERSION}",
              file=sys.stderr)
        return 2
    if installed != MUTMUT_VERSION:
        print(f"note: mutmut {installed} installed; this script was written for "
              f"{MUTMUT_VERSION}", file=sys.stderr)
    if args.survivors:
        args.survivors.write_text("")
    if args.resume and not args.resume.is_dir():
        parser.error(f"--resume: {args.resume} is not a directory")
    scratch = args.resume or Path(tempfile.mkdtemp(prefix="harness-mutants-"))
    try:
        for package in packages:
            log = scratch / f"{package}.log"
            print(f"harness/{package}: mutating in {scratch / package} (log {log}) ...",
                  flush=True)
            score = run_package(package, scratch, timeout=args.timeout,
                                max_children=args.max_children, log=log)
            print(report(score), flush=True)
            if args.survivors:
                write_survivor_diffs(score, scratch / package, args.survivors)
    finally:
        if args.keep or args.resume:
            print(f"scratch copies kept in {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
