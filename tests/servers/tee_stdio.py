"""A byte-exact stdio tap for tests: runs COMMAND, passes stdin/stdout through
unchanged, and appends every chunk to LOG_DIR/in (what the server received) and
LOG_DIR/out (what it sent). Lets a test compare what a server saw with and
without mcpscope proxy in between.

    python3 tests/servers/tee_stdio.py LOG_DIR -- COMMAND [ARGS...]
"""

import os
import subprocess
import sys
import threading


def pump(src, dst, log_path):
    with open(log_path, "ab", buffering=0) as log:
        while True:
            chunk = os.read(src, 65536)
            if not chunk:
                break
            log.write(chunk)
            try:
                os.write(dst, chunk)
            except OSError:
                break


def main():
    log_dir = sys.argv[1]
    assert sys.argv[2] == "--"
    cmd = sys.argv[3:]
    os.makedirs(log_dir, exist_ok=True)
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    t_in = threading.Thread(target=lambda: (pump(0, child.stdin.fileno(), os.path.join(log_dir, "in")), child.stdin.close()))
    t_out = threading.Thread(target=pump, args=(child.stdout.fileno(), 1, os.path.join(log_dir, "out")))
    t_in.daemon = True
    t_in.start()
    t_out.start()
    t_out.join()
    sys.exit(child.wait())


main()
