"""The proxy's defaults, importable without the proxy extra (the command's help shows them)."""

from __future__ import annotations

__all__ = ["UPSTREAMS"]

UPSTREAMS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
"""The providers' own APIs, where requests go unless ``--upstream-*`` says otherwise."""
