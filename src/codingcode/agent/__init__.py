"""The agent: the loop on real model APIs, sub-agent profiles and ``dispatch_agent``."""

from codingcode.agent.model import ModelSpec, parse_model, resolve_model
from codingcode.agent.session import AgentSession, Outcome, open_session

__all__ = ["AgentSession", "ModelSpec", "Outcome", "open_session", "parse_model", "resolve_model"]
