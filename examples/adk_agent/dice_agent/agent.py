"""A small ADK agent with two tools: it rolls dice and says which numbers are prime.

Run in place by the harness (``agent: {adk: "dice_agent.agent:root_agent"}``), its tools are
answered by the scenario's mocks; the real functions below run only when the scenario lets
them (``agent.real_tools``). ``REAL_CALLS`` lists the real calls made, so a test can see
that a mocked tool's function never ran.
"""

from __future__ import annotations

import random

from google.adk.agents import LlmAgent

REAL_CALLS: list[str] = []


def roll_die(sides: int) -> dict[str, int]:
    """Roll one die with ``sides`` faces and return the face it shows."""
    REAL_CALLS.append("roll_die")
    return {"result": random.randint(1, sides)}


def check_prime(numbers: list[int]) -> dict[str, list[int]]:
    """Return which of ``numbers`` are prime."""
    REAL_CALLS.append("check_prime")
    primes = [n for n in numbers if n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))]
    return {"primes": primes}


root_agent = LlmAgent(
    name="dice_agent",
    model="gemini-2.5-flash",
    description="Rolls dice and checks numbers for primality.",
    instruction=(
        "You roll dice for {player?}. To roll, call roll_die with the number of sides. To "
        "tell whether numbers are prime, call check_prime with all of them at once. Answer "
        "in one short sentence."
    ),
    tools=[roll_die, check_prime],
)
