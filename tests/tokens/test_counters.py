"""TokenCounter implementations: text, framing, every part type, tools, the count cache."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import synopsis
from synopsis.errors import ConfigurationError, ConversationError
from synopsis.messages import (
    MediaPart,
    Message,
    OpaquePart,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from synopsis.tokens import (
    FRAMING,
    Calibrated,
    HeuristicCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
    counters,
)
from synopsis.tokens.counters import ENCRYPTED_CHARS_PER_TOKEN, MessageCounter

from .helpers import text_message


@pytest.fixture(scope="module")
def o200k() -> TiktokenCounter:
    return TiktokenCounter("o200k_base")


def test_count_text_exact() -> None:
    assert TiktokenCounter("o200k_base").count_text("hello world") == 2
    # the first 16 ids of the same text in test_vocab
    assert TiktokenCounter("cl100k_base").count_text("Ünïcödé — 日本語のテキスト") == 16
    assert TiktokenCounter().count_text("") == 0


def test_special_token_text_is_ordinary(o200k: TiktokenCounter) -> None:
    assert o200k.count_text("<|endoftext|>") == 7
    assert o200k.count_text("a <|endofprompt|> b <|fim_prefix|>") > 5
    assert TiktokenCounter("cl100k_base").count_text("<|endoftext|>") == 7


def test_factor_scales_content_rounding_up() -> None:
    assert TiktokenCounter(factor=1.18).count_text("hello world") == 3  # ceil(2.36)
    assert TiktokenCounter(factor=1.5).count_text("hello world") == 3
    assert TiktokenCounter(factor=0.5).count_text("hello world") == 1
    assert TiktokenCounter(factor=1.1).count_text("") == 0
    # 100 * 1.1 is 110.00000000000001 in binary floating point: still 110, not 111
    assert TiktokenCounter(factor=1.1).count_text("hi " * 99 + "hi") == 110
    counter = TiktokenCounter(factor=1.1)
    raw = TiktokenCounter().count_text("word " * 100)
    assert counter.count_text("word " * 100) == math.ceil(round(raw * 1.1, 6))


def test_heuristic_counter() -> None:
    counter = HeuristicCounter()
    assert counter.count_text("hello world") == 3  # 11 / 4
    assert counter.count_text("") == 0
    assert HeuristicCounter(2).count_text("abcd") == 2
    message = Message(Role.USER, (TextPart("abcd"), TextPart("efgh")))
    assert counter.count_message(message) == 3 + 2  # one rounding per message
    assert HeuristicCounter(provider="gemini").count_messages([message]) == 1 + 2


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_message_framing(provider: str) -> None:
    counter = TiktokenCounter(provider=provider)
    framing = FRAMING[provider]  # type: ignore[index]
    plain = text_message("hello world")
    named = text_message("hello world", name="bob")
    assert counter.count_message(plain) == framing.per_message + 2
    assert counter.count_message(named) == framing.per_message + framing.per_name + 2 + 1
    assert counter.count_messages([]) == framing.reply_priming
    assert counter.count_messages([plain, named]) == (
        framing.reply_priming + counter.count_message(plain) + counter.count_message(named)
    )


def test_openai_framing_matches_the_cookbook(o200k: TiktokenCounter) -> None:
    # 3 per message, +1 for a name, +3 reply priming (OpenAI cookbook)
    messages = [
        text_message("You are helpful.", Role.SYSTEM),
        text_message("hello world", name="bob"),
    ]
    content = o200k.count_text("You are helpful.") + o200k.count_text("hello world")
    assert o200k.count_messages(messages) == 3 + 3 + 3 + 1 + o200k.count_text("bob") + content


def test_tool_call_part(o200k: TiktokenCounter) -> None:
    call = ToolCallPart("call_1", "read_file", '{"path": "a.py"}')
    message = Message(Role.ASSISTANT, (call,))
    expected = 3 + 5 + o200k.count_text("read_file") + o200k.count_text('{"path": "a.py"}')
    assert o200k.count_message(message) == expected
    as_mapping = Message(Role.ASSISTANT, (ToolCallPart("c", "read_file", {"path": "a.py"}),))
    compact = json.dumps({"path": "a.py"}, separators=(",", ":"))
    expected = 3 + 5 + o200k.count_text("read_file") + o200k.count_text(compact)
    assert o200k.count_message(as_mapping) == expected


def test_tool_result_part(o200k: TiktokenCounter) -> None:
    plain = Message(Role.TOOL, (ToolResultPart("c", "file contents here"),))
    assert o200k.count_message(plain) == 3 + 2 + o200k.count_text("file contents here")
    named = Message(Role.USER, (ToolResultPart("c", "ok", name="grep"),))
    assert o200k.count_message(named) == 3 + 2 + o200k.count_text("grep") + 1
    image = MediaPart("image", token_estimate=400)
    mixed = Message(Role.TOOL, (ToolResultPart("c", (TextPart("see"), image)),))
    assert o200k.count_message(mixed) == 3 + 2 + o200k.count_text("see") + 400


def test_media_part_uses_estimate(o200k: TiktokenCounter) -> None:
    message = Message(Role.USER, (TextPart("look"), MediaPart("image", token_estimate=1234)))
    assert o200k.count_message(message) == 3 + 1 + 1234
    default = Message(Role.USER, (MediaPart("image", url="https://example.org/x.png"),))
    assert o200k.count_message(default) == 3 + 765


def test_reasoning_and_opaque(o200k: TiktokenCounter) -> None:
    thinking = Message(Role.ASSISTANT, (ReasoningPart("hello world", signature="sig"),))
    assert o200k.count_message(thinking) == 3 + 2
    encrypted = Message(Role.ASSISTANT, (ReasoningPart("summary", encrypted="A" * 160),))
    assert o200k.count_message(encrypted) == 3 + math.ceil(160 / ENCRYPTED_CHARS_PER_TOKEN)
    assert o200k.count_message(encrypted) == 3 + 30
    opaque = Message(Role.ASSISTANT, (OpaquePart("server_tool", {"type": "x"}, "hello world"),))
    assert o200k.count_message(opaque) == 3 + 2


def test_factor_does_not_scale_framing_or_media() -> None:
    claude = TiktokenCounter(provider="anthropic", factor=2.0)
    message = Message(Role.USER, (TextPart("hello world"), MediaPart("image", token_estimate=10)))
    assert claude.count_message(message) == 3 + 4 + 10


# ---------------------------------------------------------------- tools

OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
RESPONSES_TOOL = {"type": "function", **OPENAI_TOOL["function"]}  # type: ignore[dict-item]
ANTHROPIC_TOOL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": OPENAI_TOOL["function"]["parameters"],  # type: ignore[index]
}


def _schema_text(counter: MessageCounter) -> int:
    schema = json.dumps(
        OPENAI_TOOL["function"]["parameters"],  # type: ignore[index]
        separators=(",", ":"),
    )
    return (
        counter.count_text("get_weather")
        + counter.count_text("Weather for a city.")
        + counter.count_text(schema)
    )


@pytest.mark.parametrize("tool", [OPENAI_TOOL, RESPONSES_TOOL, ANTHROPIC_TOOL])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_tool_definitions(tool: dict[str, object], provider: str) -> None:
    counter = TiktokenCounter(provider=provider)
    framing = FRAMING[provider]  # type: ignore[index]
    expected = framing.tools_preamble + framing.per_tool_definition + _schema_text(counter)
    assert counter.count_tools([tool]) == expected
    assert counter.count_messages([], tools=[tool]) == framing.reply_priming + expected
    assert counter.count_tools([tool, tool]) == (
        framing.tools_preamble + 2 * (framing.per_tool_definition + _schema_text(counter))
    )


def test_gemini_function_declarations_and_other_shapes(o200k: TiktokenCounter) -> None:
    declaration = dict(ANTHROPIC_TOOL)
    declaration["parameters"] = declaration.pop("input_schema")
    grouped = {"functionDeclarations": [declaration, declaration, "junk"]}
    assert o200k.count_tools([grouped]) == 12 + 2 * (7 + _schema_text(o200k))
    snake = {"function_declarations": [declaration]}
    assert o200k.count_tools([snake]) == 12 + 7 + _schema_text(o200k)

    server = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    expected = 12 + 7 + o200k.count_text("web_search") + o200k.count_text('{"max_uses":5}')
    assert o200k.count_tools([server]) == expected

    nameless = {"type": "code_interpreter", "container": {"type": "auto"}}
    blob = json.dumps(nameless, separators=(",", ":"))
    assert o200k.count_tools([nameless]) == 12 + 7 + o200k.count_text(blob)

    assert o200k.count_tools([]) == 0
    assert o200k.count_messages([], tools=[]) == 3
    assert o200k.count_messages([], tools=None) == 3


# ---------------------------------------------------------------- cache


def test_cache_counts_each_message_once() -> None:
    counter = TiktokenCounter()
    history = [text_message(f"message number {i}") for i in range(5)]
    first = counter.count_messages(history)
    assert counter.cache_info()[:3] == (0, 5, 5)
    history.append(text_message("one more"))
    second = counter.count_messages(history)
    assert counter.cache_info()[:3] == (5, 6, 6)
    assert second == first + counter.count_message(history[-1])
    assert counter.cache_info().hits == 6


def test_equal_messages_share_one_cached_count() -> None:
    counter = TiktokenCounter()
    a = text_message("same")
    b = text_message("same")  # equal, another object (a history decoded again)
    assert a == b
    assert a is not b
    assert counter.count_message(a) == counter.count_message(b)
    assert counter.cache_info()[:3] == (1, 1, 1)
    counter.count_message(text_message("other"))
    assert counter.cache_info()[:3] == (1, 2, 2)


def test_cache_is_lru_bounded() -> None:
    counter = TiktokenCounter(cache_size=2)
    a, b, c = (text_message(x) for x in "abc")
    counter.count_messages([a, b])
    counter.count_message(text_message("a"))  # a's value is now the most recent
    counter.count_message(c)  # evicts b
    assert counter.cache_info().size == 2
    misses = counter.cache_info().misses
    counter.count_message(text_message("a"))  # an equal copy finds a in the cache
    assert counter.cache_info().misses == misses
    counter.count_message(text_message("b"))  # b's value was evicted
    assert counter.cache_info().misses == misses + 1
    assert counter.cache_info().maxsize == 2


def test_a_message_keeps_its_count_for_its_counter_until_cleared() -> None:
    counter = TiktokenCounter(cache_size=1)
    other = TiktokenCounter(cache_size=1)
    a, b = text_message("alpha beta"), text_message("b")
    n = counter.count_message(a)
    counter.count_message(b)  # a's value is evicted from the LRU
    hits = counter.cache_info().hits
    assert counter.count_message(a) == n  # the very object still has its count
    assert counter.cache_info().hits == hits + 1
    misses = other.cache_info().misses
    assert other.count_message(a) == n  # another counter does not take it
    assert other.cache_info().misses == misses + 1
    counter.clear_cache()
    assert counter.count_message(a) == n
    assert counter.cache_info()[:2] == (0, 1)  # counted again after a clear


def test_cache_disabled_and_cleared() -> None:
    counter = HeuristicCounter(cache_size=0)
    message = text_message("hello")
    assert counter.count_message(message) == counter.count_message(message)
    assert counter.cache_info() == (0, 2, 0, 0)
    cached = TiktokenCounter()
    cached.count_message(message)
    cached.clear_cache()
    assert cached.cache_info() == (0, 0, 0, cached.cache_info().maxsize)


def test_same_object_twice_in_one_history() -> None:
    counter = TiktokenCounter()
    message = text_message("hello world")
    assert counter.count_messages([message, message]) == 3 + 2 * 5


# ---------------------------------------------------------------- construction


@pytest.mark.parametrize(
    "make",
    [
        lambda: TiktokenCounter("r50k_base"),
        lambda: TiktokenCounter(factor=0),
        lambda: TiktokenCounter(factor=-1.0),
        lambda: TiktokenCounter(factor=float("nan")),
        lambda: TiktokenCounter(factor=float("inf")),
        lambda: TiktokenCounter(factor=True),
        lambda: TiktokenCounter(factor="1.2"),  # type: ignore[arg-type]
        lambda: TiktokenCounter(provider="cohere"),
        lambda: TiktokenCounter(cache_size=-1),
        lambda: TiktokenCounter(cache_size=True),
        lambda: TiktokenCounter(cache_size=1.5),  # type: ignore[arg-type]
        lambda: HeuristicCounter(0),
        lambda: HeuristicCounter(float("nan")),
        lambda: HeuristicCounter(True),
        lambda: HeuristicCounter("4"),  # type: ignore[arg-type]
        lambda: HeuristicCounter(provider="x"),
    ],
)
def test_bad_configuration(make: object) -> None:
    with pytest.raises(ConfigurationError):
        make()  # type: ignore[operator]


def test_vocabulary_is_loaded_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(name: str) -> None:
        raise AssertionError("loaded too early")

    monkeypatch.setattr(counters, "get_encoding", fail)
    counter = TiktokenCounter("cl100k_base")
    assert counter.encoding_name == "cl100k_base"
    monkeypatch.undo()
    assert counter.encoding.name == "cl100k_base"
    assert counter.encoding is counter.encoding


def test_protocol_and_repr() -> None:
    tik = TiktokenCounter("cl100k_base", "anthropic", 1.5)
    heur = HeuristicCounter(3.5, "gemini")
    for counter in (tik, heur, Calibrated(tik), counter_for_model("gpt-4o")):
        assert isinstance(counter, TokenCounter)
    assert not isinstance(object(), TokenCounter)
    assert repr(tik) == "TiktokenCounter(encoding='cl100k_base', provider='anthropic', factor=1.5)"
    assert repr(heur) == "HeuristicCounter(chars_per_token=3.5, provider='gemini')"


def test_counter_for_model() -> None:
    gpt = counter_for_model("gpt-4o")
    assert isinstance(gpt, TiktokenCounter)
    assert (gpt.encoding_name, gpt.provider, gpt.factor) == ("o200k_base", "openai", 1.0)
    assert counter_for_model("gpt-4o-mini") is gpt  # shared per family
    assert counter_for_model(None) is gpt
    old = counter_for_model("gpt-4-0613")
    assert isinstance(old, TiktokenCounter)
    assert old.encoding_name == "cl100k_base"
    claude = counter_for_model("claude-sonnet-4-5")
    assert isinstance(claude, TiktokenCounter)
    assert (claude.provider, claude.factor) == ("anthropic", 1.18)
    gemini = counter_for_model("gemini-2.5-pro")
    assert isinstance(gemini, TiktokenCounter)
    assert (gemini.provider, gemini.factor) == ("gemini", 1.08)
    assert counter_for_model("gpt-4o").count_text("hello world") == 2
    assert claude.count_text("hello world") == 3


def test_real_transcripts_count(transcripts: dict[str, tuple[Message, ...]]) -> None:
    counter = TiktokenCounter()
    heuristic = HeuristicCounter()
    for name, messages in transcripts.items():
        exact = counter.count_messages(messages)
        rough = heuristic.count_messages(messages)
        assert exact > len(messages) * 3, name
        assert 0.5 < rough / exact < 2.0, name
        assert exact == 3 + sum(counter.count_message(m) for m in messages)


@pytest.mark.parametrize("tools", [5, "abc", {"a": 1}, ["x"], [None], [{"name": "f"}, 3]])
def test_tools_that_are_not_definitions_are_refused_with_a_sentence(tools) -> None:
    with pytest.raises(ConversationError, match="tool") as info:
        synopsis.count_tokens([{"role": "user", "content": "x"}], tools=tools)
    assert info.value.rule == "tools"


@pytest.mark.parametrize("model", [5, [], b"gpt-4o"])
def test_a_model_that_is_not_a_name_is_refused_with_a_sentence(model) -> None:
    with pytest.raises(ConfigurationError, match="model must be a string"):
        synopsis.count_tokens("x", model)


def test_no_tools_count_nothing_and_text_counts_as_text() -> None:
    counter = synopsis.TiktokenCounter()
    assert counter.count_tools(None) == 0
    assert counter.count_tools([]) == 0
    assert synopsis.count_tokens("hello world", "gpt-4o") == counter.count_text("hello world")


# -- long texts are counted line by line, exactly -------------------------------------------

_PIECES = st.sampled_from(
    [
        "a",
        "B",
        "é",
        "ß",
        "1",
        "½",
        "²",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\t",
        ".",
        "-",
        "'s",
        "'S",
        "\r",
        "\u0301",
        "漢",
        "😀",
        "_",
        "/",
        "\r\n",
        "—",
        " \n",
        "'",
        '"',
        ":",
        "word ",
        "- item",
    ]
)


@given(st.lists(_PIECES, min_size=1, max_size=60), st.sampled_from(["o200k_base", "cl100k_base"]))
def test_a_long_text_counted_line_by_line_counts_what_the_whole_encodes(
    pieces: list[str], encoding: str
) -> None:
    counter = TiktokenCounter(encoding)
    text = "".join(pieces) * (counters._PIECEWISE_FROM // max(1, len("".join(pieces))) + 1)
    assert len(text) >= counters._PIECEWISE_FROM
    whole = len(counter.encoding.encode_ordinary(text))
    assert counter.count_text(text) == whole
    assert counter.count_text(text) == whole  # again, from what it kept of each line


def test_a_rendered_summary_is_counted_from_its_lines_and_the_kept_lines_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = TiktokenCounter(factor=1.1)
    lines = [f"- line {i}: the file src/mod_{i}.py was read" for i in range(200)]
    text = "Summary\n" + "\n".join(lines)
    raw = len(counter.encoding.encode_ordinary(text))
    assert counter.count_text(text) == math.ceil(round(raw * 1.1, 6))
    assert len(counter._pieces) == 201
    monkeypatch.setattr(counters, "_PIECES_KEPT", 50)
    other = "Other\n" + "\n".join(reversed(lines))
    assert counter.count_text(other) == math.ceil(
        round(len(counter.encoding.encode_ordinary(other)) * 1.1, 6)
    )
    assert len(counter._pieces) <= 50
    monkeypatch.setattr(counters, "_KEPT_CHARS", 500)  # and at most so many characters
    counter.count_text("Third\n" + "\n".join(lines[::2]))
    assert sum(map(len, counter._pieces)) <= 500
    counter.clear_cache()
    assert counter._pieces == {}
    monkeypatch.setattr(counters, "_PIECE_CHARS", 5_000)
    one_line = "word " * 2_000  # a tool output of one long line: counted, not kept
    assert counter.count_text(one_line) == math.ceil(
        round(len(counter.encoding.encode_ordinary(one_line)) * 1.1, 6)
    )
    assert counter._pieces == {}
