"""aurora_mcp: the aurora MCP client host, embedded in Python.

A Host connects every App of a configuration directory (MCP servers over
stdio or HTTPS), freezes their tools, and calls them with one of three
outcomes: succeeded, failed (nothing happened: retrying is safe) or
unknown (it may have run).  See docs/python.md.
"""
from .aio import AsyncHost
from .host import (FAILED, SUCCEEDED, UNKNOWN, AuroraError, CallResult,
                   ConfigError, Host, JournalFollower, StartupError, Tool,
                   ToolFailed, follow_journal, journal, library, version)

__all__ = ["Host", "AsyncHost", "Tool", "CallResult", "AuroraError",
           "StartupError", "ConfigError", "ToolFailed", "journal",
           "follow_journal", "JournalFollower", "library", "version", "SUCCEEDED", "FAILED", "UNKNOWN"]
