"""Test support that ships with the harness: the loopback model server
(:mod:`harness.testing.server`) and its scripted replies (:mod:`harness.testing.replies`).

Kept import-free so ``python -m harness.testing.server`` runs without a double import.
"""
