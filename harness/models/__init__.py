"""The model layer: one async interface over Anthropic, OpenAI(-compatible), Gemini and offline
``mock:`` models, with retries, bounded concurrency, a response cache and usage accounting.

Start with :class:`~harness.models.hub.ModelHub`; the neutral types are in
:mod:`harness.models.types`. Names here are imported on first use (see ``__init__.pyi``) so that
importing the neutral types stays cheap.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
