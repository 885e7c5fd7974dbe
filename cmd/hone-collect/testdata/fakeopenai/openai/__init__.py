"""A stand-in for the openai package's AsyncOpenAI, for running docs/proxy.md's
Python example without the package: the same constructor arguments and
chat.completions.create(..., extra_headers=...) call, sent as plain HTTP with
the standard library. Like the real client, base_url defaults to
$OPENAI_BASE_URL and then OpenAI's own URL (which the test must never reach).
"""
import asyncio
import json
import os
import types
import urllib.request


class _Completions:
    def __init__(self, client):
        self._client = client

    async def create(self, model, messages, extra_headers=None, **params):
        return await asyncio.to_thread(self._post, dict(params, model=model, messages=messages), extra_headers or {})

    def _post(self, body, extra_headers):
        c = self._client
        headers = {"Content-Type": "application/json", "Authorization": "Bearer " + c.api_key}
        headers.update(c.default_headers)
        headers.update(extra_headers)
        req = urllib.request.Request(c.base_url.rstrip("/") + "/chat/completions",
                                     data=json.dumps(body).encode(), headers=headers)
        with urllib.request.urlopen(req, timeout=120) as resp:
            out = json.load(resp)
        msg = out["choices"][0]["message"]
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=types.SimpleNamespace(**msg))])


class AsyncOpenAI:
    def __init__(self, base_url=None, api_key=None, default_headers=None):
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY", "")
        self.default_headers = dict(default_headers or {})
        self.chat = types.SimpleNamespace(completions=_Completions(self))
