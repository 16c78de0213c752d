"""Two conversations through one proxy never see each other's summaries or originals, even
when they open alike: two clients with other keys, and two sessions a client names."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import openai
import pytest

from synopsis.stores import MemoryStore

if TYPE_CHECKING:
    from synopsis.testing.server import FakeLLMServer
    from tests.proxy.conftest import ServeProxy

FRUIT = ("apples", "bananas")


def _turn(fruit: str, n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"tell me about {fruit} number {n}: " + f"{fruit} " * 60},
        {"role": "assistant", "content": f"{fruit} {n} noted"},
    ]


@pytest.mark.parametrize("named", [False, True], ids=["by-key", "by-header"])
def test_alike_conversations_keep_apart(
    upstream: FakeLLMServer, proxy: ServeProxy, named: bool
) -> None:
    store = MemoryStore()
    served = proxy(context_window=1_500, store=store)
    opening: list[Any] = [
        {"role": "system", "content": "You keep notes."},
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
    ]
    histories = {fruit: list(opening) for fruit in FRUIT}
    clients = {
        fruit: openai.OpenAI(
            api_key="sk-same" if named else f"sk-{fruit}",
            base_url=f"{served.url}/v1",
            max_retries=0,
            default_headers={"x-synopsis-session": fruit} if named else None,
        )
        for fruit in FRUIT
    }
    sessions: dict[str, set[str]] = {fruit: set() for fruit in FRUIT}
    try:
        for n in range(25):
            for fruit, client in clients.items():  # interleaved, as two users would be
                histories[fruit] += _turn(fruit, n)[:1]
                raw = client.chat.completions.with_raw_response.create(
                    model="gpt-4o", messages=histories[fruit]
                )
                sessions[fruit].add(raw.headers["x-synopsis-session"])
                histories[fruit] += _turn(fruit, n)[1:]
                other = FRUIT[1 - FRUIT.index(fruit)]
                forwarded = json.dumps(upstream.requests[-1].body["messages"])
                assert other not in forwarded
    finally:
        for client in clients.values():
            client.close()
    (apples,), (bananas,) = sessions["apples"], sessions["bananas"]
    assert apples != bananas
    assert sorted(store.sessions()) == sorted([apples, bananas])
    for fruit, session in (("apples", apples), ("bananas", bananas)):
        kept = store.recall(session)
        assert kept  # compactions happened and kept the originals
        other = FRUIT[1 - FRUIT.index(fruit)]
        assert all(other not in json.dumps(m.data) for m in kept)
        assert all(other not in r.model_dump_json() for r in store.summaries(session))
