"""Test support that ships with the harness: the loopback model server
(:mod:`harness.testing.server`) and its scripted replies (:mod:`harness.testing.replies`),
hubs pointed at it (:mod:`harness.testing.hub`), :func:`evaluate` to run scenarios from a
test and :func:`assert_passes` to judge the result (:mod:`harness.testing.outcome`). The
pytest plugin (:mod:`harness.pytest_plugin`) uses these.

Exports are imported on first use (names in ``__init__.pyi``), so ``python -m
harness.testing.server`` runs without a double import.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
