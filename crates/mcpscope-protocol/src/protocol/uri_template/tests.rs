//! RFC 6570 expansion (the RFC's own examples), parsing errors, and matching URIs back to values.

use super::*;
use serde_json::json;

fn rfc_values() -> HashMap<String, Value> {
    let v = json!({
        "count": ["one", "two", "three"],
        "dom": ["example", "com"],
        "dub": "me/too",
        "hello": "Hello World!",
        "half": "50%",
        "var": "value",
        "who": "fred",
        "base": "http://example.com/home/",
        "path": "/foo/bar",
        "list": ["red", "green", "blue"],
        "keys": {"semi": ";", "dot": ".", "comma": ","},
        "v": "6",
        "x": "1024",
        "y": "768",
        "empty": "",
        "empty_keys": {},
        "undef": null
    });
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn expand(t: &str) -> String {
    UriTemplate::parse(t)
        .unwrap_or_else(|e| panic!("{t}: {e}"))
        .expand(&rfc_values())
}

fn check(cases: &[(&str, &str)]) {
    for (template, expected) in cases {
        assert_eq!(expand(template), *expected, "template {template}");
    }
}

/// `keys` is an associative array, so the RFC allows any pair order; `expected` lists the pairs
/// in the RFC's order, `joiner` is what separates them.
fn check_keys(template: &str, lead: &str, pairs: [&str; 3], joiner: &str) {
    let got = expand(template);
    let perms = [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]];
    let options: Vec<String> = perms
        .iter()
        .map(|p| format!("{lead}{}", p.iter().map(|&i| pairs[i]).collect::<Vec<_>>().join(joiner)))
        .collect();
    assert!(
        options.contains(&got),
        "template {template}: got {got}, expected one of {options:?}"
    );
    // serde_json's preserve_order keeps the RFC's own order.
    assert_eq!(got, options[0], "template {template}");
}

#[test]
fn rfc_3_2_1_variable_expansion() {
    check(&[
        ("{count}", "one,two,three"),
        ("{count*}", "one,two,three"),
        ("{/count}", "/one,two,three"),
        ("{/count*}", "/one/two/three"),
        ("{;count}", ";count=one,two,three"),
        ("{;count*}", ";count=one;count=two;count=three"),
        ("{?count}", "?count=one,two,three"),
        ("{?count*}", "?count=one&count=two&count=three"),
        ("{&count*}", "&count=one&count=two&count=three"),
    ]);
}

#[test]
fn rfc_3_2_2_simple_string_expansion() {
    check(&[
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        ("{half}", "50%25"),
        ("O{empty}X", "OX"),
        ("O{undef}X", "OX"),
        ("{x,y}", "1024,768"),
        ("{x,hello,y}", "1024,Hello%20World%21,768"),
        ("?{x,empty}", "?1024,"),
        ("?{x,undef}", "?1024"),
        ("?{undef,y}", "?768"),
        ("{var:3}", "val"),
        ("{var:30}", "value"),
        ("{list}", "red,green,blue"),
        ("{list*}", "red,green,blue"),
    ]);
    check_keys("{keys}", "", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("{keys*}", "", ["semi=%3B", "dot=.", "comma=%2C"], ",");
}

#[test]
fn rfc_3_2_3_reserved_expansion() {
    check(&[
        ("{+var}", "value"),
        ("{+hello}", "Hello%20World!"),
        ("{+half}", "50%25"),
        ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
        ("{+base}index", "http://example.com/home/index"),
        ("O{+empty}X", "OX"),
        ("O{+undef}X", "OX"),
        ("{+path}/here", "/foo/bar/here"),
        ("here?ref={+path}", "here?ref=/foo/bar"),
        ("up{+path}{var}/here", "up/foo/barvalue/here"),
        ("{+x,hello,y}", "1024,Hello%20World!,768"),
        ("{+path,x}/here", "/foo/bar,1024/here"),
        ("{+path:6}/here", "/foo/b/here"),
        ("{+list}", "red,green,blue"),
        ("{+list*}", "red,green,blue"),
    ]);
    check_keys("{+keys}", "", ["semi,;", "dot,.", "comma,,"], ",");
    check_keys("{+keys*}", "", ["semi=;", "dot=.", "comma=,"], ",");
}

#[test]
fn rfc_3_2_4_fragment_expansion() {
    check(&[
        ("{#var}", "#value"),
        ("{#hello}", "#Hello%20World!"),
        ("{#half}", "#50%25"),
        ("foo{#empty}", "foo#"),
        ("foo{#undef}", "foo"),
        ("{#x,hello,y}", "#1024,Hello%20World!,768"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("{#path:6}/here", "#/foo/b/here"),
        ("{#list}", "#red,green,blue"),
        ("{#list*}", "#red,green,blue"),
    ]);
    check_keys("{#keys}", "#", ["semi,;", "dot,.", "comma,,"], ",");
    check_keys("{#keys*}", "#", ["semi=;", "dot=.", "comma=,"], ",");
}

#[test]
fn rfc_3_2_5_label_expansion() {
    check(&[
        ("{.who}", ".fred"),
        ("{.who,who}", ".fred.fred"),
        ("{.half,who}", ".50%25.fred"),
        ("www{.dom*}", "www.example.com"),
        ("X{.var}", "X.value"),
        ("X{.empty}", "X."),
        ("X{.undef}", "X"),
        ("X{.var:3}", "X.val"),
        ("X{.list}", "X.red,green,blue"),
        ("X{.list*}", "X.red.green.blue"),
        ("X{.empty_keys}", "X"),
        ("X{.empty_keys*}", "X"),
    ]);
    check_keys("X{.keys}", "X.", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("X{.keys*}", "X.", ["semi=%3B", "dot=.", "comma=%2C"], ".");
}

#[test]
fn rfc_3_2_6_path_segment_expansion() {
    check(&[
        ("{/who}", "/fred"),
        ("{/who,who}", "/fred/fred"),
        ("{/half,who}", "/50%25/fred"),
        ("{/who,dub}", "/fred/me%2Ftoo"),
        ("{/var}", "/value"),
        ("{/var,empty}", "/value/"),
        ("{/var,undef}", "/value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{/var:1,var}", "/v/value"),
        ("{/list}", "/red,green,blue"),
        ("{/list*}", "/red/green/blue"),
        ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
    ]);
    check_keys("{/keys}", "/", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("{/keys*}", "/", ["semi=%3B", "dot=.", "comma=%2C"], "/");
}

#[test]
fn rfc_3_2_7_path_style_parameter_expansion() {
    check(&[
        ("{;who}", ";who=fred"),
        ("{;half}", ";half=50%25"),
        ("{;empty}", ";empty"),
        ("{;v,empty,who}", ";v=6;empty;who=fred"),
        ("{;v,bar,who}", ";v=6;who=fred"),
        ("{;x,y}", ";x=1024;y=768"),
        ("{;x,y,empty}", ";x=1024;y=768;empty"),
        ("{;x,y,undef}", ";x=1024;y=768"),
        ("{;hello:5}", ";hello=Hello"),
        ("{;list}", ";list=red,green,blue"),
        ("{;list*}", ";list=red;list=green;list=blue"),
    ]);
    check_keys("{;keys}", ";keys=", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("{;keys*}", ";", ["semi=%3B", "dot=.", "comma=%2C"], ";");
}

#[test]
fn rfc_3_2_8_form_style_query_expansion() {
    check(&[
        ("{?who}", "?who=fred"),
        ("{?half}", "?half=50%25"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("{?x,y,undef}", "?x=1024&y=768"),
        ("{?var:3}", "?var=val"),
        ("{?list}", "?list=red,green,blue"),
        ("{?list*}", "?list=red&list=green&list=blue"),
    ]);
    check_keys("{?keys}", "?keys=", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("{?keys*}", "?", ["semi=%3B", "dot=.", "comma=%2C"], "&");
}

#[test]
fn rfc_3_2_9_form_style_query_continuation() {
    check(&[
        ("{&who}", "&who=fred"),
        ("{&half}", "&half=50%25"),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ("{&x,y,undef}", "&x=1024&y=768"),
        ("{&var:3}", "&var=val"),
        ("{&list}", "&list=red,green,blue"),
        ("{&list*}", "&list=red&list=green&list=blue"),
    ]);
    check_keys("{&keys}", "&keys=", ["semi,%3B", "dot,.", "comma,%2C"], ",");
    check_keys("{&keys*}", "&", ["semi=%3B", "dot=.", "comma=%2C"], "&");
}

#[test]
fn rfc_3_2_1_undefined_and_empty_composites_are_skipped() {
    let mut values = rfc_values();
    values.insert("empty_list".into(), json!([]));
    for t in [
        "{empty_list}",
        "{?empty_list*}",
        "{;empty_keys}",
        "{/undef,empty_list}",
        "{#empty_keys*}",
    ] {
        assert_eq!(UriTemplate::parse(t).unwrap().expand(&values), "", "{t}");
    }
    assert_eq!(
        UriTemplate::parse("{?empty_list,x}").unwrap().expand(&values),
        "?x=1024"
    );
}

#[test]
fn scalars_utf8_and_literals() {
    let values: HashMap<String, Value> = [
        ("n".to_owned(), json!(42)),
        ("f".to_owned(), json!(1.5)),
        ("b".to_owned(), json!(true)),
        ("u".to_owned(), json!("é€😀")),
        ("mixed".to_owned(), json!(["a b", 7, null, false])),
        ("pct".to_owned(), json!("a%20b%zz")),
    ]
    .into_iter()
    .collect();
    let e = |t: &str| UriTemplate::parse(t).unwrap().expand(&values);
    assert_eq!(e("{n}/{f}/{b}"), "42/1.5/true");
    assert_eq!(e("{u}"), "%C3%A9%E2%82%AC%F0%9F%98%80");
    assert_eq!(e("{+u}"), "%C3%A9%E2%82%AC%F0%9F%98%80");
    assert_eq!(e("{u:2}"), "%C3%A9%E2%82%AC");
    assert_eq!(e("{?mixed}"), "?mixed=a%20b,7,false");
    // pct-encoded triplets are kept only for + and #; a stray '%' is always encoded
    assert_eq!(e("{pct}"), "a%2520b%25zz");
    assert_eq!(e("{+pct}"), "a%20b%25zz");
    assert_eq!(e("{#pct}"), "#a%20b%25zz");
    assert_eq!(e("{+pct:2}"), "a%20");
    // literals: allowed characters are copied, others pct-encoded, triplets kept
    assert_eq!(e("a b/ü%41{n}"), "a%20b/%C3%BC%4142");
    assert_eq!(e("plain"), "plain");
    assert_eq!(e(""), "");
}

#[test]
fn variables_in_order_deduplicated() {
    let t = UriTemplate::parse("x{a}{+b:3}/{#a,c*}{?d,b}{.e.f,g%20h}").unwrap();
    let vars = t.variables();
    let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e.f", "g%20h"]);
    assert_eq!(
        vars[0],
        Variable {
            name: "a".into(),
            operator: Operator::Simple,
            explode: false,
            prefix: None
        }
    );
    assert_eq!(vars[1].operator, Operator::Reserved);
    assert_eq!(vars[1].prefix, Some(3));
    assert_eq!(vars[2].operator, Operator::Fragment);
    assert!(vars[2].explode);
    assert_eq!(vars[3].operator, Operator::Query);
    assert_eq!(vars[4].operator, Operator::Label);
    assert_eq!(t.as_str(), "x{a}{+b:3}/{#a,c*}{?d,b}{.e.f,g%20h}");
    assert_eq!(t.to_string(), t.as_str());
    assert!(UriTemplate::parse("no variables").unwrap().variables().is_empty());
}

#[test]
fn parse_errors_have_positions_and_messages() {
    let cases: &[(&str, usize, &str)] = &[
        ("{/id*", 0, "unclosed '{'"),
        ("/id*}", 4, "unbalanced '}'"),
        ("a{b}c}", 5, "unbalanced '}'"),
        ("{/?id}", 2, "only one operator"),
        ("{var:prefix}", 5, "prefix length"),
        ("{var:0}", 5, "prefix length"),
        ("{var:10000}", 5, "prefix length"),
        ("{hello:2*}", 8, "both a prefix"),
        ("{hello*:2}", 7, "both explode"),
        ("{??hello}", 2, "only one operator"),
        ("{!hello}", 1, "reserved"),
        ("{=path}", 1, "reserved"),
        ("{|var*}", 1, "reserved"),
        ("{$var}", 1, "invalid operator or variable name"),
        ("{*keys?}", 1, "invalid operator or variable name"),
        ("{?empty=default,var}", 7, "invalid character '='"),
        ("{var}{-prefix|/-/|var}", 6, "invalid operator or variable name"),
        ("/h{#hello+}", 9, "invalid character '+'"),
        ("/resolution{?x, y}", 15, "expected a variable name, found ' '"),
        ("{}", 1, "empty expression"),
        ("{", 0, "unclosed '{'"),
        ("{a{b}}", 2, "'{' inside an expression"),
        ("{.a..b}", 4, "two dots"),
        ("{a.}", 2, "may not end with '.'"),
        ("{.}", 2, "expected a variable name, found '}'"),
        ("{%zz}", 1, "pct-encoded triplet"),
        ("{a,}", 3, "expected a variable name"),
        ("é{x", 1, "unclosed '{'"),
    ];
    for (template, position, fragment) in cases {
        let e = UriTemplate::parse(template).expect_err(template);
        assert_eq!(e.position, *position, "{template}: {e}");
        assert!(e.message.contains(fragment), "{template}: {e}");
        assert!(e.to_string().ends_with(&format!("at position {position}")), "{e}");
    }
    assert!("{ok}".parse::<UriTemplate>().is_ok());
}

fn m(t: &str, uri: &str) -> Option<HashMap<String, String>> {
    UriTemplate::parse(t).unwrap().match_uri(uri)
}

fn caps(pairs: &[(&str, &str)]) -> Option<HashMap<String, String>> {
    Some(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

#[test]
fn match_uri_simple_templates() {
    assert_eq!(
        m("test://template/{id}/data", "test://template/42/data"),
        caps(&[("id", "42")])
    );
    assert_eq!(m("test://template/{id}/data", "test://template/4/2/data"), None);
    assert_eq!(m("test://template/{id}/data", "test://static-text"), None);
    assert_eq!(
        m("users://{userId}/profile", "users://a%20b/profile"),
        caps(&[("userId", "a b")])
    );
    assert_eq!(
        m(
            "github://repos/{owner}/{repo}",
            "github://repos/modelcontextprotocol/rust-sdk"
        ),
        caps(&[("owner", "modelcontextprotocol"), ("repo", "rust-sdk")])
    );
    assert_eq!(m("file:///{path}", "file:///a/b.txt"), None);
    assert_eq!(
        m("users://{email}/profile", "users://a@b.c/profile"),
        caps(&[("email", "a@b.c")])
    );
    assert_eq!(m("x://{id}", "x://1?debug"), None);
    assert_eq!(m("x://{id}", "x://1#frag"), None);
    assert_eq!(m("x://{id}", "x://a,b"), caps(&[("id", "a,b")]));
    assert_eq!(m("file:///{+path}", "file:///a/b.txt"), caps(&[("path", "a/b.txt")]));
    assert_eq!(m("{+path}/here", "/foo/bar/here"), caps(&[("path", "/foo/bar")]));
    assert_eq!(m("{+a}/{b}", "x/y/z"), caps(&[("a", "x/y"), ("b", "z")]));
    assert_eq!(m("x{#frag}", "x#sec/1"), caps(&[("frag", "sec/1")]));
    assert_eq!(m("x{#frag}", "x"), caps(&[]));
    assert_eq!(m("{x,y}", "1024,768"), caps(&[("x", "1024"), ("y", "768")]));
    assert_eq!(m("db://{table}", "db://"), caps(&[("table", "")]));
    assert_eq!(m("a{x}b{x}", "a1b1"), caps(&[("x", "1")]));
    assert_eq!(m("a{x}b{x}", "a1b2"), None);
    assert_eq!(m("é/{x}", "%C3%A9/%C3%A9"), caps(&[("x", "é")]));
    assert_eq!(m("literal", "literal"), caps(&[]));
    assert_eq!(m("literal", "literalx"), None);
}

#[test]
fn match_uri_level_3_and_limits() {
    assert_eq!(
        m("search://{q}{?limit,page}", "search://rust?page=2&limit=10"),
        caps(&[("q", "rust"), ("limit", "10"), ("page", "2")])
    );
    assert_eq!(m("search://{q}{?limit}", "search://rust"), caps(&[("q", "rust")]));
    assert_eq!(m("search://{q}{?limit}", "search://rust?other=1"), None);
    assert_eq!(
        m("s://{q}{?next}", "s://a?next=/b?c=d"),
        caps(&[("q", "a"), ("next", "/b?c=d")])
    );
    assert_eq!(m("x{/a,b}", "x/1/2"), caps(&[("a", "1"), ("b", "2")]));
    assert_eq!(m("x{.ext}", "x.json"), caps(&[("ext", "json")]));
    assert_eq!(m("x{;v,w}", "x;v=6;w"), caps(&[("v", "6"), ("w", "")]));
    // explode is not supported by the matcher
    assert_eq!(m("x{/list*}", "x/a/b"), None);
    // a round trip through expand for a few values
    let t = UriTemplate::parse("mem://{ns}/{+key}{?v}").unwrap();
    let values: HashMap<String, Value> = [
        ("ns".to_owned(), json!("a b")),
        ("key".to_owned(), json!("k/1?x")),
        ("v".to_owned(), json!(3)),
    ]
    .into_iter()
    .collect();
    let uri = t.expand(&values);
    assert_eq!(uri, "mem://a%20b/k/1?x?v=3");
    assert_eq!(t.match_uri(&uri), caps(&[("ns", "a b"), ("key", "k/1?x"), ("v", "3")]));
}

#[test]
fn match_uri_pathological_input_terminates() {
    let t = UriTemplate::parse("{+a}{+b}{+c}{+d}{+e}{+f}x").unwrap();
    let uri = "y".repeat(2000);
    assert_eq!(t.match_uri(&uri), None);
}

#[test]
fn random_templates_never_panic() {
    let alphabet: Vec<char> = "{}+#./;?&=,!@|*:0123456789abc_%2Fé x".chars().collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let values = rfc_values();
    for _ in 0..3000 {
        let len = (next() % 16) as usize;
        let s: String = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        if let Ok(t) = UriTemplate::parse(&s) {
            let out = t.expand(&values);
            let _ = t.match_uri(&out);
            let _ = t.match_uri(&s);
            let _ = t.variables();
        }
    }
}
