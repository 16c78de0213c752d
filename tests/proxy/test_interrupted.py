"""A send the proxy did not cancel but that ended cancelled (anyio's connection race can let
its own cancellation out) is sent once more; twice is a 502 in the provider's shape."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import httpx2
import openai
import pytest

from synopsis.proxy import create_app
from synopsis.testing.server import FakeLLMServer, Reply, chat_completion
from tests.proxy.servers import Served

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


class SelfCancelling(httpx2.AsyncBaseTransport):
    """Ends its first ``times`` sends cancelled from within, then sends for real."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.real = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self.times > 0:
            self.times -= 1
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            await asyncio.sleep(0)
        return await self.real.handle_async_request(request)

    async def aclose(self) -> None:
        await self.real.aclose()


@pytest.mark.parametrize(("times", "status"), [(1, 200), (2, 502)])
def test_a_send_cancelled_from_within_is_sent_once_more(times: int, status: int) -> None:
    with FakeLLMServer(default=lambda _: Reply(chat_completion("ok"))) as upstream:
        transport = SelfCancelling(times)
        app = create_app(
            upstream_openai=upstream.root, transport=transport, environ={}, context_window=10**6
        )
        with (
            Served(app) as proxy,
            openai.OpenAI(api_key="sk-test", base_url=f"{proxy.url}/v1", max_retries=0) as client,
        ):
            ask: ChatCompletionMessageParam = {"role": "user", "content": "hello"}
            if status == 200:
                answer = client.chat.completions.create(model="gpt-4o", messages=[ask])
                assert answer.choices[0].message.content == "ok"
                assert len(upstream.requests) == 1
            else:
                with pytest.raises(openai.InternalServerError) as refused:
                    client.chat.completions.create(model="gpt-4o", messages=[ask])
                assert refused.value.status_code == 502
                assert "interrupted" in str(refused.value)
                assert upstream.requests == []
            metrics = proxy.state.metrics.render().decode()
    assert 'synopsis_proxy_errors_total{kind="upstream_interrupted"} 1.0' in metrics
