#!/usr/bin/env bash
# The --command for the official conformance suite's client scenarios
# (@modelcontextprotocol/conformance@0.2.0-alpha.12, the ones outside auth):
# each scenario is run through the mcpscope invocation a user would type.
#
#   npx conformance client --command tests/conformance/client-2026.sh --scenario S
#
# The harness appends the server URL as the last argument and sets
# MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION (the spec version
# the scenario targets) and, for some scenarios, MCP_CONFORMANCE_CONTEXT (JSON).
# MCPSCOPE names the binary (default: target/debug/mcpscope of this checkout).
# Node (which runs the harness, so it is on PATH) reads the context JSON.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MCPSCOPE="${MCPSCOPE:-$here/../../target/debug/mcpscope}"
URL="${*: -1}"
S="${MCP_CONFORMANCE_SCENARIO:-}"
PV="${MCP_CONFORMANCE_PROTOCOL_VERSION:-2025-11-25}"
CTX="${MCP_CONFORMANCE_CONTEXT:-}"
[ -n "$CTX" ] || CTX='{}'

# ctx EXPR: a value of the context as compact JSON (EXPR is JavaScript on `c`).
ctx() { node -e 'const c=JSON.parse(process.argv[1]);const v=('"$1"');process.stdout.write(typeof v==="string"?v:JSON.stringify(v))' "$CTX"; }

M=("$MCPSCOPE" call --server-url "$URL")
[ "$PV" = 2026-07-28 ] && M+=(--era modern)

case "$S" in
  initialize|request-metadata|json-schema-ref-no-deref)
    exec "${M[@]}" --method tools/list ;;
  tools_call)
    exec "${M[@]}" --tool-name add_numbers --tool-arg a=2 --tool-arg b=3 ;;
  elicitation-sep1034-client-defaults)
    exec "${M[@]}" --tool-name test_client_elicitation_defaults --elicit-accept '{}' ;;
  sse-retry)
    exec "${M[@]}" --tool-name test_reconnection ;;
  sep-2322-client-request-state)
    for t in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
      "${M[@]}" --tool-name "$t" --elicit-accept '{"confirmed":true}' || exit $?
    done ;;
  http-standard-headers)
    "${M[@]}" --method tools/list &&
      "${M[@]}" --tool-name test_headers &&
      "${M[@]}" --tool-name my-hyphenated-tool &&
      "${M[@]}" --method resources/list &&
      "${M[@]}" --method resources/read --uri 'file:///path/to/file%20name.txt' &&
      "${M[@]}" --method prompts/list &&
      exec "${M[@]}" --prompt-name test_prompt ;;
  http-custom-headers)
    n=$(ctx 'c.toolCalls.length') || exit 1
    for i in $(seq 0 $((n - 1))); do
      "${M[@]}" --tool-name "$(ctx "c.toolCalls[$i].name")" --tool-args "$(ctx "c.toolCalls[$i].arguments")" || exit $?
    done ;;
  http-invalid-tool-headers)
    # valid_tool is called; every other tool breaks an x-mcp-header rule and
    # is refused (exit 1) without being called.
    "${M[@]}" --tool-name valid_tool --tool-arg region=us-west1 || exit $?
    for t in invalid_empty_header invalid_object_header invalid_duplicate_diff_case invalid_control_char_name; do
      if "${M[@]}" --tool-name "$t" --tool-arg region=us-west1; then
        echo "client-2026.sh: mcpscope called $t" >&2
        exit 1
      fi
    done ;;
  json-schema-2020-12-preservation)
    schema=$("${M[@]}" --method tools/list |
      node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const t=JSON.parse(s).tools.find(t=>t.name==="json_schema_2020_12_tool");process.stdout.write(JSON.stringify(t.inputSchema))})') || exit 1
    exec "${M[@]}" --tool-name json_schema_echo --tool-args "{\"schema\":$schema}" ;;
  sep-2640-client-no-prefetch)
    exec "$MCPSCOPE" skills list --server-url "$URL" ;;
  sep-2640-client-verify-*)
    # Load the skill and one supporting file: SKILL.md does not match the
    # listing (digest, size or frontmatter), so the load stops with exit 1
    # before references/FORMS.md is read.
    exec "$MCPSCOPE" skills get pdf-processing --file references/FORMS.md --server-url "$URL" ;;
  *)
    echo "client-2026.sh: no invocation for scenario '$S'" >&2
    exit 64 ;;
esac
