"""The simulated users' side of a run: every sample's live conversation whose user was played
by a simulator model, read from the run's store, for comparison with real users.

A sample counts when its transcript names a simulator model (a fully scripted user has
none: its turns are the scenario's own, not a simulator's) and it did not error (an episode
cut short by an agent, simulator or time-limit error ends where the error fell, not where
the user stopped). The live conversation is ``transcript.messages``: the scenario's
``history`` is given, not simulated, and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import InputError
from harness.runs.store import RunStore
from harness.stats.user_turn_features import Utterance, utterances
from harness.wording import plural


@dataclass
class SimulatedUsers:
    """The run's simulated conversations (``"scenario_id#epoch"`` and its text turns), and
    how many samples were read, and left out as scripted or errored; ``simulator_models``
    names the models that played the users."""

    conversations: list[tuple[str, list[Utterance]]] = field(default_factory=list)
    simulator_models: list[str] = field(default_factory=list)
    n_samples: int = 0
    n_scripted: int = 0
    n_errored: int = 0


def simulated_users(run_dir: Path) -> SimulatedUsers:
    """The simulated conversations of the run in ``run_dir``, read-only. Raises
    :class:`~harness.runs.store.StoreError` when it is not a run, and
    :class:`~harness.errors.InputError` naming it when no sample has a simulated user turn."""
    found = SimulatedUsers()
    with RunStore.open(run_dir, read_only=True) as store:
        for sample in store.iter_samples():
            found.n_samples += 1
            transcript = sample.transcript
            if "simulator" not in transcript.models:
                found.n_scripted += 1
            elif transcript.errored:
                found.n_errored += 1
            else:
                turns = utterances(transcript.messages)
                if any(u.speaker == "user" and u.text.strip() for u in turns):
                    found.conversations.append((f"{sample.scenario_id}#{sample.epoch}", turns))
                    model = transcript.models["simulator"]
                    if model not in found.simulator_models:
                        found.simulator_models.append(model)
    if not found.conversations:
        raise InputError(run_dir, None, "a run with simulated user turns, but no simulator "
                         f"model wrote one (of its {plural(found.n_samples, 'sample')}, "
                         f"{found.n_scripted} have scripted users and {found.n_errored} "
                         "errored)")
    return found
