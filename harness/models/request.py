"""One model call's request: what the caller asks for, in one frozen value.

Every model (a real provider or an offline ``mock:``) takes a :class:`ModelRequest`:
``ChatModel.chat(request)`` for a conversation turn, ``ChatModel.structured(request,
response_model)`` for a validated answer. The request holds only what is sent to the model or
changes its answer (plus the role its usage is counted for), so the response cache's key is
built from its fields and nothing a mock alone needs rides along on a real call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.models.types import GenerationParams, Message, Role, ToolChoice, ToolSpec

DEFAULT_PARAMS = GenerationParams()

PromptCache = Literal["conversation", "system", "off"]
"""What of a request will be sent again, so a provider's prompt cache should keep it:
``conversation`` the whole prompt (the agent's conversation, which grows by a turn, or a
judge prompt asked for several samples), ``system`` only the tools and system prompt (the
default: a one-off judge prompt, whose rubric recurs for every transcript; the simulator,
whose profile recurs every turn), ``off`` nothing. A mark on what is not sent again costs:
Anthropic charges a quarter more for what it stores. Only a provider with an
explicit cache (Anthropic's ``cache_control``) acts on it; it changes neither the answer nor
the response cache's key."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call to a model.

    ``messages`` the conversation sent; ``role`` who the call is for (usage and cost are
    counted per role); ``tools`` the tools the model may call and ``tool_choice`` whether or
    which it must call (chat only); ``params`` the generation parameters (``None``: the
    defaults); ``sample_index`` which repeated sample this is (part of the cache key, so epoch
    3 is not a copy of epoch 1, and the same sample replays); ``max_reasks`` how often a
    structured answer that fails validation is asked for again (structured only; not part of
    the cache key, as it does not change a valid answer); ``prompt_cache`` what of it a
    provider's prompt cache should keep (:data:`PromptCache`; not part of the key either).
    """

    messages: Sequence[Message]
    role: Role
    tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice = "auto"
    params: GenerationParams | None = None
    sample_index: int = 0
    max_reasks: int = 2
    prompt_cache: PromptCache = "system"

    @property
    def generation_params(self) -> GenerationParams:
        """``params``, or the defaults when none were given."""
        return self.params if self.params is not None else DEFAULT_PARAMS
