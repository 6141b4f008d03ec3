"""A small 2026-07-28 server (standard library only) that runs a tool as a
task in the `io.modelcontextprotocol/tasks` extension form, for mcpscope's
tests: no real SDK serves that extension yet.

* `server/discover`: modern only, advertises tools and the tasks extension.
* `tools/call slow_sum {a, b}`: answers `resultType: "task"` (status working,
  pollIntervalMs 100); each `tasks/get` advances it; the third one reports
  `completed` with the tool result inlined.
* `tasks/cancel`: the task becomes `cancelled`.
* Anything without the `_meta` protocol version is refused with -32602.

Run: python3 tests/servers/modern_tasks_server.py
"""

import json
import sys

VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
TASKS = "io.modelcontextprotocol/tasks"
tasks = {}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(id_, res):
    res.setdefault("resultType", "complete")
    send({"jsonrpc": "2.0", "id": id_, "result": res})


def error(id_, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": id_, "error": err})


def task_view(t):
    view = {"taskId": t["id"], "status": t["status"], "pollIntervalMs": 100, "ttlMs": 60000}
    if t["status"] == "working":
        view["statusMessage"] = f"step {t['polls']} of 3"
    if t["status"] == "completed":
        view["result"] = {"content": [{"type": "text", "text": f"sum is {t['a'] + t['b']}"}],
                          "structuredContent": {"sum": t["a"] + t["b"]}, "resultType": "complete"}
    return view


def handle(msg):
    id_, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
    if id_ is None:
        return  # notifications need no answer
    version = (params.get("_meta") or {}).get(META_VERSION)
    if version is None:
        return error(id_, -32602, "missing _meta protocolVersion (this server speaks only 2026-07-28)")
    if version != VERSION:
        return error(id_, -32022, "Unsupported protocol version", {"supported": [VERSION], "requested": version})
    if method == "server/discover":
        return result(id_, {"supportedVersions": [VERSION],
                            "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
                            "ttlMs": 0, "cacheScope": "private",
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-tasks", "version": "1.0"}}})
    if method == "tools/list":
        return result(id_, {"tools": [{"name": "slow_sum", "description": "Adds two integers, slowly, as a task",
                                        "inputSchema": {"type": "object",
                                                        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                                        "required": ["a", "b"]}}],
                            "ttlMs": 0, "cacheScope": "private"})
    if method == "tools/call":
        if params.get("name") != "slow_sum":
            return error(id_, -32602, f"Unknown tool: {params.get('name')}")
        args = params.get("arguments") or {}
        t = {"id": f"task-{len(tasks) + 1}", "status": "working", "polls": 0,
             "a": int(args.get("a", 0)), "b": int(args.get("b", 0))}
        tasks[t["id"]] = t
        view = task_view(t)
        view["resultType"] = "task"
        return send({"jsonrpc": "2.0", "id": id_, "result": view})
    if method in ("tasks/get", "tasks/cancel"):
        t = tasks.get(params.get("taskId"))
        if t is None:
            return error(id_, -32602, "unknown task")
        if method == "tasks/cancel" and t["status"] == "working":
            t["status"] = "cancelled"
        elif method == "tasks/get" and t["status"] == "working":
            t["polls"] += 1
            if t["polls"] >= 3:
                t["status"] = "completed"
        return result(id_, task_view(t))
    error(id_, -32601, f"Method not found: {method}")


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    try:
        handle(json.loads(line))
    except Exception as e:  # a test server: say what went wrong, keep serving
        print(f"modern_tasks_server: {e!r}", file=sys.stderr)
