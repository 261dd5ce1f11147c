"""Google ADK eval sets: reading their files, their test_config.json criteria, conversion to
scenarios and export back (see docs/adk-vertex.md, "ADK eval sets")."""

EVALSET_SUFFIX = ".evalset.json"
TEST_SUFFIX = ".test.json"
ADK_SUFFIXES = (EVALSET_SUFFIX, TEST_SUFFIX)
