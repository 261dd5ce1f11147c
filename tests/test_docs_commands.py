"""Every `harness` command the README and the manual show, checked against the commands.

Each command line in a shell block of README.md and docs/*.md names only options its
command has. Those that can run as shown run, in a folder holding the example files the docs
refer to (`scenarios/`, `examples/`, `tests/data/adk/`, `tests/data/real-conversations/`,
the README's `evals/paris.yaml`, and stored runs under the names the docs give them), and
must exit 0 (0 or 1 when the command is a gate). A command naming a provider's model runs
with the role's offline model in its place. Synopses (`[--option]`, `...`) and commands that
need a server (a base URL, `serve-tools`) are only checked for their options."""

from __future__ import annotations

import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from harness.cli import app
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:bash|sh|shell|console)\n(.*?)```", re.S)
PROVIDER_MODEL = re.compile(r"^(anthropic|openai|google|gemini|vertex|azure)[a-z_]*:")
ROLE_MOCKS = {"--agent": "mock:agent", "--simulator": "mock:simulator", "--judge": "mock:judge"}
GATE_OPTIONS = {"--fail-on-regression", "--min-pass-rate", "--min-score"}
SYNOPSIS = ("...", "…", "[", "<")
NEEDS_A_SERVER = ("--agent-base-url", "serve-tools")


@dataclass(frozen=True)
class DocCommand:
    doc: str
    line: str

    @property
    def words(self) -> list[str]:
        return shlex.split(self.line)

    @property
    def runnable(self) -> bool:
        return not any(mark in self.line for mark in SYNOPSIS + NEEDS_A_SERVER)


def _commands(doc: Path) -> list[DocCommand]:
    found = []
    for block in SHELL_BLOCK.findall(doc.read_text(encoding="utf-8")):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s+#\s", line.strip(), maxsplit=1)[0].strip()
            line = line.split("&&")[-1].strip()
            if line.startswith("harness "):
                found.append(DocCommand(doc.name, " ".join(line.split())))
    return found


ALL = [command for doc in DOCS for command in _commands(doc)]


def _command_of(words: list[str]) -> tuple[Any, list[str]]:
    """The command the words name (walking groups; typer's own click classes), and the words
    after its name."""
    command = typer.main.get_command(app)
    rest = words[1:]
    while rest and rest[0] in getattr(command, "commands", {}):
        command, rest = command.commands[rest[0]], rest[1:]  # type: ignore[attr-defined]
    return command, rest


def test_the_docs_show_commands_and_most_of_them_run() -> None:
    assert len(ALL) >= 25
    assert sum(c.runnable for c in ALL) >= 15
    assert {c.doc for c in ALL} >= {"README.md", "running.md", "adk-vertex.md", "calibration.md"}


@pytest.mark.parametrize("command", ALL, ids=lambda c: f"{c.doc}:{c.line[:60]}")
def test_a_documented_command_names_only_options_it_has(command: DocCommand) -> None:
    words = [w.strip("[]") for w in command.words]
    found, rest = _command_of(words)
    assert not hasattr(found, "commands"), f"{command.line}: no such command"
    options = {opt for param in found.params for opt in (*param.opts, *param.secondary_opts)}
    options.add("--help")
    named = {part.split("=")[0] for w in rest if w.startswith("-") and w not in ("-", "--")
             for part in w.split("|")}  # a synopsis' [--swap|--no-swap] names both
    assert named <= options, f"{command.doc}: {command.line}: {sorted(named - options)}"


def _examples(here: Path, doc: str) -> None:
    """What the docs' commands read, in ``here``: the example files, the README's
    one-scenario evals/, and the stored runs the doc names (made where the doc's commands
    run: a run stores its scenario paths, and shards merge only with the same ones)."""
    for part in ("scenarios", "examples", "tests/data/adk", "tests/data/real-conversations"):
        shutil.copytree(ROOT / part, here / part)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tour = readme.split("Save this as `evals/paris.yaml`", 1)[1]
    (here / "evals").mkdir()
    (here / "evals" / "paris.yaml").write_text(tour.split("```yaml\n", 1)[1].split("```")[0])
    text = " ".join(c.line for c in ALL if c.doc == doc)
    made = [("main", "mock:agent", []), ("branch", "mock:agent-flaky", [])]
    # shard 2 of 4 is the one docs/running.md runs itself
    made += [(f"shard-{i}", "mock:agent", ["--shard", f"{i}/4"]) for i in (1, 3, 4)]
    for name, agent, extra in made:
        if f"runs/{name}" not in text:
            continue
        suite = "evals/" if name.startswith("shard") else "scenarios/"
        done = run_cli("run", suite, "--offline", "--agent", agent, "--epochs", "5",
                       "--cache-mode", "off", *extra, "--out", f"runs/{name}", cwd=here)
        assert done.returncode == 0, done.stdout + done.stderr


def _offline(words: list[str]) -> list[str]:
    """The words with each provider's model replaced by the role's offline model."""
    out = []
    for before, word in zip(["", *words], words, strict=False):
        # --rate-limit's value names a provider, not a model
        model = PROVIDER_MODEL.match(word) and before != "--rate-limit"
        out.append(ROLE_MOCKS.get(before, "mock:agent") if model else word)
    return out


@pytest.mark.parametrize("doc", sorted({c.doc for c in ALL if c.runnable}))
def test_the_documented_commands_run_on_the_examples(doc: str, tmp_path: Path) -> None:
    here = tmp_path
    _examples(here, doc)
    for command in (c for c in ALL if c.doc == doc and c.runnable):
        words = _offline(command.words)
        done = run_cli(*words[1:], cwd=here)
        allowed = {0, 1} if GATE_OPTIONS & set(words) else {0}
        assert done.returncode in allowed, (
            f"{doc}: `{command.line}` exited {done.returncode}\n{done.stdout}\n{done.stderr}")
        assert "Traceback" not in done.stdout + done.stderr
