"""Episodes: the user simulator, the agent under test (model tool loop, Python callable or
HTTP endpoint), and the engine that runs them into a transcript. Offline ``mock:`` behaviours
live in :mod:`harness.simulation.offline` (imported lazily by the mock model registry)."""

import lazy_loader

# Exports are imported on first use (names in __init__.pyi), so that importing one light
# module of this package (e.g. for a command's --help) does not import them all.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
