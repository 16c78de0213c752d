"""synopsis against the libraries people use today, on the same inputs, in one run.

Run ``make bench``: it builds ``.venv-bench`` with synopsis and the peers pinned in
``benchmarks/compare/requirements.txt``, runs ``python -m benchmarks.compare`` there and writes
``benchmarks/results/compare.md`` and ``compare.json``.

Every system is driven through the same small interface (:mod:`benchmarks.compare.systems`):
turn OpenAI chat messages into its own message objects (not timed), make the call an agent
makes before each model request (timed), and turn what it returns back into OpenAI chat
messages (not timed), which are then judged by the same validator and the same anchors.
"""
