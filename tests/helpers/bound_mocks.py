"""A base for the tests' own ``mock:`` behaviours that need to know what a call is about.

The harness binds a ``mock:`` model to its context (:func:`harness.models.mock.bind_offline`):
the scenario an episode plays, the pair a pairwise judge compares. A behaviour built on
:class:`ContextBound` keeps that context, so it can answer per scenario (``scenario_id``) or
per pair (``pair``), as a real model could only from its messages."""

from __future__ import annotations

import copy

from harness.judging.offline import PairwiseCase
from harness.models.base import MockBehaviour
from harness.scenarios.schema import Scenario


class ContextBound(MockBehaviour):
    """Keeps the context it is bound to; ``self`` stays unbound (a shallow copy is bound)."""

    context: object = None

    def bind(self, context: object) -> MockBehaviour:
        bound = copy.copy(self)
        bound.context = context
        return bound

    @property
    def scenario_id(self) -> str:
        """The id of the scenario this behaviour was bound to."""
        assert isinstance(self.context, Scenario), f"not bound to a scenario: {self.context!r}"
        return self.context.id

    @property
    def pair(self) -> PairwiseCase:
        """The pair (as shown) this pairwise judge was bound to."""
        assert isinstance(self.context, PairwiseCase), f"not bound to a pair: {self.context!r}"
        return self.context
