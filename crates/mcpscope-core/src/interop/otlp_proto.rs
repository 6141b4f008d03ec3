//! OTLP/HTTP's protobuf body (`application/x-protobuf`, the OTLP default):
//! the `ExportTraceServiceRequest` [`super::otlp::OtlpWriter`] builds as
//! OTLP/JSON, encoded field by field with the numbers of
//! opentelemetry-proto's `trace/v1/trace.proto`, `common/v1/common.proto`
//! and `resource/v1/resource.proto`. A small writer: only what the JSON side
//! produces (strings, integers, hex ids, attributes, events, links, status).
//! The tests decode it with the official protos and compare with the JSON.

use serde_json::Value;

/// Wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// Encodes an OTLP/JSON `ExportTraceServiceRequest` as protobuf.
pub fn encode_traces(request: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    for rs in items(request, "resourceSpans") {
        message(&mut out, 1, |m| resource_spans(m, rs));
    }
    out
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

fn resource_spans(out: &mut Vec<u8>, rs: &Value) {
    if let Some(r) = rs.get("resource") {
        message(out, 1, |m| attributes(m, r, 1));
    }
    for ss in items(rs, "scopeSpans") {
        message(out, 2, |m| scope_spans(m, ss));
    }
    string(out, 3, rs.get("schemaUrl"));
}

fn scope_spans(out: &mut Vec<u8>, ss: &Value) {
    if let Some(scope) = ss.get("scope") {
        message(out, 1, |m| {
            string(m, 1, scope.get("name"));
            string(m, 2, scope.get("version"));
            attributes(m, scope, 3);
        });
    }
    for span in items(ss, "spans") {
        message(out, 2, |m| encode_span(m, span));
    }
    string(out, 3, ss.get("schemaUrl"));
}

fn encode_span(out: &mut Vec<u8>, s: &Value) {
    hex_bytes(out, 1, s.get("traceId"));
    hex_bytes(out, 2, s.get("spanId"));
    string(out, 3, s.get("traceState"));
    hex_bytes(out, 4, s.get("parentSpanId"));
    string(out, 5, s.get("name"));
    varint_field(out, 6, s.get("kind").and_then(Value::as_u64).unwrap_or(0));
    fixed64(out, 7, nanos(s.get("startTimeUnixNano")));
    fixed64(out, 8, nanos(s.get("endTimeUnixNano")));
    attributes(out, s, 9);
    for e in items(s, "events") {
        message(out, 11, |m| {
            fixed64(m, 1, nanos(e.get("timeUnixNano")));
            string(m, 2, e.get("name"));
            attributes(m, e, 3);
        });
    }
    for l in items(s, "links") {
        message(out, 13, |m| {
            hex_bytes(m, 1, l.get("traceId"));
            hex_bytes(m, 2, l.get("spanId"));
            string(m, 3, l.get("traceState"));
            attributes(m, l, 4);
            if let Some(flags) = l.get("flags").and_then(Value::as_u64) {
                tag(m, 6, FIXED32);
                m.extend_from_slice(&(flags as u32).to_le_bytes());
            }
        });
    }
    if let Some(status) = s
        .get("status")
        .filter(|st| st.as_object().is_some_and(|o| !o.is_empty()))
    {
        message(out, 15, |m| {
            string(m, 2, status.get("message"));
            varint_field(m, 3, status.get("code").and_then(Value::as_u64).unwrap_or(0));
        });
    }
}

/// `attributes` of `holder` as repeated KeyValue in `field`.
fn attributes(out: &mut Vec<u8>, holder: &Value, field: u32) {
    for kv in items(holder, "attributes") {
        message(out, field, |m| key_value(m, kv));
    }
}

fn key_value(out: &mut Vec<u8>, kv: &Value) {
    string(out, 1, kv.get("key"));
    if let Some(v) = kv.get("value") {
        message(out, 2, |m| any_value(m, v));
    }
}

fn any_value(out: &mut Vec<u8>, v: &Value) {
    if let Some(s) = v.get("stringValue") {
        // An empty string is still a value: written even though proto3 could skip it.
        let s = s.as_str().unwrap_or_default();
        tag(out, 1, LEN);
        bytes(out, s.as_bytes());
    } else if let Some(b) = v.get("boolValue").and_then(Value::as_bool) {
        varint_field_always(out, 2, u64::from(b));
    } else if let Some(i) = v.get("intValue") {
        // OTLP/JSON writes int64 as a decimal string (or a number).
        let n = i
            .as_i64()
            .or_else(|| i.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or(0);
        varint_field_always(out, 3, n as u64);
    } else if let Some(d) = v.get("doubleValue").and_then(Value::as_f64) {
        tag(out, 4, FIXED64);
        out.extend_from_slice(&d.to_le_bytes());
    } else if let Some(a) = v.get("arrayValue") {
        message(out, 5, |m| {
            for item in items(a, "values") {
                message(m, 1, |mm| any_value(mm, item));
            }
        });
    } else if let Some(kv) = v.get("kvlistValue") {
        message(out, 6, |m| {
            for item in items(kv, "values") {
                message(m, 1, |mm| key_value(mm, item));
            }
        });
    }
}

fn nanos(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    }
}

fn tag(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A nested message in `field`, written by `body`.
fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    tag(out, field, LEN);
    bytes(out, &inner);
}

/// A string field; proto3 leaves out the empty string.
fn string(out: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
        tag(out, field, LEN);
        bytes(out, s.as_bytes());
    }
}

/// Ids are hex in OTLP/JSON, raw bytes in protobuf.
fn hex_bytes(out: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    let Some(hex) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) else {
        return;
    };
    let raw: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect();
    if let Some(raw) = raw {
        tag(out, field, LEN);
        bytes(out, &raw);
    }
}

fn varint_field(out: &mut Vec<u8>, field: u32, n: u64) {
    if n != 0 {
        varint_field_always(out, field, n);
    }
}

fn varint_field_always(out: &mut Vec<u8>, field: u32, n: u64) {
    tag(out, field, VARINT);
    varint(out, n);
}

fn fixed64(out: &mut Vec<u8>, field: u32, n: u64) {
    if n != 0 {
        tag(out, field, FIXED64);
        out.extend_from_slice(&n.to_le_bytes());
    }
}

/// `ExportTraceServiceResponse.partial_success` (field 1): rejected spans
/// (field 1) and the message (field 2); nothing for a body that is not one.
pub fn partial_success(body: &[u8]) -> (u64, Option<String>) {
    let mut rejected = 0;
    let mut message = None;
    if let Some(inner) = fields(body).find_map(|(f, v)| (f == 1).then_some(v).and_then(Field::bytes)) {
        for (f, v) in fields(inner) {
            match (f, v) {
                (1, Field::Varint(n)) => rejected = n,
                (2, Field::Bytes(b)) => message = Some(String::from_utf8_lossy(b).into_owned()),
                _ => {}
            }
        }
    }
    (rejected, message)
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

impl<'a> Field<'a> {
    fn bytes(self) -> Option<&'a [u8]> {
        match self {
            Field::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// The fields of a message, stopping at the first malformed one.
fn fields(mut b: &[u8]) -> impl Iterator<Item = (u64, Field<'_>)> {
    std::iter::from_fn(move || {
        let (key, rest) = read_varint(b)?;
        let (field, value, rest) = match (key & 7) as u8 {
            VARINT => {
                let (n, rest) = read_varint(rest)?;
                (key >> 3, Field::Varint(n), rest)
            }
            LEN => {
                let (len, rest) = read_varint(rest)?;
                let len = usize::try_from(len).ok().filter(|&l| l <= rest.len())?;
                (key >> 3, Field::Bytes(&rest[..len]), &rest[len..])
            }
            FIXED64 => (key >> 3, Field::Other, rest.get(8..)?),
            FIXED32 => (key >> 3, Field::Other, rest.get(4..)?),
            _ => return None,
        };
        b = rest;
        Some((field, value))
    })
}

fn read_varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((n, &b[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_partial_success_is_read_and_garbage_is_nothing() {
        // partial_success { rejected_spans: 2, error_message: "no" }
        let mut inner = Vec::new();
        varint_field_always(&mut inner, 1, 2);
        tag(&mut inner, 2, LEN);
        bytes(&mut inner, b"no");
        let mut body = Vec::new();
        tag(&mut body, 1, LEN);
        bytes(&mut body, &inner);
        assert_eq!(partial_success(&body), (2, Some("no".into())));
        assert_eq!(partial_success(&[]), (0, None));
        assert_eq!(partial_success(&[0x0a, 0xff]), (0, None));
        assert_eq!(partial_success(b"<html>"), (0, None));
    }

    #[test]
    fn varints_and_fields_are_encoded_as_protobuf_says() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        // A negative int64 is ten bytes (two's complement), as protobuf has it.
        let mut n = Vec::new();
        any_value(&mut n, &json!({"intValue": "-1"}));
        assert_eq!(n.len(), 1 + 10);
        assert_eq!(n[0], 3 << 3);
    }

    #[test]
    fn a_span_is_encoded_with_raw_ids_and_fixed_times() {
        let req = json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
            "traceId": "0102030405060708090a0b0c0d0e0f10",
            "spanId": "1112131415161718",
            "name": "ping",
            "kind": 3,
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "status": {},
        }]}]}]});
        let bytes = encode_traces(&req);
        // resourceSpans(1) > scopeSpans(2) > spans(2) > traceId(1): 16 raw bytes.
        let trace_at = bytes.windows(2).position(|w| w == [0x0a, 16]).unwrap();
        assert_eq!(bytes[trace_at + 2], 1);
        assert_eq!(bytes[trace_at + 17], 0x10);
        // startTimeUnixNano: field 7, fixed64 little-endian.
        let start = bytes.windows(9).position(|w| w[0] == (7 << 3 | 1)).unwrap();
        assert_eq!(&bytes[start + 1..start + 9], &1u64.to_le_bytes());
        // kind CLIENT (3) as field 6; no status message for an empty status.
        assert!(bytes.windows(2).any(|w| w == [6 << 3, 3]));
        assert!(!bytes.windows(1).any(|w| w == [15 << 3 | 2]));
    }
}
