"""A test OpenTelemetry collector: OTLP/HTTP JSON on 127.0.0.1, each export
decoded with the official protos (otlp_check.decode) and reported on stdout
as one JSON line: {"path", "problems", "spans": [{"name", "kind", "attributes"}]}.
Prints {"port": N} first. MODE=refuse answers 400; MODE=busy answers the first
export 503 with Retry-After: 0, then as usual; MODE=partial reports one span
rejected. A protobuf body (application/x-protobuf) is parsed with the official
classes and must re-encode to the very same bytes; the answer is protobuf too."""
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from google.protobuf import json_format

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_check import decode
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse)

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
        protobuf = self.headers.get("Content-Type") == "application/x-protobuf"
        if protobuf:
            msg, problems = None, []
            try:
                msg = ExportTraceServiceRequest.FromString(body)
                # Strict: what the official code writes back must be the very
                # bytes sent (no unknown fields, nothing out of place).
                if msg.SerializeToString(deterministic=True) != body:
                    problems.append(f"{self.path}: the protobuf body is not canonical")
            except Exception as e:
                problems.append(f"{self.path}: {e}")
        else:
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
        if protobuf:
            resp = ExportTraceServiceResponse()
            if MODE == "partial":
                resp.partial_success.rejected_spans = 1
                resp.partial_success.error_message = "one span was bad"
            return self.answer(200, resp.SerializeToString(), "application/x-protobuf")
        if MODE == "partial":
            return self.answer(200, b'{"partialSuccess":{"rejectedSpans":"1","errorMessage":"one span was bad"}}')
        self.answer(200, b'{"partialSuccess":{}}')

    def answer(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


server = HTTPServer(("127.0.0.1", 0), Collector)
print(json.dumps({"port": server.server_address[1]}), flush=True)
server.serve_forever()
