"""The echo model: a deterministic stand-in for an LLM summarizer's model, in process and behind
the fake server of :mod:`synopsis.testing.server`."""
