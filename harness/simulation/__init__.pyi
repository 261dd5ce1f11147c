# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .agent import Agent, AgentTurn, CallableAgent, ModelAgent
from .agent_factory import agent_for
from .episode import run_episode
from .http_agent import HttpAgent, HttpEndpoints
from .simulator import SimulatorTurn, UserSimulator
