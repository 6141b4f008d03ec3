"""A test OpenTelemetry collector: OTLP/HTTP JSON on 127.0.0.1, each export
decoded with the official protos (otlp_check.decode) and reported on stdout
as one JSON line: {"path", "problems", "spans": [{"name", "kind", "attributes"}]}.
Prints {"port": N} first. MODE=refuse answers 400; MODE=busy answers the first
export 503 with Retry-After: 0, then as usual."""
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from google.protobuf import json_format

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_check import decode

MODE = os.environ.get("MODE", "")
seen = {"n": 0}


class Collector(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        seen["n"] += 1
        if MODE == "refuse":
            return self.answer(400, b"bad traces")
        if MODE == "busy" and seen["n"] == 1:
            self.send_response(503)
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        msg, problems = decode(json.loads(body), self.path)
        spans = []
        if msg is not None:
            for rs in msg.resource_spans:
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        attrs = {a.key: json_format.MessageToDict(a.value) for a in s.attributes}
                        spans.append({"name": s.name, "kind": s.kind, "attributes": attrs,
                                      "status": s.status.code, "events": [e.name for e in s.events]})
        print(json.dumps({"path": self.path, "type": self.headers.get("Content-Type"),
                          "problems": problems, "spans": spans}), flush=True)
        self.answer(200, b'{"partialSuccess":{}}')

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = HTTPServer(("127.0.0.1", 0), Collector)
print(json.dumps({"port": server.server_address[1]}), flush=True)
server.serve_forever()
