"""``harness import adk``: an ADK eval set written as one scenario YAML file, with a header
comment naming what was not carried (kept under ``metadata.adk``) and the agent to give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.files import write_text_atomic
from harness.formats.adk.convert import not_carried, source_name
from harness.formats.adk.criteria import EvalConfig, config_for
from harness.formats.adk.loading import adk_scenario_mappings
from harness.safe_text import BIDI_CONTROLS, visible_bidi


class _NoAliases(yaml.SafeDumper):
    """Writes a value shared by two fields twice rather than as an anchor and alias, and a
    string holding a bidirectional control double-quoted (see :func:`scenario_yaml`)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_str(self, data: str) -> yaml.ScalarNode:
        if BIDI_CONTROLS.isdisjoint(data):
            return super().represent_str(data)
        return self.represent_scalar("tag:yaml.org,2002:str", data, style='"')


_NoAliases.add_representer(str, _NoAliases.represent_str)


def scenario_yaml(mappings: list[dict[str, Any]], source: Path, config: EvalConfig) -> str:
    """The text of the scenario file for one eval set's converted scenarios."""
    criteria = f"the criteria of {config.source}" if config.source else \
        "ADK's default criteria (no test_config.json beside it)"
    lines = [
        f"# Imported from the ADK eval set {source.name} with {criteria}.",
        "# The agent under test: ADK eval sets name no model; give one with --agent MODEL",
        "# (or --offline), or set agent.model and agent.system_prompt below.",
        "# Not carried (no home in this format; kept under metadata.adk, written back by",
        "# `harness export adk`, not used by a run):",
    ]
    for data in mappings:
        names = not_carried(data)
        lines.append(f"#   {data['id']}: {', '.join(names) if names else 'nothing'}")
    body = yaml.dump(mappings, Dumper=_NoAliases, sort_keys=False, allow_unicode=True,
                     width=100)
    # PyYAML writes a bidirectional control raw even in double quotes; as an escape it shows
    # in an editor and reads back as the character (in a comment, it is only shown).
    return visible_bidi("\n".join(lines) + "\n\n" + body)


def import_eval_set(path: Path, out_dir: Path,
                    config_path: Path | None = None) -> Path | None:
    """Convert one ADK eval set file into ``out_dir/<name>.yaml`` (``<name>``: the file name
    without ``.evalset.json``/``.test.json``). ``config_path`` is the ``test_config.json`` to
    use instead of the one beside the file. Returns the path written, or ``None`` for an eval
    set with no eval cases (ADK accepts one; a scenario file holds at least one scenario, so
    nothing is written). Raises :class:`~harness.errors.InputError`."""
    from harness.formats.adk.criteria import read_config

    config = read_config(config_path) if config_path is not None else config_for(path)
    mappings = adk_scenario_mappings(path, config)
    if not mappings:
        return None
    target = out_dir / f"{source_name(path)}.yaml"
    write_text_atomic(target, scenario_yaml(mappings, path, config))
    return target
