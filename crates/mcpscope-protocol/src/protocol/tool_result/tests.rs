use super::*;
use serde_json::json;

// Real frames (stdio, one per line) from the Node (@modelcontextprotocol/sdk) and Python (mcp)
// "notes" servers, from /work/shared/reference/000_0840aa31b77a0aea.txt.
const NODE_LIST: &str = r#"{"result":{"tools":[{"name":"search_notes","description":"在笔记里按关键词搜索（大小写不敏感，空格分隔的多个词需同时出现在一行）。返回命中的文件、行号和该行内容。","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"query":{"type":"string"},"limit":{"default":5,"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}},"required":["query"]},"execution":{"taskSupport":"forbidden"},"outputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"result":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},"text":{"type":"string"}},"required":["path","line","text"],"additionalProperties":false}}},"required":["result"],"additionalProperties":false}},{"name":"read_note","description":"读取一篇笔记的全文。path 是 search_notes 返回的相对路径。","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"execution":{"taskSupport":"forbidden"}}]},"jsonrpc":"2.0","id":2}"#;
const NODE_CALL_OK: &str = r#"{"result":{"content":[{"type":"text","text":"[{\"path\":\"claude-hooks.md\",\"line\":5,\"text\":\"- Stop hook 返回 decision: block 可以让 Claude 继续干活，注意别死循环\"}]"}],"structuredContent":{"result":[{"path":"claude-hooks.md","line":5,"text":"- Stop hook 返回 decision: block 可以让 Claude 继续干活，注意别死循环"}]}},"jsonrpc":"2.0","id":3}"#;
const NODE_CALL_FAIL: &str = r#"{"result":{"content":[{"type":"text","text":"只能读取笔记目录下的 .md 文件：/etc/passwd"}],"isError":true},"jsonrpc":"2.0","id":4}"#;
const NODE_METHOD_NOT_FOUND: &str = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found"}}"#;
const PY_LIST: &str = r##"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"description":"在笔记里按关键词搜索（大小写不敏感，空格分隔的多个词需同时出现在一行）。返回命中的文件、行号和该行内容。","inputSchema":{"properties":{"query":{"title":"Query","type":"string"},"limit":{"default":5,"title":"Limit","type":"integer"}},"required":["query"],"type":"object","title":"search_notesArguments"},"name":"search_notes","outputSchema":{"properties":{"result":{"items":{"$ref":"#/$defs/Hit"},"title":"Result","type":"array"}},"required":["result"],"type":"object","$defs":{"Hit":{"properties":{"path":{"title":"Path","type":"string"},"line":{"title":"Line","type":"integer"},"text":{"title":"Text","type":"string"}},"required":["path","line","text"],"title":"Hit","type":"object"}},"title":"search_notesOutput"}},{"description":"读取一篇笔记的全文。path 是 search_notes 返回的相对路径。","inputSchema":{"properties":{"path":{"title":"Path","type":"string"}},"required":["path"],"type":"object","title":"read_noteArguments"},"name":"read_note","outputSchema":{"properties":{"result":{"title":"Result","type":"string"}},"required":["result"],"type":"object","title":"read_noteOutput"}}]}}"##;
const PY_CALL_OK: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"{\n  \"path\": \"claude-hooks.md\",\n  \"line\": 5,\n  \"text\": \"- Stop hook 返回 decision: block 可以让 Claude 继续干活，注意别死循环\"\n}","type":"text"}],"isError":false,"structuredContent":{"result":[{"path":"claude-hooks.md","line":5,"text":"- Stop hook 返回 decision: block 可以让 Claude 继续干活，注意别死循环"}]}}}"#;
const PY_CALL_FAIL: &str = r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"Error executing tool read_note: 只能读取笔记目录下的 .md 文件：/etc/passwd","type":"text"}],"isError":true}}"#;
const PY_METHOD_NOT_FOUND: &str = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found","data":"resources/subscribe_everything"}}"#;
const PY_NO_HANDSHAKE: &str =
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid request parameters","data":""}}"#;

fn frame(s: &str) -> Value {
    serde_json::from_str(s).unwrap()
}

fn output_schema(list: &str, tool: &str) -> Option<Value> {
    frame(list)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .and_then(|t| t.get("outputSchema").cloned())
}

fn ok(outcome: CallOutcome) -> ToolResult {
    match outcome {
        CallOutcome::ToolSuccess(r) => r,
        other => panic!("expected success, got {other:?}"),
    }
}

fn failed(outcome: CallOutcome) -> ToolResult {
    match outcome {
        CallOutcome::ToolFailure(r) => r,
        other => panic!("expected failure, got {other:?}"),
    }
}

fn call(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

fn single_block(result: Value) -> (Block, Vec<String>) {
    let r = ok(interpret(&call(result), None));
    assert_eq!(r.blocks.len(), 1);
    (r.blocks[0].clone(), r.problems)
}

fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F'];
const WAV: &[u8] = b"RIFF\x24\0\0\0WAVEfmt ";

#[test]
fn real_node_frames() {
    let schema = output_schema(NODE_LIST, "search_notes");
    let r = ok(interpret(&frame(NODE_CALL_OK), schema.as_ref()));
    assert_eq!(r.structured_check, StructuredCheck::Valid);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let Block::Text {
        text,
        json: Some(json),
        annotations: None,
    } = &r.blocks[0]
    else {
        panic!("{:?}", r.blocks)
    };
    assert!(text.starts_with("[{"));
    assert_eq!(json[0]["line"], 5);
    assert_eq!(r.structured.as_ref().unwrap()["result"][0]["path"], "claude-hooks.md");

    let r = failed(interpret(&frame(NODE_CALL_FAIL), None));
    assert!(matches!(&r.blocks[0], Block::Text { text, json: None, .. } if text.contains("/etc/passwd")));
    assert_eq!(r.structured_check, StructuredCheck::NoSchema);

    assert_eq!(
        interpret(&frame(NODE_METHOD_NOT_FOUND), None),
        CallOutcome::ProtocolError {
            code: -32601,
            message: "Method not found".into(),
            data: None,
            meaning: "Method not found"
        }
    );
}

#[test]
fn real_python_frames() {
    let schema = output_schema(PY_LIST, "search_notes");
    let r = ok(interpret(&frame(PY_CALL_OK), schema.as_ref()));
    assert_eq!(
        r.structured_check,
        StructuredCheck::Valid,
        "$ref into $defs resolves locally"
    );
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    // Python pretty-prints one hit as the text: still a JSON object
    assert!(matches!(&r.blocks[0], Block::Text { json: Some(Value::Object(o)), .. } if o["line"] == 5));

    // read_note's schema wants {"result": string}; the failure carries no structured content
    let schema = output_schema(PY_LIST, "read_note");
    let r = failed(interpret(&frame(PY_CALL_FAIL), schema.as_ref()));
    assert_eq!(r.structured_check, StructuredCheck::NoSchema);
    assert!(r.problems.is_empty());

    match interpret(&frame(PY_METHOD_NOT_FOUND), None) {
        CallOutcome::ProtocolError {
            code, data, meaning, ..
        } => {
            assert_eq!((code, meaning), (-32601, "Method not found"));
            assert_eq!(data, Some(json!("resources/subscribe_everything")));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        interpret(&frame(PY_NO_HANDSHAKE), None),
        CallOutcome::ProtocolError {
            code: -32602,
            meaning: "Invalid params",
            data: Some(Value::String(_)),
            ..
        }
    ));
}

#[test]
fn structured_invalid_against_real_schema() {
    let schema = output_schema(NODE_LIST, "search_notes");
    let bad = call(json!({
        "content": [],
        "structuredContent": {"result": [{"path": "a.md", "line": "5", "text": "x", "extra": 1}, {"path": 1}]}
    }));
    let r = ok(interpret(&bad, schema.as_ref()));
    let StructuredCheck::Invalid(errors) = &r.structured_check else {
        panic!("{:?}", r.structured_check)
    };
    assert!(
        errors.iter().any(|e| e.starts_with("at /result/0/line: ")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("at /result/0: ") && e.contains("extra")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("at /result/1: ") && e.contains("line")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("at /result/1/path: ")),
        "{errors:?}"
    );

    // 2020-12 by default: a root-level error
    let schema = json!({"type": "object", "required": ["temperature"]});
    let r = ok(interpret(
        &call(json!({"content": [], "structuredContent": {}})),
        Some(&schema),
    ));
    assert_eq!(
        r.structured_check,
        StructuredCheck::Invalid(vec!["at (root): \"temperature\" is a required property".into()])
    );
}

#[test]
fn structured_missing_and_unusable_schemas() {
    let schema = output_schema(PY_LIST, "read_note").unwrap();
    let r = ok(interpret(
        &call(json!({"content": [{"type": "text", "text": "hi"}]})),
        Some(&schema),
    ));
    assert_eq!(r.structured_check, StructuredCheck::MissingStructured);

    let with = |s: Value| {
        ok(interpret(
            &call(json!({"content": [], "structuredContent": {"a": 1}})),
            Some(&s),
        ))
        .structured_check
    };
    assert_eq!(with(json!(true)), StructuredCheck::Valid);
    assert!(matches!(with(json!(false)), StructuredCheck::Invalid(e) if e.len() == 1));
    assert!(matches!(with(json!(12)), StructuredCheck::SchemaUnusable(m) if m.contains("a number")));
    assert!(matches!(with(json!(null)), StructuredCheck::SchemaUnusable(_)));
    assert!(matches!(with(json!({"type": 12})), StructuredCheck::SchemaUnusable(_)));
    assert!(matches!(
        with(json!({"$schema": "https://example.com/my-dialect", "type": "object"})),
        StructuredCheck::SchemaUnusable(m) if m.contains("unsupported JSON Schema dialect")
    ));
    assert!(matches!(
        with(json!({"$schema": 7})),
        StructuredCheck::SchemaUnusable(_)
    ));
    // remote refs are never fetched
    assert!(matches!(
        with(json!({"$ref": "https://example.com/schema.json"})),
        StructuredCheck::SchemaUnusable(m) if m.contains("https://example.com/schema.json")
    ));
    assert!(matches!(
        with(json!({"$ref": "other.json"})),
        StructuredCheck::SchemaUnusable(_)
    ));
    // draft-04 picked from $schema: exclusiveMaximum is a boolean there
    let d4 = json!({"$schema": "http://json-schema.org/draft-04/schema#",
                        "properties": {"a": {"maximum": 1, "exclusiveMaximum": true}}});
    assert!(matches!(with(d4), StructuredCheck::Invalid(e) if e[0].starts_with("at /a: ")));
    // 2026-07-28 style: non-object structured content with an array schema
    let r = ok(interpret(
        &call(json!({"content": [], "structuredContent": [1, 2]})),
        Some(&json!({"type": "array"})),
    ));
    assert_eq!(r.structured_check, StructuredCheck::Valid);
    assert!(r.problems.iter().any(|p| p.contains("structuredContent is an array")));
}

#[test]
fn many_errors_are_capped() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let items: Vec<Value> = (0..80).map(Value::from).collect();
    let StructuredCheck::Invalid(errors) = validate_structured(&schema, &Value::Array(items)) else {
        panic!()
    };
    assert_eq!(errors.len(), MAX_SCHEMA_ERRORS + 1);
    assert_eq!(errors.last().unwrap(), "... and 30 more");
}

#[test]
fn is_error_variants() {
    let content = json!([{"type": "text", "text": "x"}]);
    let r = ok(interpret(&call(json!({"content": content, "isError": false})), None));
    assert!(r.problems.is_empty());
    let r = ok(interpret(&call(json!({"content": content})), None));
    assert!(r.problems.is_empty());
    failed(interpret(&call(json!({"content": content, "isError": true})), None));
    let r = failed(interpret(&call(json!({"content": content, "isError": "true"})), None));
    assert_eq!(r.problems, ["isError is \"true\" (a string), not a boolean"]);
    let r = ok(interpret(&call(json!({"content": content, "isError": "false"})), None));
    assert_eq!(r.problems, ["isError is \"false\" (a string), not a boolean"]);
    let r = ok(interpret(&call(json!({"content": content, "isError": 1})), None));
    assert_eq!(r.problems, ["isError is 1, not a boolean (read as false)"]);
}

#[test]
fn text_blocks_and_json_detection() {
    let text = |t: &str| match single_block(json!({"content": [{"type": "text", "text": t}]})).0 {
        Block::Text { json, .. } => json,
        other => panic!("{other:?}"),
    };
    assert_eq!(text(r#"{"a": 1}"#), Some(json!({"a": 1})));
    assert_eq!(text("  [1, 2]\n"), Some(json!([1, 2])));
    assert_eq!(text("42"), None);
    assert_eq!(text("\"quoted\""), None);
    assert_eq!(text("true"), None);
    assert_eq!(text("{not json}"), None);
    assert_eq!(text("[1, 2] trailing"), None);
    assert_eq!(text("plain words"), None);
    assert_eq!(text(&"[".repeat(5000)), None);

    let (block, problems) = single_block(json!({"content": [{"type": "text", "text": "hi",
            "annotations": {"audience": ["user"], "priority": 0.5}}]}));
    assert_eq!(
        block,
        Block::Text {
            text: "hi".into(),
            json: None,
            annotations: Some(json!({"audience": ["user"], "priority": 0.5}))
        }
    );
    assert!(problems.is_empty());
    let (_, problems) = single_block(json!({"content": [{"type": "text", "text": "hi",
            "annotations": {"audience": ["robot"], "priority": 3}}]}));
    assert_eq!(problems.len(), 2, "{problems:?}");
    let (block, problems) = single_block(json!({"content": [{"type": "text"}]}));
    assert!(matches!(block, Block::Text { ref text, .. } if text.is_empty()));
    assert_eq!(problems, ["content[0] (text): \"text\" is missing"]);
}

#[test]
fn image_and_audio_blocks() {
    let (block, problems) =
        single_block(json!({"content": [{"type": "image", "data": b64(PNG), "mimeType": "image/png"}]}));
    assert_eq!(
        block,
        Block::Image {
            mime: "image/png".into(),
            data: Ok(PNG.to_vec()),
            annotations: None
        }
    );
    assert!(problems.is_empty());

    let (block, problems) =
        single_block(json!({"content": [{"type": "audio", "data": b64(WAV), "mimeType": "audio/wav"}]}));
    assert!(matches!(block, Block::Audio { ref mime, data: Ok(_), .. } if mime == "audio/wav"));
    assert!(problems.is_empty());

    // declared PNG, bytes are JPEG
    let (_, problems) =
        single_block(json!({"content": [{"type": "image", "data": b64(JPEG), "mimeType": "image/png"}]}));
    assert_eq!(
        problems,
        ["content[0] (image): mimeType is \"image/png\" but the data looks like image/jpeg"]
    );
    // aliases and parameters are not mismatches
    let (_, problems) =
        single_block(json!({"content": [{"type": "image", "data": b64(JPEG), "mimeType": "image/JPG; q=1"}]}));
    assert!(problems.is_empty(), "{problems:?}");
    // audio block with an image type
    let (_, problems) =
        single_block(json!({"content": [{"type": "audio", "data": b64(PNG), "mimeType": "image/png"}]}));
    assert_eq!(
        problems,
        ["content[0] (audio): mimeType \"image/png\" is not an audio/* type"]
    );
}

#[test]
fn base64_errors_and_leniency() {
    let data = |d: Value| {
        let (block, problems) =
            single_block(json!({"content": [{"type": "image", "data": d, "mimeType": "image/png"}]}));
        let Block::Image { data, .. } = block else { panic!() };
        (data, problems)
    };
    let (d, problems) = data(json!("not base64!!"));
    assert!(d.unwrap_err().starts_with("not valid base64: "));
    assert_eq!(problems.len(), 1);
    assert!(problems[0].starts_with("content[0] (image): \"data\" is not valid base64"));

    let (d, problems) = data(json!(42));
    assert_eq!(d, Err("\"data\" is a number, not a base64 string".into()));
    assert_eq!(problems.len(), 1);
    let (d, _) = data(json!(null));
    assert_eq!(d, Err("\"data\" is missing".into()));

    // a data: URL and line-wrapped base64 decode, with a note
    let (d, problems) = data(json!(format!("data:image/png;base64,{}", b64(PNG))));
    assert_eq!(d, Ok(PNG.to_vec()));
    assert!(problems[0].contains("data: URL prefix"), "{problems:?}");
    let wrapped = format!("{}\n{}", &b64(PNG)[..8], &b64(PNG)[8..]);
    let (d, problems) = data(json!(wrapped));
    assert_eq!(d, Ok(PNG.to_vec()));
    assert!(problems[0].contains("whitespace"), "{problems:?}");
    let (d, problems) = data(json!(b64(PNG).trim_end_matches('=')));
    assert_eq!(d, Ok(PNG.to_vec()));
    assert!(problems[0].contains("padding"), "{problems:?}");
    let (d, problems) = data(json!(""));
    assert_eq!(d, Ok(vec![]));
    assert_eq!(problems, ["content[0] (image): \"data\" is empty"]);
}

#[test]
fn resource_link_blocks() {
    let (block, problems) = single_block(
        json!({"content": [{"type": "resource_link", "uri": "file:///project/src/main.rs",
            "name": "main.rs", "description": "Primary application entry point", "mimeType": "text/x-rust", "size": 1234}]}),
    );
    assert_eq!(
        block,
        Block::ResourceLink {
            uri: "file:///project/src/main.rs".into(),
            name: Some("main.rs".into()),
            title: None,
            description: Some("Primary application entry point".into()),
            mime: Some("text/x-rust".into()),
            size: Some(1234),
        }
    );
    assert!(problems.is_empty());
    let (block, problems) = single_block(json!({"content": [{"type": "resource_link", "uri": "x://y", "size": -1}]}));
    assert!(matches!(
        block,
        Block::ResourceLink {
            name: None,
            size: None,
            ..
        }
    ));
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn embedded_resource_blocks() {
    // the spec example (annotations inside `resource`)
    let (block, problems) = single_block(json!({"content": [{"type": "resource", "resource": {
            "uri": "file:///project/src/main.rs", "mimeType": "text/x-rust",
            "text": "fn main() {\n    println!(\"Hello world!\");\n}",
            "annotations": {"audience": ["user", "assistant"], "priority": 0.7}}}]}));
    assert_eq!(
        block,
        Block::Resource {
            uri: "file:///project/src/main.rs".into(),
            mime: Some("text/x-rust".into()),
            contents: ResourceContents::Text("fn main() {\n    println!(\"Hello world!\");\n}".into()),
        }
    );
    assert!(problems.is_empty());

    let (block, problems) = single_block(json!({"content": [{"type": "resource", "resource": {
            "uri": "test://static-binary", "mimeType": "image/png", "blob": b64(PNG)}}]}));
    assert!(matches!(block, Block::Resource { contents: ResourceContents::Blob(Ok(ref b)), .. } if b == PNG));
    assert!(problems.is_empty());

    let (_, problems) = single_block(json!({"content": [{"type": "resource", "resource": {
            "uri": "test://x", "mimeType": "audio/mpeg", "blob": b64(WAV)}}]}));
    assert_eq!(
        problems,
        ["content[0] (resource): mimeType is \"audio/mpeg\" but the data looks like audio/wav"]
    );

    let (block, problems) =
        single_block(json!({"content": [{"type": "resource", "resource": {"uri": "test://x", "blob": "%%%"}}]}));
    assert!(matches!(
        block,
        Block::Resource {
            contents: ResourceContents::Blob(Err(_)),
            ..
        }
    ));
    assert_eq!(problems.len(), 1);

    // old / flattened shape without `resource`
    let (block, problems) = single_block(
        json!({"content": [{"type": "resource", "uri": "note://1", "mimeType": "text/plain", "text": "hello"}]}),
    );
    assert_eq!(
        block,
        Block::Resource {
            uri: "note://1".into(),
            mime: Some("text/plain".into()),
            contents: ResourceContents::Text("hello".into())
        }
    );
    assert!(problems[0].contains("no \"resource\" object"), "{problems:?}");
    // nothing at all
    let (block, problems) = single_block(json!({"content": [{"type": "resource"}]}));
    assert!(
        matches!(block, Block::Resource { ref uri, contents: ResourceContents::Text(ref t), .. } if uri.is_empty() && t.is_empty())
    );
    assert_eq!(problems.len(), 3, "{problems:?}");
    let (_, problems) = single_block(
        json!({"content": [{"type": "resource", "resource": {"uri": "a://b", "text": "t", "blob": "AA=="}}]}),
    );
    assert!(problems[0].contains("both"), "{problems:?}");
    let (block, problems) = single_block(
        json!({"content": [{"type": "resource", "resource": {"uri": "a://b", "text": 5, "blob": b64(PNG)}}]}),
    );
    assert!(
        matches!(
            block,
            Block::Resource {
                contents: ResourceContents::Blob(Ok(_)),
                ..
            }
        ),
        "{block:?}"
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
}

#[test]
fn unknown_and_broken_blocks() {
    let r = ok(interpret(
        &call(json!({"content": [
            {"type": "tool_use", "id": "1", "name": "x", "input": {}},
            {"type": "video", "data": ""},
            "just a string",
            {"text": "no type"},
            {"type": 3}
        ]})),
        None,
    ));
    assert_eq!(r.blocks.len(), 5);
    assert!(matches!(&r.blocks[0], Block::Unknown { kind, .. } if kind == "tool_use"));
    assert!(matches!(&r.blocks[1], Block::Unknown { kind, raw } if kind == "video" && raw["data"] == ""));
    assert!(matches!(&r.blocks[2], Block::Unknown { kind, raw } if kind.is_empty() && raw == "just a string"));
    assert!(matches!(&r.blocks[3], Block::Unknown { kind, .. } if kind.is_empty()));
    assert_eq!(r.problems.len(), 5, "{:?}", r.problems);
    assert!(r.problems[0].contains("sampling"));
}

#[test]
fn protocol_errors_with_meanings() {
    let err = |code: Value| {
        interpret(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m"}}),
            None,
        )
    };
    let meaning = |code: i64| match err(json!(code)) {
        CallOutcome::ProtocolError { meaning, .. } => meaning,
        other => panic!("{other:?}"),
    };
    assert_eq!(meaning(-32700), "Parse error");
    assert_eq!(meaning(-32600), "Invalid Request");
    assert_eq!(meaning(-32601), "Method not found");
    assert_eq!(meaning(-32602), "Invalid params");
    assert_eq!(meaning(-32603), "Internal error");
    assert_eq!(meaning(-32002), "Resource not found");
    assert_eq!(meaning(-32042), "URL elicitation required");
    assert_eq!(meaning(-32022), "Unsupported protocol version");
    assert!(meaning(-32001).starts_with("Server error"));
    assert!(meaning(-32050).starts_with("Server error"));
    assert!(meaning(-32099).starts_with("Server error"));
    assert_eq!(meaning(-32100), "Reserved JSON-RPC error code");
    assert_eq!(meaning(-32768), "Reserved JSON-RPC error code");
    assert_eq!(meaning(1), "Application-defined error");
    assert_eq!(meaning(-31999), "Application-defined error");
    // URL elicitation required, with its data
    let data =
        json!({"elicitations": [{"mode": "url", "elicitationId": "e1", "url": "https://x", "message": "log in"}]});
    let e = interpret(
        &json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32042, "message": "needs auth", "data": data}}),
        None,
    );
    assert_eq!(
        e,
        CallOutcome::ProtocolError {
            code: -32042,
            message: "needs auth".into(),
            data: Some(data),
            meaning: "URL elicitation required"
        }
    );
    assert!(matches!(
        err(json!(-32601.0)),
        CallOutcome::ProtocolError { code: -32601, .. }
    ));
    assert!(matches!(err(json!("-32601")), CallOutcome::Malformed(m) if m.contains("not an integer")));
    assert!(matches!(err(json!(1.5)), CallOutcome::Malformed(_)));
    assert!(matches!(
        interpret(&json!({"error": {"code": 5}}), None),
        CallOutcome::ProtocolError { code: 5, ref message, .. } if message.is_empty()
    ));
    assert!(matches!(
        interpret(&json!({"error": {"message": "x"}}), None),
        CallOutcome::Malformed(_)
    ));
    assert!(matches!(interpret(&json!({"error": "boom"}), None), CallOutcome::Malformed(m) if m.contains("a string")));
}

#[test]
fn malformed_responses() {
    let malformed = |v: Value| match interpret(&v, None) {
        CallOutcome::Malformed(m) => m,
        other => panic!("{v}: {other:?}"),
    };
    assert!(malformed(json!([])).contains("an array"));
    assert!(malformed(json!("x")).contains("a string"));
    assert!(malformed(json!({"jsonrpc": "2.0", "id": 1})).contains("neither"));
    assert!(malformed(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})).contains("request"));
    assert!(
        malformed(json!({"id": 1, "result": {"content": []}, "error": {"code": 1, "message": ""}})).contains("both")
    );
    assert!(malformed(call(json!(null))).contains("null"));
    assert!(malformed(call(json!([]))).contains("\"result\" is an array"));
    assert!(malformed(call(json!({"content": "hello"}))).contains("\"content\" is a string, not an array"));
    assert!(malformed(call(json!({"content": {"type": "text"}}))).contains("not an array"));
    assert!(malformed(call(json!({"task": {"taskId": "t1", "status": "working"}}))).contains("CreateTaskResult"));
    assert!(malformed(call(json!({"resultType": "input_required", "inputRequests": {}}))).contains("input_required"));

    // lenient cases: missing content, error: null, missing jsonrpc
    let r = ok(interpret(&call(json!({"structuredContent": {"a": 1}})), None));
    assert_eq!(
        r.problems,
        ["\"content\" is missing (it is required, use [] for no content)"]
    );
    let r = ok(interpret(
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}, "error": null}),
        None,
    ));
    assert_eq!(r.problems.len(), 1);
    let r = ok(interpret(
        &json!({"id": 1, "result": {"content": [], "_meta": {"k": 1}}}),
        None,
    ));
    assert_eq!(r.problems, ["\"jsonrpc\" is missing (must be \"2.0\")"]);
    assert_eq!(r.meta, Some(json!({"k": 1})));
    let r = ok(interpret(&call(json!({"content": [], "resultType": "complete"})), None));
    assert!(r.problems.is_empty());
}

#[test]
fn sniffing() {
    assert_eq!(sniff_mime(PNG), Some("image/png"));
    assert_eq!(sniff_mime(JPEG), Some("image/jpeg"));
    assert_eq!(sniff_mime(b"GIF89a\x01\0"), Some("image/gif"));
    assert_eq!(sniff_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    assert_eq!(sniff_mime(WAV), Some("audio/wav"));
    assert_eq!(sniff_mime(b"ID3\x04\0\0\0\0\0\0"), Some("audio/mpeg"));
    assert_eq!(sniff_mime(&[0xFF, 0xFB, 0x90, 0x64]), Some("audio/mpeg")); // MPEG-1 layer III, 128 kbit/s
    assert_eq!(sniff_mime(&[0xFF, 0xF1, 0x50, 0x80]), Some("audio/aac")); // ADTS
    assert_eq!(sniff_mime(b"OggS\0\x02"), Some("audio/ogg"));
    assert_eq!(sniff_mime(b"fLaC\0\0\0\x22"), Some("audio/flac"));
    assert_eq!(sniff_mime(b"%PDF-1.7"), Some("application/pdf"));
    assert_eq!(sniff_mime(b"RIFF\0\0\0\0AVI "), None);
    assert_eq!(sniff_mime(b"hello"), None);
    assert_eq!(sniff_mime(&[0xFF, 0xFF, 0xFF]), None);
    assert_eq!(sniff_mime(&[0xFF]), None);
    assert_eq!(sniff_mime(&[]), None);
}

#[test]
fn extensions() {
    assert_eq!(file_extension("image/png"), "png");
    assert_eq!(file_extension("IMAGE/JPEG"), "jpg");
    assert_eq!(file_extension("audio/wav"), "wav");
    assert_eq!(file_extension("audio/x-wav"), "wav");
    assert_eq!(file_extension("audio/mpeg"), "mp3");
    assert_eq!(file_extension("audio/mp3"), "mp3");
    assert_eq!(file_extension("audio/ogg; codecs=opus"), "ogg");
    assert_eq!(file_extension("audio/flac"), "flac");
    assert_eq!(file_extension("image/svg+xml"), "svg");
    assert_eq!(file_extension("application/ld+json"), "json");
    assert_eq!(file_extension("text/x-rust"), "rs");
    assert_eq!(file_extension("text/x-unknown"), "txt");
    assert_eq!(file_extension("application/octet-stream"), "bin");
    assert_eq!(file_extension(""), "bin");
}

/// A few hundred random-ish and mutated shapes; the point is that nothing panics.
#[test]
fn never_panics_on_random_shapes() {
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }
    const KEYS: &[&str] = &[
        "type",
        "text",
        "data",
        "mimeType",
        "uri",
        "name",
        "blob",
        "resource",
        "size",
        "annotations",
        "content",
        "isError",
        "structuredContent",
        "_meta",
        "result",
        "error",
        "code",
        "message",
        "jsonrpc",
        "id",
        "title",
        "priority",
        "audience",
        "resultType",
        "task",
    ];
    const STRINGS: &[&str] = &[
        "text",
        "image",
        "audio",
        "resource",
        "resource_link",
        "true",
        "",
        "iVBORw0KGgo=",
        "%%%",
        "image/png",
        "audio/wav",
        "data:image/png;base64,AAAA",
        "{\"a\":[1,2]}",
        "[",
        "é😀",
        "2.0",
        "complete",
        "input_required",
        "http://json-schema.org/draft-07/schema#",
        "https://x/y",
        "#/$defs/x",
    ];
    fn random_value(rng: &mut Rng, depth: usize) -> Value {
        match rng.below(if depth > 4 { 6 } else { 9 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 0),
            2 => json!(rng.next() as i64 % 70000 - 35000),
            3 => json!(rng.below(1000) as f64 / 7.0 - 50.0),
            4 | 5 => json!(STRINGS[rng.below(STRINGS.len())]),
            6 | 7 => {
                let mut m = Map::new();
                for _ in 0..rng.below(5) {
                    m.insert(KEYS[rng.below(KEYS.len())].to_owned(), random_value(rng, depth + 1));
                }
                Value::Object(m)
            }
            _ => Value::Array((0..rng.below(4)).map(|_| random_value(rng, depth + 1)).collect()),
        }
    }
    fn mutate(rng: &mut Rng, v: &mut Value, depth: usize) {
        let replace = rng.below(6) == 0 || depth > 6;
        match v {
            _ if replace => *v = random_value(rng, depth),
            Value::Object(m) if !m.is_empty() => {
                let k = m.keys().nth(rng.below(m.len())).cloned().unwrap_or_default();
                if let Some(child) = m.get_mut(&k) {
                    mutate(rng, child, depth + 1);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                mutate(rng, &mut a[i], depth + 1);
            }
            _ => *v = random_value(rng, depth),
        }
    }
    let seeds: Vec<Value> = [
        NODE_CALL_OK,
        NODE_CALL_FAIL,
        NODE_METHOD_NOT_FOUND,
        PY_CALL_OK,
        PY_METHOD_NOT_FOUND,
    ]
    .iter()
    .map(|s| frame(s))
    .chain([call(json!({"content": [
                {"type": "image", "data": b64(PNG), "mimeType": "image/png", "annotations": {"priority": 1}},
                {"type": "audio", "data": b64(WAV), "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "a://b", "name": "b", "size": 3},
                {"type": "resource", "resource": {"uri": "a://c", "blob": b64(JPEG), "mimeType": "image/jpeg"}},
                {"type": "resource", "resource": {"uri": "a://d", "text": "t"}}
            ], "structuredContent": {"a": 1}, "isError": false, "_meta": {}}))])
    .collect();
    let schemas: Vec<Option<Value>> = vec![
        None,
        output_schema(NODE_LIST, "search_notes"),
        output_schema(PY_LIST, "search_notes"),
        Some(json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}})),
        Some(json!({"$ref": "#/nowhere"})),
        Some(json!({"$schema": "http://json-schema.org/draft-04/schema#", "id": "x", "type": "object"})),
        Some(json!({"$schema": "https://example.com/custom"})),
        Some(json!({"type": "array", "items": {"$ref": "#"}})),
        Some(json!("not a schema")),
    ];
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    // [success, failure, protocol error, malformed]; block kinds seen; problems seen
    let mut outcomes = [0usize; 4];
    let mut block_kinds = std::collections::HashSet::new();
    let mut problems = 0;
    for round in 0..400 {
        let mut v = if round % 4 == 0 {
            random_value(&mut rng, 0)
        } else {
            seeds[rng.below(seeds.len())].clone()
        };
        for _ in 0..=rng.below(3) {
            mutate(&mut rng, &mut v, 0);
        }
        let schema = &schemas[rng.below(schemas.len())];
        let outcome = interpret(&v, schema.as_ref());
        outcomes[match &outcome {
            CallOutcome::ToolSuccess(_) => 0,
            CallOutcome::ToolFailure(_) => 1,
            CallOutcome::ProtocolError { .. } => 2,
            CallOutcome::Malformed(_) => 3,
        }] += 1;
        if let Some(r) = outcome.tool_result() {
            problems += r.problems.len();
            for b in &r.blocks {
                block_kinds.insert(std::mem::discriminant(b));
                if let Block::Image { mime, .. } | Block::Audio { mime, .. } = b {
                    let _ = file_extension(mime);
                }
            }
        }
    }
    // the shapes really do cover the interesting cases
    assert!(outcomes.iter().all(|&n| n > 0), "{outcomes:?}");
    assert!(block_kinds.len() >= 5, "{block_kinds:?}");
    assert!(problems > 50, "{problems}");
}
