"""An example ADK agent for ``agent: {adk: "dice_agent.agent:root_agent"}``."""
