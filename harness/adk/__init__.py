"""Google ADK eval sets: reading their files, their test_config.json criteria, conversion to
scenarios and export back (see README "ADK eval sets")."""
