"""Runs docs/proxy.md's rollout example: argv[1] is the block's code. It is
executed as written, then its rollout() is called for one scenario with a
score() of ours (the page leaves scoring to the agent), and prints the
group id it used."""
import asyncio
import sys
import types

ns = {"__name__": "doc_example"}
exec(compile(open(sys.argv[1]).read(), "docs/proxy.md", "exec"), ns)
ns["score"] = lambda scenario, message: 0.5
scenario = types.SimpleNamespace(id="s1", question="What is 2+3?")
asyncio.run(ns["rollout"](scenario, 1))
print("s1-s1")
