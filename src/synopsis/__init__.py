"""synopsis: keep long-running LLM agents inside their model's context window."""
