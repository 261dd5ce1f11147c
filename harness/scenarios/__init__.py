"""Scenario files: the format (pydantic models), loading with errors that name file, line and
field, cross-field validation, and the JSON Schema export for editors."""

import lazy_loader

# Exports are imported on first use (names in __init__.pyi), so that importing one light
# module of this package (e.g. for a command's --help) does not import them all.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
