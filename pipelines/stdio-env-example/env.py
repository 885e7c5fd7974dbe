#!/usr/bin/env python3
"""Example Hone stdio environment: arithmetic with a calculator tool.

It speaks hone-collect's JSON-lines protocol (see collect/env/stdio/doc.go):
one request object per line on stdin, one response object per line on
stdout. Standard library only.

    hone-collect --env stdio --env-opt cmd='python3 pipelines/stdio-env-example/env.py' \
        --groups 8 -G 4 --policy scripted -o arith.parquet
"""
import json
import random
import re
import sys

TOOLS = [{
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an integer expression with + - * and parentheses.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}]
MAX_TURNS = 4


def evaluate(expr):
    """Evaluate + - * ( ) over integers without eval()."""
    tokens = re.findall(r"\d+|[-+*()]", expr)
    if "".join(tokens) != re.sub(r"\s+", "", expr):
        raise ValueError("unsupported characters in %r" % expr)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def atom():
        t = take() if peek() is not None else None
        if t == "(":
            v = expr_()
            if take() != ")":
                raise ValueError("missing )")
            return v
        if t == "-":
            return -atom()
        if t is None or not t.isdigit():
            raise ValueError("expected a number")
        return int(t)

    def term():
        v = atom()
        while peek() == "*":
            take()
            v *= atom()
        return v

    def expr_():
        v = term()
        while peek() in ("+", "-"):
            v = v + term() if take() == "+" else v - term()
        return v

    v = expr_()
    if pos != len(tokens):
        raise ValueError("trailing input")
    return v


class Episode:
    def __init__(self, scenario):
        p = scenario.get("payload") or {}
        self.a, self.b, self.c = int(p["a"]), int(p["b"]), int(p["c"])
        self.turns = 0
        self.calls = 0
        self.correct = False

    def reset(self):
        q = "Compute %d*%d+%d. Use the calculator, then answer with the number only." % (self.a, self.b, self.c)
        return {"messages": [{"role": "user", "content": q}], "tools": TOOLS}

    def outcome(self, done):
        return {"done": done, "reward": 1.0 if self.correct else 0.0,
                "metrics": {"correct": float(self.correct), "calculator_calls": float(self.calls)}}

    def step(self, message, calls):
        self.turns += 1
        out = []
        if message.get("tool_calls"):
            good = set(calls)
            for c in message["tool_calls"]:
                if c["id"] not in good:
                    continue  # hone-collect answers malformed calls itself
                self.calls += 1
                try:
                    args = json.loads(c["function"]["arguments"])
                    result = str(evaluate(args["expression"]))
                except (ValueError, KeyError, TypeError) as e:
                    result = "error: %s" % e
                out.append({"role": "tool", "tool_call_id": c["id"], "content": result})
            r = self.outcome(self.turns >= MAX_TURNS)
            r["messages"] = out
            return r
        text = (message.get("content") or "").strip()
        self.correct = text == str(self.a * self.b + self.c)
        r = self.outcome(True)
        r["messages"] = []
        return r


def scenarios(seed, n, split):
    """The seed makes the problems; a held-out run asks for its split with a seed of its own."""
    rng = random.Random(seed)
    return [{"id": "arith-%d-%d" % (seed, i), "split": split,
             "payload": {"a": rng.randint(2, 99), "b": rng.randint(2, 99), "c": rng.randint(0, 999)}}
            for i in range(n)]


def act(policy, messages):
    """Scripted policies: 'calculator' uses the tool, 'mental' guesses a*b."""
    a, b, c = map(int, re.findall(r"Compute (\d+)\*(\d+)\+(\d+)", messages[0]["content"])[0])
    last = messages[-1]
    if policy == "mental":
        return {"role": "assistant", "content": str(a * b)}
    if last["role"] == "tool" and not last["content"].startswith("error"):
        return {"role": "assistant", "content": last["content"]}
    n = sum(1 for m in messages if m["role"] == "assistant")
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call_%d" % n, "type": "function",
        "function": {"name": "calculator", "arguments": json.dumps({"expression": "%d*%d+%d" % (a, b, c)})}}]}


def main():
    episode = None
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "hello":
                resp = {"name": "arith", "reward_range": [0, 1], "policies": ["calculator", "mental"]}
            elif op == "scenarios":
                resp = {"scenarios": scenarios(req["seed"], req["n"], req.get("split", "train"))}
            elif op == "reset":
                episode = Episode(req["scenario"])
                resp = episode.reset()
            elif op == "step":
                if episode is None:
                    raise ValueError("step before reset")
                resp = episode.step(req["message"], req.get("calls", []))
            elif op == "act":
                if req.get("policy") not in ("calculator", "mental"):
                    raise ValueError("unknown policy %r" % req.get("policy"))
                resp = {"message": act(req["policy"], req["messages"])}
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # every failure is reported, never a crash
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
