"""Decodes OTLP/JSON files with the official proto definitions
(opentelemetry-proto), as an OTLP receiver does: trace and span ids arrive in
hex (OTLP/JSON's rule, unlike proto3 JSON's base64) and are checked and
converted; every other field must be what the proto says (unknown fields
refused). Prints one problem per line; nothing when all are valid."""
import base64, json, sys
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

def ids(obj, where, problems):
    for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
        if key in obj:
            h = obj[key]
            if not isinstance(h, str) or len(h) != size * 2 or any(c not in "0123456789abcdef" for c in h):
                problems.append(f"{where}: {key} {h!r} is not {size * 2} lowercase hex digits")
                continue
            obj[key] = base64.b64encode(bytes.fromhex(h)).decode()

for path in sys.argv[1:]:
    problems = []
    try:
        doc = json.load(open(path))
        for r, rs in enumerate(doc.get("resourceSpans", [])):
            for s, ss in enumerate(rs.get("scopeSpans", [])):
                for n, span in enumerate(ss.get("spans", [])):
                    where = f"{path}: span {r}.{s}.{n}"
                    if not isinstance(span.get("kind"), int):
                        problems.append(f"{where}: kind {span.get('kind')!r} is not an integer")
                    if not isinstance(span.get("status", {}).get("code", 0), int):
                        problems.append(f"{where}: status code is not an integer")
                    for k in ("startTimeUnixNano", "endTimeUnixNano"):
                        if not isinstance(span.get(k), str):
                            problems.append(f"{where}: {k} is not a decimal string")
                    ids(span, where, problems)
                    for link in span.get("links", []):
                        ids(link, where + " link", problems)
        msg = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest(), ignore_unknown_fields=False)
        if not msg.resource_spans:
            problems.append(f"{path}: no resourceSpans")
    except Exception as e:
        problems.append(f"{path}: {e}")
    for p in problems:
        print(p)
