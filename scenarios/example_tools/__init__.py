"""Example Python tool handlers ``f(state, args) -> result`` for logic YAML cannot express."""
