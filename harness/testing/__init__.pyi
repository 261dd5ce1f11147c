# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .evaluation import evaluate, run_config
from .hub import TEST_KEYS, loopback_config, loopback_environ
from .outcome import assert_passes, failure_message
from .replies import Reply
from .server import LoopbackServer
