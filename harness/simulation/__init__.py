"""Episodes: the user simulator, the agent under test (model tool loop or Python callable),
and the engine that runs them into a transcript. Offline ``mock:`` behaviours live in
:mod:`harness.simulation.offline` (imported lazily by the mock model registry)."""

from harness.simulation.agent import Agent, AgentTurn, CallableAgent, ModelAgent, agent_for
from harness.simulation.episode import run_episode
from harness.simulation.simulator import SimulatorTurn, UserSimulator

__all__ = [
    "Agent",
    "AgentTurn",
    "CallableAgent",
    "ModelAgent",
    "SimulatorTurn",
    "UserSimulator",
    "agent_for",
    "run_episode",
]
