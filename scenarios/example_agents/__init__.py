"""Example Python agents that scenarios name as ``example_agents.<module>:<function>``
(resolved from the scenario file's directory)."""
