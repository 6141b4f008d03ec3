"""A stdio MCP server (plain Python, no SDK) that floods its client and pings it, for
mcpscope's test of an owner that keeps serving while its window draws nothing.

    python3 tests/servers/flood_server.py REPORT.json [SECONDS] [PER_SECOND]

After the initialize handshake it writes `notifications/message` at PER_SECOND (default
5000) for SECONDS (default 10) and, on a fixed timetable of one every 100 ms, a `ping`
request. A reader thread matches the client's answers. When the flood is over (and 3 s
more for the last answers) it writes REPORT.json: how many notifications it wrote, how
many pings it sent, how many were answered within 5 s of their scheduled time, and the
slowest answer in ms, measured from when the ping was due (a stdout that blocks delays
the pings too). Then it answers ping until stdin closes.
"""

import json
import sys
import threading
import time

report_path = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
per_second = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
out_lock = threading.Lock()
due = {}
answered = {}
started = threading.Event()


def write(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def flood():
    started.wait()
    start = time.monotonic()
    written = 0
    pings = 0
    step = 0.01
    while True:
        now = time.monotonic()
        elapsed = now - start
        if elapsed >= seconds:
            break
        # The pings keep their timetable whatever the writes cost.
        while pings * 0.1 <= elapsed:
            ping_id = f"ping-{pings}"
            due[ping_id] = start + pings * 0.1
            write({"jsonrpc": "2.0", "id": ping_id, "method": "ping"})
            pings += 1
        target = int(elapsed * per_second)
        while written < target:
            write({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "logger": "flood", "data": f"line {written} of the flood"}})
            written += 1
        time.sleep(step)
    time.sleep(3.0)
    late = [k for k, t in due.items() if k not in answered or answered[k] - t > 5.0]
    slowest = max((answered[k] - t for k, t in due.items() if k in answered), default=0.0)
    with open(report_path + ".tmp", "w") as f:
        json.dump({"notifications": written, "pings": pings, "answered": pings - len(late),
                   "slowest_ms": round(slowest * 1000)}, f)
    import os
    os.replace(report_path + ".tmp", report_path)


def main():
    threading.Thread(target=flood, daemon=True).start()
    for raw in sys.stdin:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method = msg.get("method")
        if method == "initialize":
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-11-25"),
                "capabilities": {"logging": {}},
                "serverInfo": {"name": "flood-server", "version": "1"}}})
        elif method == "notifications/initialized":
            started.set()
        elif method == "ping" and "id" in msg:
            write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
        elif method is None and "id" in msg:
            answered.setdefault(msg["id"], time.monotonic())
        elif "id" in msg:
            write({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not here"}})


main()
