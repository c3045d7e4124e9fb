"""codingcode: a coding-agent runtime built around its tool system."""

__version__ = "0.1.0"
