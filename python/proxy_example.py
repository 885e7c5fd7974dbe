#!/usr/bin/env python3
"""A small agent recorded by `hone-collect proxy` (see docs/proxy.md).

It plays one group of attempts at a question, up to two turns each: a wrong
answer gets "Not quite, try again." The reward is 1 for a right answer.
Standard library only: the chat call is plain HTTP here, where your agent
would use the openai client with extra_headers=t.headers.

    OPENAI_BASE_URL=http://127.0.0.1:8100/v1 python3 python/proxy_example.py --model tiny --group q1
"""
import argparse
import json
import os
import urllib.error
import urllib.request

import hone_proxy

QUESTION, ANSWER = "What is 2+3? Answer with the number only.", "5"


def chat(model, messages, headers, max_tokens):
    """One chat completion through the proxy; returns the assistant message."""
    url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
    body = json.dumps({"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 1}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return json.load(resp)["choices"][0]["message"]
    except urllib.error.HTTPError as e:
        # urllib's own message is the status alone; the server's body says
        # what is wrong (a model it does not have, a refused key).
        body = e.read().decode("utf-8", "replace").strip()
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        raise SystemExit("proxy_example: HTTP %d from %s: %s" % (e.code, url, body)) from None


def attempt(model, group, i, max_tokens):
    t = hone_proxy.Trajectory(group=group, id="%s-a%d" % (group, i))
    messages = [{"role": "user", "content": QUESTION}]
    for turn in (1, 2):
        reply = chat(model, messages, t.headers, max_tokens)
        messages.append({"role": "assistant", "content": reply.get("content") or ""})
        right = ANSWER in (reply.get("content") or "")
        if right or turn == 2:
            break
        messages.append({"role": "user", "content": "Not quite, try again."})
    t.reward(1.0 if right else 0.0, metrics={"turns": turn})
    print("%s: reward %d after %d turn(s)" % (t.id, right, turn))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--group", required=True, help="group id: one per scenario and round")
    ap.add_argument("--attempts", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=16)
    a = ap.parse_args()
    for i in range(a.attempts):
        attempt(a.model, a.group, i, a.max_tokens)


if __name__ == "__main__":
    main()
