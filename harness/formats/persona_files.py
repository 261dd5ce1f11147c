"""The scenario files ``harness import personas`` writes: one YAML scenario per drafted
conversation, named from the conversation's id, headed by a comment that says where it came
from and that a person must review it.

A draft holds the user's side only (:class:`~harness.formats.persona_drafts.PersonaDraft`
and the real opening message). The agent's side cannot be read from a conversation: the
file has an empty ``agent`` (the run's ``--agent`` names the model, as for an imported ADK
eval set) and no tools, expectations or rubrics. Every file is read back and validated as
``harness validate`` reads it before it is written; a draft that would not read back exactly
is not written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError, InputErrors
from harness.formats.persona_drafts import Drafted
from harness.formats.real_conversations import RealConversation
from harness.json_values import load_yaml
from harness.safe_text import BIDI_CONTROLS, visible_bidi
from harness.scenarios.loading import parse_scenario

DRAFT_TAG = "persona-draft"
"""The tag every drafted scenario carries, so ``--tag persona-draft`` selects the drafts."""

_MAX_NAME = 100
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9_.:-]+")
_NOT_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def scenario_id(conversation: RealConversation) -> str:
    """The scenario's id: the conversation's id when it is a valid scenario id, else its runs
    of other characters as ``-`` (``"chat 7/b"`` -> ``"chat-7-b"``), cut to 100 characters;
    ``conversation-<line>`` when nothing is left."""
    slug = _NOT_IN_ID.sub("-", conversation.id).lstrip("_.:-")[:_MAX_NAME].rstrip("_.:-")
    return slug or f"conversation-{conversation.line}"


def file_name(conversation: RealConversation) -> str:
    """The scenario file's name: the scenario id with ``:`` as ``-`` too, and ``.yaml``."""
    return _NOT_IN_FILE_NAME.sub("-", scenario_id(conversation)) + ".yaml"


def check_names(conversations: Sequence[RealConversation], source: Path) -> None:
    """Refuse, before any model call, conversations whose ids would share a scenario id or
    a file name: :class:`InputErrors` naming each pair's lines."""
    problems: list[InputError] = []
    first_id: dict[str, RealConversation] = {}
    first_file: dict[str, RealConversation] = {}
    for c in conversations:
        for seen, key, what in ((first_id, scenario_id(c).lower(), "scenario id"),
                                (first_file, file_name(c).lower(), "file name")):
            other = seen.setdefault(key, c)
            if other is not c:
                problems.append(InputError(source, "id", f"ids that make distinct scenario "
                                f"names ({c.id!r} and {other.id!r}, line {other.line}, both "
                                f"give the {what} {key!r}); rename one", location=c.line))
                break
    if problems:
        raise problems[0] if len(problems) == 1 else InputErrors(problems)


def check_output_folder(out: Path, *, force: bool) -> None:
    """Refuse an output folder that already holds files, unless ``force`` (then drafts of
    the same name are replaced and other files left as they are). A missing folder is
    fine (it is made when the first draft is written)."""
    if not out.is_dir() or force:
        return
    entries = sorted(p.name for p in out.iterdir())
    if entries:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise InputError(out, None, f"a new or empty folder for the drafts (it holds "
                         f"{len(entries)} already: {shown}); give --force to write into it, "
                         "replacing drafts of the same name")


class _DraftDumper(yaml.SafeDumper):
    """YAML as a person writes it, that reads back exactly: text of several lines as a
    literal block, and text with a bidirectional control double-quoted (where the escape
    written for it reads back as the character)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if not BIDI_CONTROLS.isdisjoint(value):
        style: str | None = '"'
    elif "\n" in value and all(line == line.rstrip() for line in value.splitlines()):
        style = "|"
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_DraftDumper.add_representer(str, _text)


def _quoted(value: str) -> str:
    """Outside text in a comment: JSON-quoted, ASCII-escaped, so no line break of any kind
    (YAML counts U+2028 and U+0085 as line breaks too) ends the comment early."""
    return json.dumps(value, ensure_ascii=True)


def scenario_mapping(drafted: Drafted, source: Path) -> dict[str, Any]:
    """The drafted scenario as the mapping its file holds."""
    conversation = drafted.conversation
    return {
        "id": scenario_id(conversation),
        "description": f"Drafted from the real conversation {conversation.id}; review before "
                       "use.",
        "tags": [DRAFT_TAG],
        "user": drafted.draft.user_block(opening_message=drafted.opening_message),
        "agent": {},
        "metadata": {"persona_draft": {
            "source": str(source), "conversation_id": conversation.id,
            "line": conversation.line, "model": drafted.model, "reviewed": False}},
    }


def _header(drafted: Drafted, source: Path) -> str:
    conversation = drafted.conversation
    lines = [
        "# DRAFT, for a person to review before it is used.",
        f"# Drafted by `harness import personas` with {_quoted(drafted.model)} from the",
        f"# conversation {_quoted(conversation.id)}, line {conversation.line} of "
        f"{_quoted(source.name)}.",
        "# Check the persona, goal, facts and plan against the conversation; when done, set",
        "# metadata.persona_draft.reviewed to true and drop the persona-draft tag.",
        "# The agent's side is not in a conversation: no tools, expectations or rubrics,",
        "# and no agent model (give --agent MODEL, or --offline, or set agent.model).",
        "# Until expectations or rubrics are added, a run of it has nothing to score.",
    ]
    if drafted.offline:
        lines.append("# Drafted offline by word rules (mock:drafter), not by a model.")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class DraftFile:
    """A draft ready to write: where, the scenario's id, and the file's text."""

    path: Path
    scenario_id: str
    text: str


def draft_file(drafted: Drafted, source: Path, out: Path) -> DraftFile:
    """The file for one draft, read back and validated as ``harness validate`` will read it.
    Raises :class:`InputError` (or :class:`InputErrors`) saying why when it would not load or
    would not read back as written."""
    data = scenario_mapping(drafted, source)
    path = out / file_name(drafted.conversation)
    body = yaml.dump(data, Dumper=_DraftDumper, sort_keys=False, allow_unicode=True, width=88)
    text = visible_bidi(_header(drafted, source) + "\n" + body)
    _, read_back = load_yaml(text, path)
    if read_back != data:
        raise InputError(path, "user", "a draft that reads back as written (its YAML does "
                         "not; the text holds characters YAML changes)")
    parse_scenario(read_back, source=path, base_dir=out)
    return DraftFile(path, data["id"], text)
