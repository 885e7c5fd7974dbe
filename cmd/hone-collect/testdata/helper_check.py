"""Drives python/hone_proxy.py against a running hone-collect proxy, for
cmd/hone-collect/docs_test.go. Usage: helper_check.py PROXY_BASE_URL MODEL.

Chat calls go through urllib with the helper's headers (the openai package
is not in Debian); rewards and closes go through the helper. Prints, as
JSON, what the Go test checks against the written group.
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

import hone_proxy

base, model = sys.argv[1], sys.argv[2]


def chat(headers, messages):
    req = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps({"model": model, "messages": messages, "max_tokens": 4}).encode(),
        headers={"Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.load(resp)["choices"][0]["message"]["content"]


def expect(exc, fn, *want):
    try:
        fn()
    except exc as e:
        for w in want:
            if w not in str(e):
                raise AssertionError("%s: %r lacks %r" % (exc.__name__, str(e), w))
        return
    raise AssertionError("no %s raised (want %r)" % (exc.__name__, want))


out = {}
# Two turns of one conversation, reward with metrics.
t1 = hone_proxy.Trajectory(group="g1", id="t1", base_url=base)
assert t1.headers == {"X-Hone-Trajectory": "t1", "X-Hone-Group": "g1"}, t1.headers
msgs = [{"role": "user", "content": "hi"}]
first = chat(t1.headers, msgs)
msgs += [{"role": "assistant", "content": first}, {"role": "user", "content": "again"}]
out["t1"] = [first, chat(t1.headers, msgs)]
t1.reward(0.5, metrics={"turns": 2})

# A random id from $OPENAI_BASE_URL, rewarded from asyncio.
t2 = hone_proxy.Trajectory(group="g1")
assert len(t2.id) == 32 and t2.group == "g1", (t2.id, t2.group)
chat(t2.headers, [{"role": "user", "content": "hello"}])
asyncio.run(t2.areward(1))
out["t2"] = t2.id

# Never rewarded: written as "not closed".
t3 = hone_proxy.Trajectory(group="g1", id="t3", base_url=base)
chat(t3.headers, [{"role": "user", "content": "hey"}])

# Refusals: the proxy's message, before or without sending.
expect(hone_proxy.HoneProxyError, lambda: hone_proxy.Trajectory(id="nobody", base_url=base).reward(1), "HTTP 404", 'no open trajectory "nobody"')
expect(ValueError, lambda: hone_proxy.Trajectory(id="a/b"), "'a/b'", "'/'")
expect(ValueError, lambda: hone_proxy.Trajectory(group="has space"), "group id")
expect(ValueError, lambda: t3.reward(float("nan")), "finite")
expect(ValueError, lambda: t3.reward(1, metrics={"x": "many"}), "metric x", "want a number")
assert hone_proxy.proxy_url(base) == hone_proxy.proxy_url(base + "/") == base[: -len("/v1")]

t1.close_group()
expect(hone_proxy.HoneProxyError, t1.close_group, "HTTP 404", "no open group")
try:
    chat(t1.headers, [{"role": "user", "content": "late"}])
    raise AssertionError("a request to a written group was accepted")
except urllib.error.HTTPError as e:
    assert e.code == 409, e.code

# A group closed from asyncio by name.
t4 = hone_proxy.Trajectory(group="g2", id="t4", base_url=base)
chat(t4.headers, [{"role": "user", "content": "yo"}])
t4.reward(None, error="tool crashed")
asyncio.run(hone_proxy.aclose_group("g2", base_url=base))

expect(hone_proxy.HoneProxyError, lambda: hone_proxy.close_group("g3", base_url="http://127.0.0.1:1/v1"), "is hone-collect proxy running")
print(json.dumps(out))
