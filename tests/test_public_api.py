from __future__ import annotations

import pytest

import synopsis

PINNED = [
    "BudgetUnreachableError",
    "ChainInvalidated",
    "CompactionCompleted",
    "CompactionFailed",
    "CompactionResult",
    "CompactionSkipped",
    "CompactionStarted",
    "Compactor",
    "ConfigurationError",
    "ConversationError",
    "Event",
    "Fix",
    "HeuristicCounter",
    "HistoryRepaired",
    "Keep",
    "LLMSummarizer",
    "MediaPart",
    "MemoryStore",
    "Message",
    "OpaquePart",
    "Part",
    "PostgresStore",
    "Problem",
    "Profile",
    "ReasoningPart",
    "RefillBreakerOpened",
    "Role",
    "RuleBasedSummarizer",
    "SQLiteStore",
    "Settings",
    "StoreError",
    "SummarizerError",
    "SummarizerFellBack",
    "SummaryFilledIn",
    "SummaryRecord",
    "SynopsisError",
    "TextPart",
    "TiktokenCounter",
    "TokenCounter",
    "ToolCallPart",
    "ToolResultPart",
    "TransportError",
    "Trigger",
    "UnknownFormatError",
    "UnknownModelWarning",
    "VocabularyError",
    "__version__",
    "acompact",
    "compact",
    "context_window",
    "count_tokens",
    "counter_for_model",
    "decode",
    "detect",
    "encode",
    "max_output_tokens",
    "repair",
    "validate",
]


def test_all_is_pinned_and_sorted() -> None:
    assert synopsis.__all__ == PINNED
    assert synopsis.__all__ == sorted(synopsis.__all__)
    for name in synopsis.__all__:
        assert hasattr(synopsis, name), name


def test_errors_subclass_builtins() -> None:
    assert issubclass(synopsis.ConversationError, ValueError)
    assert issubclass(synopsis.ConfigurationError, ValueError)
    assert issubclass(synopsis.VocabularyError, RuntimeError)
    assert issubclass(synopsis.TransportError, ConnectionError)
    assert issubclass(synopsis.SummarizerError, RuntimeError)
    assert synopsis.TransportError("down", retryable=False).retryable is False
    assert synopsis.TransportError("slow").retryable is True
    err = synopsis.ConversationError("bad", index=3, rule="message.role")
    assert (err.index, err.rule, str(err)) == (3, "message.role", "message 3: bad [message.role]")


SUMMARIZERS = [
    "DEFAULT_EXTRACTORS",
    "ActionItem",
    "AsyncSummarizer",
    "Completion",
    "CompletionRequest",
    "CompletionResponse",
    "Coverage",
    "Covers",
    "Entities",
    "Extractor",
    "Facets",
    "LLMSummarizer",
    "RuleBasedSummarizer",
    "Sections",
    "Summarizer",
    "SummarizerError",
    "SummaryRecord",
    "ToolExchange",
    "ToolFacts",
    "TransportError",
    "Usage",
    "anthropic_completion",
    "find_extractor",
    "openai_chat_completion",
    "openai_responses_completion",
    "render",
    "render_compact",
    "summarize_part",
    "summary_message",
    "summary_schema",
]


def test_summarizers_all_is_pinned() -> None:
    import synopsis.summarizers as summarizers  # noqa: PLC0415 - the module under test

    assert summarizers.__all__ == SUMMARIZERS
    for name in summarizers.__all__:
        assert hasattr(summarizers, name), name


def test_importing_the_summarizers_imports_no_sdk() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = (
        "import sys, synopsis.summarizers; "
        "print([m for m in ('openai', 'anthropic') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_compact_has_the_pinned_signature() -> None:
    import inspect  # noqa: PLC0415

    pinned = [
        "messages",
        "model",
        "context_window",
        "trigger",
        "keep",
        "summarizer",
        "counter",
        "store",
        "session_id",
        "format",
        "force",
        "instructions",
        "listeners",
    ]
    for function in (synopsis.compact, synopsis.acompact):
        names = list(inspect.signature(function).parameters)
        assert names[: len(pinned)] == pinned


def test_compact_left_unset_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SYNOPSIS_CONTEXT_WINDOW", "4000")
    monkeypatch.setenv("SYNOPSIS_RESERVE_OUTPUT_TOKENS", "500")
    history = [
        {"role": "system", "content": "rule " * 5000},
        {"role": "user", "content": "hi"},
    ]
    with pytest.raises(synopsis.BudgetUnreachableError, match="over the 3,500"):
        synopsis.compact(history, force=True)


TESTING = [
    "OPERATIONS",
    "CompletionAnswer",
    "FailingStore",
    "FixedCounter",
    "ScriptedCompletion",
    "ScriptedSummarizer",
    "SummarizeCall",
    "SummaryAnswer",
    "assistant",
    "conversation",
    "system",
    "tool_call",
    "tool_result",
    "user",
]
TESTING_SERVER = [
    "PATHS",
    "Event",
    "FakeLLMServer",
    "Picky",
    "Recorded",
    "Reply",
    "anthropic_message",
    "chat_completion",
    "response",
    "split",
    "stream_events",
]


def test_testing_all_is_pinned() -> None:
    import synopsis.testing as testing  # noqa: PLC0415 - the module under test
    import synopsis.testing.server as server  # noqa: PLC0415

    for module, pinned in ((testing, TESTING), (server, TESTING_SERVER)):
        assert module.__all__ == pinned
        for name in module.__all__:
            assert hasattr(module, name), name


STORES = [
    "LAST_SUMMARY_CHARS",
    "RECALL_TOOL_NAME",
    "SNIPPET_MARK",
    "AsyncStore",
    "Compaction",
    "LockingStore",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SearchHit",
    "SessionState",
    "SessionStats",
    "Store",
    "StoreError",
    "StoredMessage",
    "ahandle_recall",
    "data_dir",
    "default_database_path",
    "export_markdown",
    "handle_recall",
    "is_postgres_url",
    "open_store",
    "recall_tool",
    "wire_json",
]


def test_the_stores_all_is_pinned_and_importing_it_needs_no_database_client() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from synopsis import stores  # noqa: PLC0415

    assert stores.__all__ == STORES
    for name in STORES:
        assert hasattr(stores, name), name
    code = (
        "import sys, synopsis, synopsis.stores; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'psycopg_pool')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_synopsis_imports_no_test_doubles() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    code = (
        "import sys, synopsis, synopsis.summarizers, synopsis.stores; "
        "print(sorted(m for m in sys.modules if m.startswith('synopsis.testing')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_proxy_all_is_pinned_and_importing_it_needs_no_extra() -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    import synopsis.proxy as proxy  # noqa: PLC0415 - the module under test

    assert proxy.__all__ == ["DEFAULT_UPSTREAMS", "create_app"]
    assert callable(proxy.create_app)
    # The command's help imports the package: no server library may load with it, nor with
    # synopsis itself.
    code = (
        "import sys, synopsis, synopsis.proxy, synopsis.cli; "
        "print(sorted(m for m in ('starlette', 'uvicorn', 'httpx2', 'orjson', "
        "'prometheus_client') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
