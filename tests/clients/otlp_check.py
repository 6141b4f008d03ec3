"""Decodes OTLP/JSON with the official proto definitions (opentelemetry-proto),
as an OTLP receiver does: trace and span ids arrive in hex (OTLP/JSON's rule,
unlike proto3 JSON's base64) and are checked and converted; every other field
must be what the proto says (unknown fields refused).

As a program: checks the files named, one problem per line (nothing when all
are valid)."""
import base64, json, sys
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


def _ids(obj, where, problems):
    for key, size in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
        if key in obj:
            h = obj[key]
            if not isinstance(h, str) or len(h) != size * 2 or any(c not in "0123456789abcdef" for c in h):
                problems.append(f"{where}: {key} {h!r} is not {size * 2} lowercase hex digits")
                continue
            obj[key] = base64.b64encode(bytes.fromhex(h)).decode()


def decode(doc, where="request"):
    """(ExportTraceServiceRequest or None, problems)."""
    problems = []
    try:
        for r, rs in enumerate(doc.get("resourceSpans", [])):
            for s, ss in enumerate(rs.get("scopeSpans", [])):
                for n, span in enumerate(ss.get("spans", [])):
                    at = f"{where}: span {r}.{s}.{n}"
                    if not isinstance(span.get("kind"), int):
                        problems.append(f"{at}: kind {span.get('kind')!r} is not an integer")
                    if not isinstance(span.get("status", {}).get("code", 0), int):
                        problems.append(f"{at}: status code is not an integer")
                    for k in ("startTimeUnixNano", "endTimeUnixNano"):
                        if not isinstance(span.get(k), str):
                            problems.append(f"{at}: {k} is not a decimal string")
                    _ids(span, at, problems)
                    for link in span.get("links", []):
                        _ids(link, at + " link", problems)
        msg = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest(), ignore_unknown_fields=False)
        if not msg.resource_spans:
            problems.append(f"{where}: no resourceSpans")
        return msg, problems
    except Exception as e:
        problems.append(f"{where}: {e}")
        return None, problems


if __name__ == "__main__":
    for path in sys.argv[1:]:
        _, problems = decode(json.load(open(path)), path)
        for p in problems:
            print(p)
