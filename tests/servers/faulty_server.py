#!/usr/bin/env python3
"""A deliberately misbehaving MCP stdio server for mcpscope's tests (stdlib only).

    python3 tests/servers/faulty_server.py --mode MODE [options]

Baseline behaviour (mode `normal`, and every mode unless it says otherwise):
  * reads newline-delimited JSON-RPC from stdin, writes one compact JSON object per
    line to stdout (sys.stdout.buffer.write + flush), diagnostics to stderr;
  * `initialize` -> {"protocolVersion": <the offered version>, "capabilities": {"tools": {}},
    "serverInfo": {"name": "faulty", "version": "1.0"}};
  * `ping` -> {};  `tools/list` -> one tool `echo`;
  * `tools/call` echo -> {"content": [{"type": "text", "text": <message>}]};
    a tools/call for another tool -> error -32602 "Unknown tool: NAME";
  * any other request -> error -32601 "Method not found";
  * unparseable input line -> error -32700 with id null;
  * the handshake is NOT enforced (tools/list is answered even before initialize);
  * exits 0 on stdin EOF.

Modes: normal stdout-log invalid-utf8 not-jsonrpc bad-jsonrpc crlf partial-eof big-line crash
hang no-read out-of-order counter-offer bogus-version enforce tool-error ping grandchild
flood stderr-flood paginate.  See tests/servers/README.md for what each one does exactly.
"""

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback

MODES = [
    "normal", "stdout-log", "invalid-utf8", "not-jsonrpc", "bad-jsonrpc", "crlf", "partial-eof",
    "big-line", "crash", "crash-on-call", "hang", "no-read", "out-of-order", "counter-offer", "bogus-version",
    "enforce", "tool-error", "ping", "grandchild", "flood", "stderr-flood", "paginate",
]

ECHO_TOOL = {
    "name": "echo",
    "description": "Echo the message back",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}

OUT = sys.stdout.buffer
EOL = b"\n"


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def write_raw(data):
    try:
        OUT.write(data)
        OUT.flush()
    except BrokenPipeError:
        log("stdout closed by peer (EPIPE); exiting 1")
        os._exit(1)


def send(obj):
    write_raw(dumps(obj) + EOL)


def log(msg):
    try:
        sys.stderr.write(f"faulty[{ARGS.mode}]: {msg}\n")
        sys.stderr.flush()
    except Exception:
        pass


def result(id_, res):
    return {"jsonrpc": "2.0", "id": id_, "result": res}


def error(id_, code, message):
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def log_notification(text, logger="faulty"):
    return {"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "logger": logger, "data": text}}


def flood_blob(count):
    tmpl = ('{"jsonrpc":"2.0","method":"notifications/message","params":'
            '{"level":"info","logger":"flood","data":"flood line %d"}}\n')
    return "".join(tmpl % i for i in range(count)).encode("ascii")


class Server:
    def __init__(self, args):
        self.args = args
        self.mode = args.mode
        self.initialized = False  # notifications/initialized seen
        self.pending = []  # out-of-order: deferred tools/call requests
        self.deadline = None
        self.server_req = 0  # out-of-order: s1, s2, ...
        self.ping_answered = False

    # ------------------------------------------------------------ replies --
    def init_result(self, params):
        offered = (params or {}).get("protocolVersion", "2025-11-25")
        version = {"counter-offer": "2024-11-05", "bogus-version": "1999-01-01"}.get(self.mode, offered)
        return {"protocolVersion": version, "capabilities": {"tools": {}},
                "serverInfo": {"name": "faulty", "version": "1.0"}}

    def tools_call(self, id_, params):
        params = params or {}
        name = params.get("name")
        if name != "echo":
            return error(id_, -32602, f"Unknown tool: {name}")
        if self.mode == "tool-error":
            return result(id_, {"content": [{"type": "text", "text": "boom"}], "isError": True})
        if self.mode == "big-line":
            return result(id_, {"content": [{"type": "text", "text": "x" * 5_000_000}]})
        message = (params.get("arguments") or {}).get("message", "")
        return result(id_, {"content": [{"type": "text", "text": str(message)}]})

    def decorate(self):
        """out-of-order: a notification and a server->client request before a response."""
        self.server_req += 1
        send(log_notification(f"about to respond (s{self.server_req})"))
        send({"jsonrpc": "2.0", "id": f"s{self.server_req}", "method": "roots/list"})

    def flush_pending(self):
        if not self.pending:
            return
        batch, self.pending, self.deadline = self.pending, [], None
        responses = []
        for id_, params in reversed(batch):
            resp = self.tools_call(id_, params)
            self.decorate()
            send(resp)
            responses.append(resp)
        send(result(999, {"content": [{"type": "text", "text": "response to an id nobody asked for"}]}))
        send(responses[0])  # duplicate of the first response of this batch

    # ----------------------------------------------------------- dispatch --
    def handle(self, msg):
        if not isinstance(msg, dict):
            send(error(None, -32600, "Invalid Request: batches are not supported"))
            return
        method = msg.get("method")
        has_id = "id" in msg
        id_ = msg.get("id")
        params = msg.get("params")

        if method is None:  # a response to one of our requests
            self.on_response(msg)
            return
        if not has_id:  # notification
            if method == "notifications/initialized":
                self.initialized = True
                if self.mode == "ping":
                    send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
                    log("sent ping request id p1")
            return

        # request
        if self.mode == "hang" and method != "initialize":
            log(f"hang: ignoring {method} id={id_!r}")
            return
        if self.mode == "enforce" and not self.initialized and method not in ("initialize", "ping"):
            send(error(id_, -32600, "Server not initialized"))
            return
        if method == "initialize":
            send(result(id_, self.init_result(params)))
            self.after_initialize()
        elif method == "ping":
            send(result(id_, {}))
        elif method == "tools/list":
            if self.mode == "crash":
                try:
                    raise RuntimeError("simulated crash while listing tools")
                except RuntimeError:
                    traceback.print_exc()
                sys.stderr.flush()
                os._exit(3)
            if self.mode == "partial-eof":
                write_raw(b'{"jsonrpc":"2.0","id":' + dumps(id_) + b',"res')
                os._exit(0)
            if self.mode == "bad-jsonrpc":
                send({"jsonrpc": "2.0", "id": id_, "result": {"tools": [ECHO_TOOL]},
                      "error": {"code": -32603, "message": "both result and error"}})
                return
            if self.mode == "out-of-order":
                self.decorate()
            if self.mode == "paginate":
                # Five tools, two per page: cursors "2" and "4", then no nextCursor.
                start = int((params or {}).get("cursor") or 0)
                tools = [dict(ECHO_TOOL, name=f"echo{i}") for i in range(start, min(start + 2, 5))]
                page = {"tools": tools}
                if start + 2 < 5:
                    page["nextCursor"] = str(start + 2)
                send(result(id_, page))
                return
            send(result(id_, {"tools": [ECHO_TOOL]}))
        elif method == "tools/call":
            if self.mode == "crash-on-call":
                log(f"crash-on-call: exiting with status 7 before answering id={id_!r}")
                sys.stderr.flush()
                os._exit(7)
            if self.mode == "out-of-order":
                self.pending.append((id_, params))
                if self.deadline is None:
                    self.deadline = time.monotonic() + 0.3
                return
            send(self.tools_call(id_, params))
        else:
            send(error(id_, -32601, "Method not found"))

    def after_initialize(self):
        if self.mode == "invalid-utf8":
            write_raw(b"\xff\xfe not utf8" + EOL)
        elif self.mode == "not-jsonrpc":
            write_raw(b'{"hello":"world"}' + EOL + b"[1,2]" + EOL + b"42" + EOL)
        elif self.mode == "bad-jsonrpc":
            note = {"level": "info", "logger": "faulty", "data": None}
            send({"method": "notifications/message", "params": dict(note, data="no jsonrpc member")})
            send({"jsonrpc": "1.0", "method": "notifications/message", "params": dict(note, data="jsonrpc 1.0")})
            send({"jsonrpc": "2.0", "method": "notifications/message", "id": 7,
                  "params": dict(note, data="notification carrying an id")})
            send([log_notification("batch item 1"), log_notification("batch item 2")])

    def on_response(self, msg):
        id_ = msg.get("id")
        if self.mode == "ping":
            if id_ == "p1" and "result" in msg:
                self.ping_answered = True
                log("ping response: ok (matching id p1)")
            elif id_ == "p1":
                log(f"ping response: error reply for p1: {json.dumps(msg.get('error'))}")
            else:
                log(f"ping response: MISMATCH (got id {id_!r}, want 'p1')")
            return
        log(f"got client response id={id_!r}")

    # --------------------------------------------------------------- loop --
    def run(self):
        buf = b""
        fd = sys.stdin.fileno()
        while True:
            timeout = None
            if self.deadline is not None:
                timeout = max(0.0, self.deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                self.flush_pending()
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.strip()
                if not line:
                    continue
                try:
                    msg = json.loads(line)
                except ValueError as e:
                    send(error(None, -32700, f"Parse error: {e}"))
                    continue
                self.handle(msg)
        # stdin EOF
        if self.deadline is not None:
            time.sleep(max(0.0, self.deadline - time.monotonic()))
            self.flush_pending()
        if self.mode == "ping" and not self.ping_answered:
            log("ping response: none received before stdin EOF")
        if self.mode == "hang":
            log("stdin EOF ignored; sleeping forever (SIGTERM is ignored too)")
            while True:
                time.sleep(3600)
        log("stdin EOF; exiting 0")


def main():
    global ARGS, EOL
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=MODES, default="normal")
    ap.add_argument("--count", type=int, default=None,
                    help="flood: notification lines (default 200000); stderr-flood: stderr lines (default 10000)")
    ap.add_argument("--flood-only", action="store_true",
                    help="flood: write the blob to stdout and exit 0 without reading stdin")
    ap.add_argument("--emit-file", metavar="PATH",
                    help="flood: write the exact blob to PATH instead of stdout and exit 0")
    ap.add_argument("--pid-file", metavar="PATH", help="grandchild: also write the grandchild's pid to PATH")
    ap.add_argument("--grandchild-devnull", action="store_true",
                    help="grandchild: give the grandchild /dev/null stdout/stderr instead of inheriting the pipes")
    ap.add_argument("--grandchild-ignores-term", action="store_true",
                    help="grandchild: the grandchild ignores SIGTERM (only SIGKILL ends it)")
    ARGS = ap.parse_args()
    mode = ARGS.mode

    if mode == "crlf":
        EOL = b"\r\n"

    if mode == "stdout-log":
        write_raw(b"Server started on stdio\n")

    if mode == "flood":
        blob = flood_blob(200_000 if ARGS.count is None else ARGS.count)
        if ARGS.emit_file:
            with open(ARGS.emit_file, "wb") as f:
                f.write(blob)
            return 0
        write_raw(blob)
        if ARGS.flood_only:
            return 0

    if mode == "stderr-flood":
        n = 10_000 if ARGS.count is None else ARGS.count
        sys.stderr.buffer.write(b"".join(b"stderr flood line %d\n" % i for i in range(n)))
        sys.stderr.flush()

    if mode == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    if mode == "no-read":
        log("never reading stdin; sleeping until SIGTERM")
        while True:
            time.sleep(3600)

    if mode == "grandchild":
        out = subprocess.DEVNULL if ARGS.grandchild_devnull else None
        # An ignored signal stays ignored across exec: `sleep` inherits SIG_IGN.
        ignore_term = (lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if ARGS.grandchild_ignores_term else None
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                 preexec_fn=ignore_term)
        log(f"grandchild pid {child.pid}")
        if ARGS.pid_file:
            with open(ARGS.pid_file, "w") as f:
                f.write(f"{child.pid}\n")

    Server(ARGS).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
