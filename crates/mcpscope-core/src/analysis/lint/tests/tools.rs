//! The rules on a server's tools: names, schemas, results against them.

use super::super::tools::valid_tool_name;
use super::*;

fn tools(list: &str) -> S {
    let mut s = clean();
    s.out(TOOLS_LIST)
        .inn(&format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{list}}}}}"#));
    s
}

#[test]
fn tool_names() {
    let s = tools(
        r#"[{"name":"get weather!","inputSchema":{"type":"object"}},{"inputSchema":{"type":"object"}},{"name":"ok.name-1_x","inputSchema":{"type":"object"}}]"#,
    );
    let found: Vec<_> = s
        .lint()
        .into_iter()
        .filter(|f| f.rule == rule::TOOL_NAME_FORMAT)
        .collect();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found.iter().any(|f| f.message.contains("\"get weather!\"")));
    assert!(found.iter().any(|f| f.severity == Severity::Error));
    assert!(valid_tool_name(&"a".repeat(128)));
    assert!(!valid_tool_name(&"a".repeat(129)));
    assert!(!valid_tool_name(""));
}

#[test]
fn input_schema_shape() {
    let s = tools(
        r#"[{"name":"a"},{"name":"b","inputSchema":{"type":"string"}},{"name":"c","inputSchema":"x"},{"name":"d","inputSchema":{"type":"object"}}]"#,
    );
    let found: Vec<_> = s
        .lint()
        .into_iter()
        .filter(|f| f.rule == rule::INPUT_SCHEMA_NOT_OBJECT)
        .collect();
    assert_eq!(found.len(), 3, "{found:#?}");
}

#[test]
fn invalid_schemas_and_dialects() {
    let s = tools(
        r#"[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"type":"strnig"}}}},
            {"name":"b","inputSchema":{"type":"object"},"outputSchema":{"type":"object","required":"x"}},
            {"name":"c","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","items":[{"type":"string"}]}},
            {"name":"d","inputSchema":{"$schema":"https://example.com/my-dialect","type":"object"}}]"#,
    );
    let input = s.find(rule::INVALID_INPUT_SCHEMA);
    assert!(input.message.contains("\"a\""), "{}", input.message);
    assert!(input.message.contains("/properties/x/type"), "{}", input.message);
    let output = s.find(rule::INVALID_OUTPUT_SCHEMA);
    assert!(output.message.contains("\"b\""), "{}", output.message);
    // Tuple `items` is valid draft-07 (and not 2020-12): the declared dialect is used.
    assert_eq!(
        s.lint().iter().filter(|f| f.rule == rule::INVALID_INPUT_SCHEMA).count(),
        1,
        "{:#?}",
        s.lint()
    );
    assert!(s.find(rule::UNSUPPORTED_SCHEMA_DIALECT).message.contains("my-dialect"));
}

#[test]
fn remote_refs_are_not_fetched() {
    let s = tools(
        r#"[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"https://example.invalid/s.json"}}}}]"#,
    );
    let f = s.find(rule::INVALID_INPUT_SCHEMA);
    assert!(f.message.contains("cannot be used"), "{}", f.message);
}

const WEATHER: &str = r#"[{"name":"weather","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}}]"#;

fn call(s: &mut S, id: u64, result: &str) {
    s.out(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"weather","arguments":{{}}}}}}"#
    ))
    .inn(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#));
}

#[test]
fn structured_content_against_output_schema() {
    let mut s = tools(WEATHER);
    call(&mut s, 2, r#"{"content":[],"structuredContent":{"temperature":"hot"}}"#);
    call(&mut s, 3, r#"{"content":[{"type":"text","text":"22"}]}"#);
    call(&mut s, 4, r#"{"content":[],"structuredContent":{"temperature":22}}"#);
    call(
        &mut s,
        5,
        r#"{"content":[{"type":"text","text":"boom"}],"isError":true}"#,
    );
    let m = s.find(rule::STRUCTURED_CONTENT_MISMATCH);
    assert_eq!(m.seqs, [5, 6]);
    assert!(m.message.contains("/temperature"), "{}", m.message);
    assert_eq!(s.find(rule::STRUCTURED_CONTENT_MISSING).seqs, [7, 8]);
    let rules = s.rules();
    assert_eq!(
        rules.iter().filter(|r| r.starts_with("structured-content")).count(),
        2,
        "{rules:?}"
    );
}

#[test]
fn is_error_for_an_unknown_tool_is_a_heuristic_warning() {
    let mut s = tools(WEATHER);
    call(
        &mut s,
        2,
        r#"{"content":[{"type":"text","text":"Unknown tool: wether"}],"isError":true}"#,
    );
    let f = s.find(rule::TOOL_ERROR_FOR_PROTOCOL_ERROR);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.starts_with("Heuristic"), "{}", f.message);
}

#[test]
fn internal_error_for_a_listed_tool_is_a_heuristic_info() {
    let mut s = tools(WEATHER);
    s.out(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"weather","arguments":{}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"weather API returned 503"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"weather","arguments":{}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"Tool weather not found"}}"#)
        .out(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"other","arguments":{}}}"#)
        .inn(r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"disk full"}}"#);
    let found: Vec<_> = s
        .lint()
        .into_iter()
        .filter(|f| f.rule == rule::PROTOCOL_ERROR_FOR_TOOL_FAILURE)
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].severity, Severity::Info);
    assert_eq!(found[0].seqs, [5, 6]);
    assert!(!has_errors(&found));
}

/// #18: a listed tool with a broken x-mcp-header annotation is an Expert
/// finding naming the tool and the rule; a valid one is not.
#[test]
fn a_tool_with_an_invalid_header_annotation_is_reported() {
    let mut s = S::new();
    s.out(TOOLS_LIST).inn(
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
            {"name":"ok","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}},
            {"name":"bad","inputSchema":{"type":"object","properties":{"filter":{"type":"object","x-mcp-header":"Filter"}}}}
        ]}}"#
            .replace('\n', "")
            .as_str(),
    );
    let all = s.lint();
    let found: Vec<&Finding> = all
        .iter()
        .filter(|f| f.rule == rule::INVALID_HEADER_ANNOTATION)
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("\"bad\"") && found[0].message.contains("primitive-only"),
        "{found:?}"
    );
}
