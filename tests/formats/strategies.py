"""Hypothesis strategies for wire histories in each provider format.

Every strategy draws JSON that the matching converter accepts: each message and block kind the
converter knows (with and without optional fields, with unknown keys at message and block
level), provider items it keeps verbatim, and ids that repeat. Histories are not required to be
valid conversations (calls need not be answered); they are what the round-trip and
cross-format properties feed on.

    openai_history()      -> list of chat-completions messages
    responses_history()   -> list of Responses input items
    anthropic_request()   -> (messages, system)
    gemini_request()      -> (contents, systemInstruction)
    gemini_dumped_request() -> the same as google-genai's model_dump() writes it

``corrupted(base)`` and ``retypings(value, draw)`` damage a drawn value, for the properties that
decode either rejects input or gives it back unchanged.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

Json = Any
Draw = st.DrawFn

TEXT = st.text(max_size=12)
WORD = st.text(alphabet="abcdefxyz_", min_size=1, max_size=8)
CALL_IDS = st.sampled_from(["call_1", "call_2", "call_3", "toolu_01", "fc-9"])
TOOL_NAMES = st.sampled_from(["bash", "read_file", "get_weather", "ns.lookup", "edit-file"])
B64 = st.sampled_from(["iVBORw0KGgo=", "JVBERi0xLjQ=", "UklGRg==", ""])
SCALAR = st.none() | st.booleans() | st.integers(-3, 3) | TEXT | st.floats(-2, 2, width=32)
JSON: st.SearchStrategy[Json] = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORD, inner, max_size=3),
    max_leaves=6,
)
# keys no converter knows, so they must come back untouched
UNKNOWN_KEYS = st.sampled_from(["x_meta", "vendor_flag", "trace"])


def unknown() -> st.SearchStrategy[dict[str, Json]]:
    return st.dictionaries(UNKNOWN_KEYS, JSON, max_size=2)


def args_object() -> st.SearchStrategy[dict[str, Json]]:
    return st.dictionaries(WORD, JSON, max_size=3)


def args_text() -> st.SearchStrategy[str]:
    """Argument text as OpenAI sends it: JSON objects mostly, sometimes text that is not JSON."""
    return args_object().map(json.dumps) | st.sampled_from(["", "{}", "not json", "[1, 2]"])


@st.composite
def _with(
    draw: Draw, /, base: dict[str, Json], **optional: st.SearchStrategy[Json]
) -> dict[str, Json]:
    """``base`` plus each optional key, present or not, plus unknown keys."""
    out = dict(base)
    for key, strategy in optional.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    return out | draw(unknown())


# ---------------------------------------------------------------- OpenAI chat completions


def _chat_text_part() -> st.SearchStrategy[dict[str, Json]]:
    return TEXT.flatmap(lambda t: _with({"type": "text", "text": t}))


def _chat_media_part() -> st.SearchStrategy[dict[str, Json]]:
    image = st.builds(
        lambda url, detail: {"type": "image_url", "image_url": {"url": url, **detail}},
        st.sampled_from(["https://x.test/a.png", "data:image/png;base64,iVBORw0KGgo="]),
        st.sampled_from([{}, {"detail": "low"}, {"detail": "high"}]),
    )
    audio = st.builds(
        lambda data, fmt: {"type": "input_audio", "input_audio": {"data": data, "format": fmt}},
        B64,
        st.sampled_from(["wav", "mp3"]),
    )
    file = st.fixed_dictionaries(
        {},
        optional={
            "file_data": st.sampled_from(["data:application/pdf;base64,JVBERi0=", "JVBERi0="]),
            "file_id": st.just("file-abc"),
            "filename": st.sampled_from(["a.pdf", "notes.txt"]),
        },
    ).map(lambda inner: {"type": "file", "file": inner})
    return image | audio | file


def _chat_call() -> st.SearchStrategy[dict[str, Json]]:
    function = st.builds(
        lambda cid, name, args, typed: {
            "id": cid,
            **({"type": "function"} if typed else {}),
            "function": {"name": name, "arguments": args},
        },
        CALL_IDS,
        TOOL_NAMES,
        args_text(),
        st.booleans(),
    )
    custom = st.builds(
        lambda cid, name, text: {
            "id": cid,
            "type": "custom",
            "custom": {"name": name, "input": text},
        },
        CALL_IDS,
        TOOL_NAMES,
        TEXT,
    )
    return function | custom


@st.composite
def openai_message(draw: Draw) -> dict[str, Json]:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"]))
    out: dict[str, Json] = {"role": role}
    if role in ("system", "developer"):
        out["content"] = draw(TEXT | st.lists(_chat_text_part(), max_size=2))
    elif role == "user":
        out["content"] = draw(TEXT | st.lists(_chat_text_part() | _chat_media_part(), max_size=3))
    elif role == "assistant":
        refusal = TEXT.map(lambda t: {"type": "refusal", "refusal": t})
        content = st.none() | TEXT | st.lists(_chat_text_part() | refusal, max_size=2)
        if draw(st.booleans()):
            out["content"] = draw(content)
        if draw(st.booleans()):
            out["tool_calls"] = draw(st.lists(_chat_call(), max_size=3))
        if draw(st.booleans()):
            fn = {"name": draw(TOOL_NAMES), "arguments": draw(args_text())}
            out["function_call"] = fn
        if draw(st.booleans()):
            out["refusal"] = draw(st.none() | TEXT)
    elif role == "tool":
        out["tool_call_id"] = draw(CALL_IDS)
        out["content"] = draw(st.none() | TEXT | st.lists(_chat_text_part(), max_size=2))
    else:
        out["name"] = draw(TOOL_NAMES)
        out["content"] = draw(st.none() | TEXT)
    if role not in ("function",) and draw(st.booleans()):
        out["name"] = draw(WORD)
    return out | draw(unknown())


def openai_history() -> st.SearchStrategy[list[dict[str, Json]]]:
    return st.lists(openai_message(), max_size=8)


# ---------------------------------------------------------------- OpenAI Responses


def _resp_part() -> st.SearchStrategy[dict[str, Json]]:
    text = st.builds(
        lambda kind, t: {"type": kind, "text": t},
        st.sampled_from(["input_text", "output_text"]),
        TEXT,
    ).flatmap(lambda b: _with(b, annotations=st.just([])))
    image = _with(
        {"type": "input_image", "detail": "auto"},
        image_url=st.sampled_from(["https://x.test/i.png", "data:image/jpeg;base64,/9j/4AAQ"]),
        file_id=st.just("file-img"),
    )
    file = _with(
        {"type": "input_file"},
        file_data=st.just("data:application/pdf;base64,JVBERi0="),
        file_id=st.just("file-pdf"),
        file_url=st.just("https://x.test/a.pdf"),
        filename=st.just("a.pdf"),
    )
    nested = st.builds(
        lambda d, f: {"type": "input_audio", "input_audio": {"data": d, "format": f}},
        B64,
        st.sampled_from(["wav", "mp3"]),
    )
    flat = _with({"type": "input_audio"}, data=B64, format=st.sampled_from(["wav", "mp3"]))
    refusal = TEXT.map(lambda t: {"type": "refusal", "refusal": t})
    return text | image | file | nested | flat | refusal


def _result_parts() -> st.SearchStrategy[list[dict[str, Json]]]:
    text = TEXT.map(lambda t: {"type": "input_text", "text": t})
    image = st.just({"type": "input_image", "image_url": "https://x.test/r.png", "detail": "low"})
    file = st.just({"type": "input_file", "file_id": "file-out"})
    return st.lists(text | image | file, max_size=3)


ITEM_IDS = st.sampled_from(["msg_1", "fc_1", "rs_1", "ctc_9"])
STATUS = st.sampled_from(["completed", "in_progress", "incomplete"])


@st.composite
def responses_item(draw: Draw) -> dict[str, Json]:
    """One item; its keys in the converter's order or in any other (SDKs and clients write
    them each their own way, and they come back as they came)."""
    item = draw(_responses_item())
    if draw(st.booleans()):
        return item
    return {k: item[k] for k in draw(st.permutations(list(item)))}


@st.composite
def _responses_item(draw: Draw) -> dict[str, Json]:
    kind = draw(
        st.sampled_from(
            [
                "easy",
                "message",
                "function_call",
                "function_call_output",
                "reasoning",
                "custom_tool_call",
                "custom_tool_call_output",
                "shell_call",
                "shell_call_output",
                "computer_call",
                "computer_call_output",
                "apply_patch_call_output",
                "local_shell_call",
                "local_shell_call_output",
                "mcp_call",
                "mcp_list_tools",
                "mcp_approval_request",
                "mcp_approval_response",
                "compaction",
                "compaction_trigger",
                "item_reference",
                "web_search_call",
                "future_item",
            ]
        )
    )
    cid = draw(CALL_IDS)
    if kind in ("easy", "message"):
        role = draw(st.sampled_from(["user", "system", "developer", "assistant"]))
        base: dict[str, Json] = {
            "role": role,
            "content": draw(TEXT | st.lists(_resp_part(), max_size=3)),
        }
        if kind == "easy":
            return base | draw(unknown())
        return draw(_with({"type": "message", **base}, id=ITEM_IDS | st.none(), status=STATUS))
    if kind == "function_call":
        base = {
            "type": kind,
            "call_id": cid,
            "name": draw(TOOL_NAMES),
            "arguments": draw(args_text()),
        }
        return draw(_with(base, id=ITEM_IDS, status=STATUS))
    if kind in ("function_call_output", "custom_tool_call_output"):
        base = {"type": kind, "call_id": cid, "output": draw(TEXT | _result_parts())}
        return draw(_with(base, id=ITEM_IDS, status=STATUS))
    if kind == "reasoning":
        summary = st.lists(TEXT.map(lambda t: {"type": "summary_text", "text": t}), max_size=2)
        content = st.lists(TEXT.map(lambda t: {"type": "reasoning_text", "text": t}), max_size=2)
        base = {"type": kind, "summary": draw(summary)}
        enc = st.sampled_from(["gAAAAB-enc", ""]) | st.none()
        return draw(_with(base, id=ITEM_IDS, content=content, encrypted_content=enc, status=STATUS))
    if kind == "custom_tool_call":
        base = {"type": kind, "call_id": cid, "name": draw(TOOL_NAMES), "input": draw(TEXT)}
        return draw(_with(base, id=ITEM_IDS))
    if kind == "shell_call":
        action = {"commands": draw(st.lists(TEXT, max_size=2)), "timeout_ms": 1000}
        return draw(
            _with({"type": kind, "call_id": cid, "action": action}, id=ITEM_IDS, status=STATUS)
        )
    if kind == "shell_call_output":
        record = {"stdout": draw(TEXT), "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
        return draw(_with({"type": kind, "call_id": cid, "output": [record]}, id=ITEM_IDS))
    if kind == "computer_call":
        action = {"type": "click", "x": 1, "y": 2, "button": "left"}
        base = {"type": kind, "call_id": cid, "action": action, "pending_safety_checks": []}
        return draw(_with(base, id=ITEM_IDS, status=STATUS))
    if kind == "computer_call_output":
        shot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="}
        return draw(_with({"type": kind, "call_id": cid, "output": shot}, id=ITEM_IDS))
    if kind == "apply_patch_call_output":
        return draw(_with({"type": kind, "call_id": cid, "status": "completed"}, output=TEXT))
    if kind == "local_shell_call":
        action = {"type": "exec", "command": draw(st.lists(TEXT, max_size=2)), "env": {}}
        base = {"type": kind, "id": "lsh_1", "call_id": cid, "action": action}
        return draw(_with(base, status=STATUS))
    if kind == "local_shell_call_output":  # its id is the call_id of the call it answers
        return draw(_with({"type": kind, "id": cid, "output": draw(TEXT)}, status=STATUS))
    if kind == "mcp_call":
        base = {"type": kind, "id": "mcp_1", "server_label": "git", "name": draw(TOOL_NAMES)}
        return draw(_with(base, arguments=args_text(), output=TEXT, error=st.none()))
    if kind == "mcp_list_tools":
        tool = {"name": draw(TOOL_NAMES), "input_schema": {"type": "object"}}
        return {"type": kind, "id": "mcpl_1", "server_label": "git", "tools": [tool]}
    if kind == "mcp_approval_request":
        base = {"type": kind, "id": "mcpr_1", "server_label": "git", "name": draw(TOOL_NAMES)}
        return base | {"arguments": draw(args_text())}
    if kind == "mcp_approval_response":
        base = {"type": kind, "approval_request_id": "mcpr_1", "approve": draw(st.booleans())}
        return draw(_with(base, id=st.just("mcpa_1"), reason=TEXT))
    if kind == "compaction":
        return draw(_with({"type": kind, "encrypted_content": "gAAA-compact"}, id=ITEM_IDS))
    if kind == "compaction_trigger":
        return {"type": kind}
    if kind == "item_reference":
        return {"type": kind, "id": draw(ITEM_IDS)}
    if kind == "web_search_call":
        return {"type": kind, "id": "ws_1", "status": "completed", "action": {"query": draw(TEXT)}}
    return draw(_with({"type": kind}, role=st.sampled_from(["user", "assistant", "robot"])))


def responses_history() -> st.SearchStrategy[list[dict[str, Json]]]:
    return st.lists(responses_item(), max_size=8)


# ---------------------------------------------------------------- Anthropic


def _cache() -> st.SearchStrategy[dict[str, Json]]:
    return st.just({"type": "ephemeral"})


def _anthropic_text() -> st.SearchStrategy[dict[str, Json]]:
    return TEXT.flatmap(
        lambda t: _with({"type": "text", "text": t}, cache_control=_cache(), citations=st.none())
    )


def _anthropic_source() -> st.SearchStrategy[dict[str, Json]]:
    return st.sampled_from(
        [
            {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            {"type": "url", "url": "https://x.test/a.png"},
            {"type": "file", "file_id": "file_01"},
        ]
    )


def _anthropic_media() -> st.SearchStrategy[dict[str, Json]]:
    image = _anthropic_source().flatmap(lambda s: _with({"type": "image", "source": s}))
    doc_source = st.sampled_from(
        [
            {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
            {"type": "text", "media_type": "text/plain", "data": "plain words"},
            {"type": "url", "url": "https://x.test/a.pdf"},
            {"type": "content", "content": [{"type": "text", "text": "chunk"}]},
        ]
    )
    document = doc_source.flatmap(
        lambda s: _with(
            {"type": "document", "source": s},
            title=TEXT,
            context=TEXT,
            citations=st.just({"enabled": True}),
        )
    )
    return image | document


def _anthropic_result() -> st.SearchStrategy[dict[str, Json]]:
    search = st.just(
        {
            "type": "search_result",
            "source": "https://x.test",
            "title": "t",
            "content": [{"type": "text", "text": "found"}],
        }
    )
    plain = st.lists(
        _anthropic_text() | _anthropic_source().map(lambda s: {"type": "image", "source": s}),
        max_size=2,
    )
    with_search = st.lists(_anthropic_text() | search, min_size=1, max_size=2)
    return CALL_IDS.flatmap(
        lambda cid: _with(
            {"type": "tool_result", "tool_use_id": cid},
            content=TEXT | plain | with_search,
            is_error=st.booleans(),
            cache_control=_cache(),
        )
    )


def _anthropic_block() -> st.SearchStrategy[dict[str, Json]]:
    tool_use = st.builds(
        lambda cid, name, args: {"type": "tool_use", "id": cid, "name": name, "input": args},
        CALL_IDS,
        TOOL_NAMES,
        args_object(),
    ).flatmap(lambda b: _with(b, cache_control=_cache()))
    thinking = st.builds(
        lambda t, sig: {"type": "thinking", "thinking": t, "signature": sig},
        TEXT,
        st.sampled_from(["EqQBCkgIARABGAIiQ", "sig=="]),
    )
    redacted = st.just({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"})
    server = st.just(
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}}
    )
    server_result = st.just(
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "url": "https://x.test", "title": "t"}],
        }
    )
    others: st.SearchStrategy[dict[str, Json]] = st.sampled_from(
        [
            {"type": "container_upload", "file_id": "file_9"},
            {"type": "compaction", "content": "summary of earlier turns"},
            {"content": None, "signature": "EuYB", "type": "compaction", "encrypted_content": "e"},
            {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "read", "server_name": "fs"},
            {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": "body"},
            {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {}},
            {"type": "search_result", "source": "s", "title": "t", "content": []},
            {"type": "future_block", "payload": {"a": 1}},
        ]
    )
    return (
        _anthropic_text()
        | _anthropic_media()
        | tool_use
        | _anthropic_result()
        | thinking
        | redacted
        | server
        | server_result
        | others
    )


@st.composite
def anthropic_message(draw: Draw) -> dict[str, Json]:
    role = draw(st.sampled_from(["user", "assistant", "user", "assistant", "system"]))
    content = draw(TEXT | st.lists(_anthropic_block(), max_size=4))
    out = {"role": role, "content": content}
    return out | (draw(unknown()) if draw(st.integers(0, 4)) == 0 else {})


def anthropic_system() -> st.SearchStrategy[Json]:
    return st.none() | TEXT | st.lists(_anthropic_text(), max_size=2)


def anthropic_request() -> st.SearchStrategy[tuple[list[dict[str, Json]], Json]]:
    return st.tuples(st.lists(anthropic_message(), max_size=6), anthropic_system())


# ---------------------------------------------------------------- Gemini


def _camel(draw: Draw, camel: str, snake: str) -> str:
    return camel if draw(st.booleans()) else snake


@st.composite
def gemini_part(draw: Draw) -> dict[str, Json]:
    kind = draw(st.sampled_from(["text", "thought", "inline", "file", "call", "response", "code"]))
    sig = {_camel(draw, "thoughtSignature", "thought_signature"): "CiQBVKhc7g=="}
    maybe_sig = sig if draw(st.booleans()) else {}
    if kind == "text":
        thought = draw(st.sampled_from([{}, {"thought": False}]))
        return {"text": draw(TEXT), **thought, **maybe_sig} | draw(unknown())
    if kind == "thought":
        return {"text": draw(TEXT), "thought": True, **maybe_sig}
    if kind in ("inline", "file"):
        snake = draw(st.booleans())
        mime_key = "mime_type" if snake else "mimeType"
        mime = draw(st.sampled_from(["image/png", "application/pdf", "audio/wav", "video/mp4"]))
        if kind == "inline":
            inner: dict[str, Json] = {mime_key: mime, "data": draw(B64)}
            out: dict[str, Json] = {"inline_data" if snake else "inlineData": inner}
        else:
            inner = {"file_uri" if snake else "fileUri": "gs://bucket/obj"}
            if draw(st.booleans()):
                inner[mime_key] = mime
            out = {"file_data" if snake else "fileData": inner}
            if draw(st.booleans()):
                out["videoMetadata"] = {"startOffset": "1s"}
        return out
    if kind == "call":
        call: dict[str, Json] = {"name": draw(TOOL_NAMES)}
        if draw(st.booleans()):
            call["args"] = draw(args_object())
        if draw(st.integers(0, 3)) == 0:
            call["id"] = draw(CALL_IDS)
        return {_camel(draw, "functionCall", "function_call"): call, **maybe_sig}
    if kind == "response":
        response: dict[str, Json] = {"name": draw(TOOL_NAMES)}
        shapes = st.sampled_from(["output", "result", "error"]).flatmap(
            lambda k: TEXT.map(lambda t: {k: t})
        )
        if draw(st.booleans()):
            response["response"] = draw(shapes | args_object())
        if draw(st.integers(0, 3)) == 0:
            response["id"] = draw(CALL_IDS)
        return {_camel(draw, "functionResponse", "function_response"): response}
    return draw(
        st.sampled_from(
            [
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                {"futurePart": {"x": 1}},
                {},
            ]
        )
    )


@st.composite
def gemini_content(draw: Draw) -> dict[str, Json]:
    out: dict[str, Json] = {}
    role = draw(st.sampled_from(["user", "model", "user", "model", None]))
    if role is not None:
        out["role"] = role
    if draw(st.integers(0, 6)):
        out["parts"] = draw(st.lists(gemini_part(), max_size=4))
    return out | (draw(unknown()) if draw(st.integers(0, 4)) == 0 else {})


def gemini_system() -> st.SearchStrategy[Json]:
    text_parts = st.lists(TEXT.map(lambda t: {"text": t}), max_size=2)
    content = text_parts.flatmap(lambda p: _with({"parts": p}, role=st.just("system")))
    return st.none() | TEXT | content | text_parts


def gemini_request() -> st.SearchStrategy[tuple[list[dict[str, Json]], Json]]:
    return st.tuples(st.lists(gemini_content(), max_size=6), gemini_system())


# every field of a google-genai Part (and of what it nests), as model_dump() writes them: the
# unset ones are present as None
_DUMP_PART = (
    "video_metadata", "thought", "inline_data", "file_data", "thought_signature",
    "function_call", "code_execution_result", "executable_code", "function_response", "text",
)  # fmt: skip


@st.composite
def gemini_dumped_part(draw: Draw) -> dict[str, Json]:
    out: dict[str, Json] = dict.fromkeys(_DUMP_PART)
    kind = draw(st.sampled_from(["text", "thought", "inline", "file", "call", "response", "code"]))
    maybe_sig = st.none() | st.just("CiQBVKhc7g==")
    if kind == "text":
        out |= {"text": draw(TEXT), "thought": draw(st.none() | st.just(False))}
    elif kind == "thought":
        out |= {"text": draw(TEXT), "thought": True, "thought_signature": draw(maybe_sig)}
    elif kind == "inline":
        mime = draw(st.sampled_from(["image/png", "application/pdf", "audio/wav"]))
        out["inline_data"] = {"display_name": None, "data": draw(B64), "mime_type": mime}
    elif kind == "file":
        video = draw(st.none() | st.just("video/mp4"))
        out["file_data"] = {"display_name": None, "file_uri": "gs://b/o", "mime_type": video}
    elif kind == "call":
        args = draw(st.none() | args_object())
        call_id = draw(st.none() | CALL_IDS)
        out["function_call"] = {"id": call_id, "args": args, "name": draw(TOOL_NAMES)}
        out["thought_signature"] = draw(maybe_sig)
    elif kind == "response":
        shapes = st.sampled_from(["output", "error"]).flatmap(lambda k: TEXT.map(lambda t: {k: t}))
        out["function_response"] = {
            "will_continue": None,
            "scheduling": None,
            "id": draw(st.none() | CALL_IDS),
            "name": draw(TOOL_NAMES),
            "response": draw(st.none() | shapes | args_object()),
        }
    else:
        out["code_execution_result"] = {"outcome": "OUTCOME_OK", "output": draw(TEXT)}
    return out


@st.composite
def gemini_dumped_content(draw: Draw) -> dict[str, Json]:
    parts = draw(st.none() | st.lists(gemini_dumped_part(), max_size=4))
    return {"parts": parts, "role": draw(st.sampled_from(["user", "model", None]))}


def gemini_dumped_request() -> st.SearchStrategy[tuple[list[dict[str, Json]], Json]]:
    text = TEXT.map(lambda t: dict.fromkeys(_DUMP_PART) | {"text": t})
    system = st.builds(
        lambda parts: {"parts": parts, "role": None}, st.none() | st.lists(text, max_size=2)
    )
    return st.tuples(st.lists(gemini_dumped_content(), max_size=6), st.none() | system)


# ---------------------------------------------------------------- corruption

# keys and values every converter reads, so that corruptions land where they are checked
_WIRE_KEYS = st.sampled_from(
    [
        "role", "content", "type", "text", "id", "call_id", "name", "arguments", "input",
        "output", "summary", "tool_calls", "tool_call_id", "function", "image_url", "source",
        "tool_use_id", "is_error", "signature", "parts", "functionCall", "functionResponse",
        "args", "response", "inlineData", "mimeType", "thought", "input_audio", "custom",
        "file", "data", "format", "function_call", "function_response", "inline_data",
        "file_data", "fileData", "encrypted_content", "media_type", "url",
    ]
)  # fmt: skip
_WIRE_VALUES = st.sampled_from(
    ["user", "assistant", "system", "tool", "model", "message", "function_call", "reasoning",
     "text", "input_text", "image", "tool_use", "tool_result", "thinking", "", "x"]
)  # fmt: skip
_NOISE: st.SearchStrategy[Json] = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | _WIRE_VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_WIRE_KEYS, inner, max_size=3),
    max_leaves=8,
)


def _paths(value: Json, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            out += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            out += _paths(inner, (*prefix, i))
    return out


@st.composite
def corrupted(draw: Draw, base: st.SearchStrategy[Json]) -> Json:
    """A value of ``base`` with one to four places replaced, deleted or given a new key."""
    value = json.loads(json.dumps(draw(base)))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(_paths(value)))
        if not path:
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(_NOISE)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][draw(_WIRE_KEYS)] = draw(_NOISE)
    return value


_OTHER_VALUES: list[Json] = [None, True, 0, 1.5, "x", [], {}, [1], {"x": 1}, [{"type": "text"}]]
_OTHER_TYPE: st.SearchStrategy[Json] = st.sampled_from(_OTHER_VALUES)


def _at(value: Json, path: tuple[Any, ...]) -> Json:
    for key in path:
        value = value[key]
    return value


def retypings(value: Json, draw: Callable[[st.SearchStrategy[Any]], Any]) -> Iterator[Json]:
    """Copies of ``value``, one for each nested object or list, with that one given a value of
    another JSON type, and one for each nested object, with a known key added. Every place is
    tried, since converters must check each nested shape their encoder relies on and
    ``corrupted`` reaches the rarer ones too seldom."""
    for path in _paths(value):
        old = _at(value, path)
        if not path or not isinstance(old, dict | list):
            continue
        copy = json.loads(json.dumps(value))
        other = [v for v in _OTHER_VALUES if type(v) is not type(old)]
        _at(copy, path[:-1])[path[-1]] = draw(st.sampled_from(other))
        yield copy
        if isinstance(old, dict):
            copy = json.loads(json.dumps(value))
            _at(copy, path)[draw(_WIRE_KEYS)] = draw(_OTHER_TYPE)
            yield copy
