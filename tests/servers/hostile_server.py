#!/usr/bin/env python3
"""A stdio MCP server (standard library only) that attacks its client's
robustness rather than its protocol logic. Each --mode is one hostile habit:

  grandchild          start a grandchild (its pid in --pid-file), answer
                      initialize, then never answer anything else; with
                      --grandchild-ignores-term the grandchild ignores SIGTERM;
                      with --grandchild-setsid it daemonises out of the group
  no-newline          when initialize arrives, first write --bytes bytes of
                      "x" with no newline, then a newline and the answer;
                      then serve normally (the client must cap the line and go on)
  endless-no-newline  write "x" forever, never a newline
  endless-stderr      write stderr lines forever (--bytes per line; with
                      --no-newline, one endless line); answer initialize
                      and nothing else
  huge-answer         answer tools/list with one valid line of about --bytes
                      bytes (the id first, or last with --id-last)
  exit-at-once        write a fatal message to stderr and exit 3 at once
  interleave          write --count notifications to stdout and as many
                      lines to stderr, alternating, then serve normally
  unreadable          tools/call answers a result serde cannot read as a
                      value: params.name "deep" (10,000 levels), "big"
                      (1e400), "surrogate" (a lone \ud800)
  escapes             terminal escape sequences everywhere a client may
                      print them: stderr lines, a JSON-RPC error message (to
                      anything but initialize, tools/list and ping)

It answers initialize (2025-11-25), notifications are ignored, tools/list
returns one tool, ping is answered, anything else gets -32601.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

OUT = sys.stdout.buffer


def write_line(obj):
    OUT.write(json.dumps(obj).encode() + b"\n")
    OUT.flush()


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


# Retitles the terminal, clears it, and moves the cursor (CSI in C1 form too).
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[H\u009b31m"


def init_result(msg_id):
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        },
    }


def start_grandchild(args):
    code = "import os, signal, time\n"
    if args.grandchild_ignores_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    if args.grandchild_setsid:
        # A daemon: double fork, its own session (out of the process group),
        # its parent gone; it writes its own pid.
        code += "if os.fork():\n    os._exit(0)\nos.setsid()\nif os.fork():\n    os._exit(0)\n"
        if args.pid_file:
            code += (f"open({args.pid_file + '.tmp'!r}, 'w').write(str(os.getpid()))\n"
                     f"os.rename({args.pid_file + '.tmp'!r}, {args.pid_file!r})\n")
    code += "while True:\n    time.sleep(1)\n"
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if args.grandchild_setsid:
        child.wait()  # the first fork exits at once; the daemon is not our child
        log("daemon started")
        return
    if args.pid_file:
        tmp = args.pid_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{child.pid}\n")
        os.rename(tmp, args.pid_file)
    log(f"grandchild pid {child.pid}")


def endless_stderr(args):
    line = b"e" * max(args.bytes, 1)
    err = sys.stderr.buffer
    try:
        while True:
            err.write(line if args.no_newline else line + b"\n")
    except (BrokenPipeError, OSError):
        pass


def serve(args):
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method = msg.get("method")
        msg_id = msg.get("id")
        if msg_id is None:
            continue  # a notification
        if method == "initialize":
            if args.mode == "no-newline":
                chunk = b"x" * 65536
                left = args.bytes
                while left > 0:
                    OUT.write(chunk[: min(left, len(chunk))])
                    left -= len(chunk)
                OUT.write(b"\n")
            write_line(init_result(msg_id))
        elif args.mode in ("grandchild", "endless-stderr"):
            continue  # never answered: the client waits
        elif args.mode == "huge-answer" and method == "tools/list":
            pad = b"y" * 65536
            head = b'{"jsonrpc":"2.0",' + (b"" if args.id_last else b'"id":%s,' % json.dumps(msg_id).encode())
            OUT.write(head + b'"result":{"tools":[],"pad":"')
            left = args.bytes
            while left > 0:
                OUT.write(pad[: min(left, len(pad))])
                left -= len(pad)
            tail = b'"}' + (b',"id":%s}' % json.dumps(msg_id).encode() if args.id_last else b"}")
            OUT.write(tail + b"\n")
            OUT.flush()
        elif method == "tools/list":
            write_line({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": [
                {"name": "echo", "inputSchema": {"type": "object"}}]}})
        elif method == "ping":
            write_line({"jsonrpc": "2.0", "id": msg_id, "result": {}})
        elif args.mode == "unreadable" and method == "tools/call":
            name = (msg.get("params") or {}).get("name")
            inner = {
                "deep": "[" * 10000 + "]" * 10000,
                "big": '{"n":1e400}',
                "surrogate": '{"s":"\\ud800"}',
            }[name]
            OUT.write(('{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (json.dumps(msg_id), inner)).encode())
            OUT.flush()
        elif args.mode == "escapes":
            log("stderr says " + ESCAPES + " hello")
            write_line({"jsonrpc": "2.0", "id": msg_id,
                        "error": {"code": -32000, "message": "failed " + ESCAPES + "badly"}})
        else:
            write_line({"jsonrpc": "2.0", "id": msg_id,
                        "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", required=True, choices=[
        "grandchild", "no-newline", "endless-no-newline", "endless-stderr", "huge-answer", "exit-at-once", "interleave", "escapes", "unreadable"])
    ap.add_argument("--pid-file", help="grandchild: write the grandchild's pid here")
    ap.add_argument("--grandchild-ignores-term", action="store_true")
    ap.add_argument("--grandchild-setsid", action="store_true",
                    help="grandchild: daemonise (double fork, setsid), out of the process group")
    ap.add_argument("--bytes", type=int, default=5 * 1024 * 1024, help="no-newline: bytes before the newline")
    ap.add_argument("--no-newline", action="store_true", help="endless-stderr: never a newline")
    ap.add_argument("--id-last", action="store_true", help="huge-answer: the id after the result")
    ap.add_argument("--count", type=int, default=2000, help="interleave: lines on each stream")
    args = ap.parse_args()

    if args.mode == "exit-at-once":
        log("fatal: HOSTILE_CONFIG is not set; refusing to start")
        return 3
    if args.mode == "endless-no-newline":
        chunk = b"x" * 65536
        try:
            while True:
                OUT.write(chunk)
        except BrokenPipeError:
            return 0
    if args.mode == "endless-stderr":
        threading.Thread(target=endless_stderr, args=(args,), daemon=True).start()
    if args.mode == "grandchild":
        start_grandchild(args)
    if args.mode == "escapes":
        log("starting " + ESCAPES + " now")
    if args.mode == "interleave":
        for i in range(args.count):
            OUT.write(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}\n' % i)
            OUT.flush()
            sys.stderr.write("stderr line %d\n" % i)
            sys.stderr.flush()
    serve(args)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
