"""The console command starts light: printing help, or the version, imports none of the
libraries the commands' work needs (scipy, numpy, the model SDKs, instructor...).
Those are imported where they are used, so `harness --help` answers at once. (How long it takes
is measured by benchmarks/startup.py, not here.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

# (Not pydantic: typer itself builds a command's parameters with it.)
HEAVY = {"scipy", "numpy", "openai", "anthropic", "instructor", "httpx", "httpx2", "aiohttp",
         "jinja2", "yaml", "jsonschema", "orjson", "tenacity", "rouge_score", "sklearn",
         "asyncio", "mcp", "mcp_types", "uvicorn", "starlette"}

PROBE = """
import sys
from harness.cli import main
sys.argv = ["harness", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print("MODULES", " ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


@pytest.mark.parametrize("args", [["--help"], ["version"], ["run", "--help"],
                                  ["calibrate", "--help"], ["stats", "--help"],
                                  ["serve-tools", "--help"], ["merge", "--help"]],
                         ids=" ".join)
def test_help_and_version_import_no_heavy_library(args: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("MODULES "))
    loaded = set(line.split()[1:])
    assert "typer" in loaded  # the probe saw the CLI's imports
    assert loaded & HEAVY == set()
