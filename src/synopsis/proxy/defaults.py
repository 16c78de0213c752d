"""The proxy's defaults, importable without the proxy extra (the command's help shows them)."""

from __future__ import annotations

__all__ = ["MAX_BODY_SIZE", "UPSTREAMS"]

UPSTREAMS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
"""The providers' own APIs, where requests go unless ``--upstream-*`` says otherwise."""

MAX_BODY_SIZE = 32 * 1024 * 1024
"""32 MiB, the largest request body the providers document (Anthropic's Messages API): a
larger one is refused with a 413 before it is read whole (``--max-body-size``)."""
