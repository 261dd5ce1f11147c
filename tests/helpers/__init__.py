"""Code the tests share that is not a test: fakes, hand-made inputs, fixed runs, browser and
subprocess helpers. Fixtures stay in ``tests/conftest.py``.

Import a helper by its full name, ``from tests.helpers.browser import OpenedPage``, and only
so: ``tests/`` is on ``sys.path`` too while pytest runs (its default import mode puts there
the folder of ``conftest.py`` and of each test file), so ``helpers.browser`` would also
import, as a second module object with its own copy of the module's state.
``tests/test_test_layout.py`` fails on any other spelling, on a test file imported by another,
and on a module beside the test files that is neither a test file nor ``conftest.py``.

The full name needs the checkout's root on ``sys.path``: ``pyproject.toml`` puts it there
(pytest's ``pythonpath``) however pytest is started, xdist's workers read the same setting,
and multiprocessing's workers are given their parent's ``sys.path``. A script run by path in
a subprocess (``loopback_only.py``) imports no helper.
"""
