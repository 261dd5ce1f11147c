"""Judge calibration: how well a judge agrees with people, with bootstrap intervals.

Read labelled items (:func:`load_dataset`) or existing judgments (:func:`load_judgments`,
contract 3), then :func:`analyse` them into a :class:`CalibrationReport`.
"""

import lazy_loader

# Exports are imported on first use (names in __init__.pyi), so that importing one light
# module of this package (e.g. for a command's --help) does not import them all.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
