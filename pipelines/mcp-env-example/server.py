#!/usr/bin/env python3
"""A small MCP server for trying `hone-collect --env mcp`: facts about a few
countries, behind two tools (`capital` and `population`).

It speaks the Model Context Protocol over stdio (JSON-RPC 2.0, one message
per line) with the standard library only, and implements just what a client
that calls tools needs: initialize, tools/list and tools/call. Any MCP
server works the same way; see docs/mcp-env.md.
"""
import json
import sys

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi", "peru": "Lima"}
POPULATION = {"paris": "2.1", "tokyo": "14.0", "nairobi": "4.4", "lima": "10.1"}

TOOLS = [
    {
        "name": "capital",
        "description": "The capital city of a country.",
        "inputSchema": {
            "type": "object",
            "properties": {"country": {"type": "string"}},
            "required": ["country"],
        },
    },
    {
        "name": "population",
        "description": "A city's population, in millions.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
]
VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


class RPCError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def call_tool(name, args):
    """Returns (text, is_error): a tool error is feedback for the model."""
    table, key = {"capital": (CAPITALS, "country"), "population": (POPULATION, "city")}.get(name, (None, None))
    if table is None:
        raise RPCError(-32602, "unknown tool %r" % name)
    value = table.get(str(args.get(key, "")).strip().lower())
    if value is None:
        return "no data for %s %r" % (key, args.get(key)), True
    return value, False


def handle(method, params):
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "countries", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text, is_error = call_tool(params["name"], params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}], "isError": is_error}
    if method == "ping":
        return {}
    raise RPCError(-32601, "method %r not supported" % method)


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue  # a notification (notifications/initialized, ...)
        try:
            resp = {"jsonrpc": "2.0", "id": msg["id"], "result": handle(msg.get("method"), msg.get("params") or {})}
        except RPCError as e:
            resp = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": e.code, "message": str(e)}}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
