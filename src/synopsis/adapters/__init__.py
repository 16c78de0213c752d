"""Adapters: synopsis inside the agent frameworks, in the way each already works.

One module per framework, each behind its extra and imported only when used:

- :mod:`synopsis.adapters.pydantic_ai`: a pydantic-ai capability (``pip install
  "synopsis[pydantic-ai]"``).
- :mod:`synopsis.adapters.langchain`: LangChain v1 agent middleware, persistent and per
  request (``"synopsis[langchain]"``).
- :mod:`synopsis.adapters.adk`: a Google ADK callback and plugin, and a summarizer for ADK's
  own events compaction (``"synopsis[adk]"``).
- :mod:`synopsis.adapters.agents`: an OpenAI Agents SDK input filter and a compacting session
  (``"synopsis[agents]"``).

Each takes the options of :class:`~synopsis.Compactor` (or a ``Compactor``), gives kept
messages back as the framework's own objects, and keeps per conversation what it already
converted, so that a model call under the trigger costs about what ``Compactor.compact`` costs
on a growing list.
"""

from __future__ import annotations

__all__: list[str] = []
