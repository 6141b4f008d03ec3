#!/usr/bin/env python3
"""A fake model provider for mcpscope's tests: OpenAI Chat Completions and Anthropic
Messages, streamed (SSE) or not, with tool calls, deterministic, on loopback.

    python3 tests/servers/fake_llm.py [--port N]     # prints "listening on http://127.0.0.1:PORT"

The official SDKs (PyPI `openai`, `anthropic`) accept it as the real thing
(tests/clients/fake_llm_sdk_check.py checks that). The key is `test-key`
(`Authorization: Bearer` or `x-api-key`); anything else gets the provider's 401.

What the "model" does, from the last message:
- a tool result: answers "The tool said: TEXT" and stops;
- "call NAME {json}" with NAME among the tools offered: asks for that tool with those arguments
  (streamed in three pieces);
- "fail STATUS": answers that HTTP status with the provider's error body;
- "call! NAME {json}": asks for NAME even when it was not offered (a tool that does not exist);
- "forever call NAME {json}" as the conversation's first message: asks for NAME on every turn,
  whatever the tool said (a model that calls tools forever);
- "rate limited once": answers 429 with `retry-after: 1` the first time, then as usual;
- "rate limited for an hour": always 429 with `retry-after: 3600`;
- "too long": answers 400 as a context-length error (`context_length_exceeded`);
- "cut": starts streaming, then closes the connection without ending the stream;
- "error event": streams an error event (Anthropic's `error`, OpenAI's `{"error": …}` chunk);
- anything else: "You said: TEXT".
A model whose name holds "lazy" never asks for a tool ("I would rather answer myself.");
one whose name holds "notools" refuses a request that offers tools (400), as models without tool
support do.
Usage: input tokens are the words of the request's messages, output tokens the words answered;
a model whose name holds "priced" also reports its cost in the usage, as OpenRouter does
(`usage.cost`, in credits: 2 per million input tokens, 8 per million output tokens).
"""
import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = "test-key"
# Prompts already answered 429 once ("rate limited once").
RATE_LIMITED = set()


def words(text: str) -> int:
    return len(text.split())


def message_text(content) -> str:
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict):
            if part.get("type") == "text":
                out.append(part.get("text", ""))
            elif part.get("type") == "tool_result":
                c = part.get("content")
                out.append(message_text(c) if not isinstance(c, str) else c)
    return " ".join(out)


def decide(last_role: str, last_text: str, tool_result, tools: list, model: str = "", first_text: str = ""):
    """(kind, payload): ("text", str) | ("tool", (name, args)) | ("fail", status) | ("cut", None) | ("error", None)."""
    m = re.match(r"\s*forever call\s+([A-Za-z0-9_\-]+)\s*(\{.*\})?\s*$", first_text, re.S)
    if m and m.group(1) in tools:
        return "tool", (m.group(1), json.loads(m.group(2)) if m.group(2) else {})
    if tool_result is not None:
        return "text", f"The tool said: {tool_result}"
    if "notools" in model and tools:
        return "status", (400, "this model does not support tools", "invalid_request_error")
    if "lazy" in model:
        return "text", "I would rather answer myself."
    m = re.match(r"\s*call(!?)\s+([A-Za-z0-9_\-]+)\s*(\{.*\})?\s*$", last_text, re.S)
    if m and (m.group(1) == "!" or m.group(2) in tools):
        args = json.loads(m.group(3)) if m.group(3) else {}
        return "tool", (m.group(2), args)
    if last_text.strip() == "rate limited once" and last_text not in RATE_LIMITED:
        RATE_LIMITED.add(last_text)
        return "status", (429, "Rate limit reached; try again in 1s", "1")
    if last_text.strip() == "rate limited for an hour":
        return "status", (429, "Rate limit reached for the hour", "3600")
    if last_text.strip() == "too long":
        return "status", (400, "This model's maximum context length is 8192 tokens. However, your messages "
                               "resulted in 9001 tokens.", "context_length_exceeded")
    m = re.match(r"\s*fail\s+(\d{3})", last_text)
    if m:
        return "fail", int(m.group(1))
    if last_text.strip() == "cut":
        return "cut", None
    if last_text.strip() == "error event":
        return "error", None
    return "text", f"You said: {last_text}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    # ------------------------------------------------------------ plumbing
    def anthropic(self) -> bool:
        return self.path.startswith("/v1/messages") or "anthropic-version" in self.headers

    def authorized(self) -> bool:
        bearer = self.headers.get("Authorization", "")
        return bearer == f"Bearer {KEY}" or self.headers.get("x-api-key") == KEY

    def send_json(self, status: int, body, retry_after: str = "0") -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 429:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(data)

    def send_error_body(self, status: int, message: str, extra: str = "0") -> None:
        """`extra`: a 429's retry-after, or a 400's error code."""
        if self.anthropic():
            kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
                    529: "overloaded_error", 400: "invalid_request_error"}.get(status, "api_error")
            self.send_json(status, {"type": "error", "error": {"type": kind, "message": message}}, extra)
        else:
            kind = {401: "invalid_request_error", 429: "rate_limit_exceeded",
                    400: "invalid_request_error"}.get(status, "server_error")
            code = extra if status == 400 else None
            self.send_json(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, extra)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def event(self, data, name=None) -> None:
        text = (f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        self.wfile.write(text.encode())
        self.wfile.flush()
        time.sleep(0.002)

    # ------------------------------------------------------------ routes
    def do_GET(self):
        if not self.authorized():
            return self.send_error_body(401, "Incorrect API key provided.")
        if self.path.rstrip("/") != "/v1/models":
            return self.send_error_body(404, f"no route {self.path}")
        if self.anthropic():
            data = [{"type": "model", "id": "fake-claude", "display_name": "Fake Claude",
                     "created_at": "2025-01-01T00:00:00Z"}]
            self.send_json(200, {"data": data, "has_more": False, "first_id": "fake-claude", "last_id": "fake-claude"})
        else:
            self.send_json(200, {"object": "list", "data": [
                {"id": "fake-gpt", "object": "model", "created": 0, "owned_by": "mcpscope"}]})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.send_error_body(400, "the body is not JSON")
        if not self.authorized():
            return self.send_error_body(401, "Incorrect API key provided.")
        if self.path.rstrip("/") == "/v1/messages":
            return self.messages(body)
        if self.path.rstrip("/") == "/v1/chat/completions":
            return self.chat(body)
        return self.send_error_body(404, f"no route {self.path}")

    # ------------------------------------------------------------ OpenAI
    def chat(self, body):
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        tool_result = last.get("content") if last.get("role") == "tool" else None
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        first = next((m for m in msgs if m.get("role") == "user"), {})
        kind, payload = decide(last.get("role", ""), message_text(last.get("content")), tool_result, tools,
                               str(body.get("model", "")), message_text(first.get("content")))
        if kind == "fail":
            return self.send_error_body(payload, f"failing on purpose with {payload}")
        if kind == "status":
            return self.send_error_body(*payload)
        usage_in = sum(words(message_text(m.get("content"))) for m in msgs)
        model = body.get("model", "fake-gpt")
        created = 1_780_000_000
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "refusal": None}
            if kind == "tool":
                name, args = payload
                message["tool_calls"] = [{"id": "call_1", "type": "function",
                                          "function": {"name": name, "arguments": json.dumps(args)}}]
                finish, out = "tool_calls", 3
            else:
                message["content"] = payload or ""
                finish, out = "stop", words(payload or "")
            return self.send_json(200, {
                "id": "chatcmpl-fake", "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": {"prompt_tokens": usage_in, "completion_tokens": out, "total_tokens": usage_in + out}})
        self.start_stream()

        def chunk(delta, finish=None):
            self.event({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})

        chunk({"role": "assistant", "content": ""})
        if kind == "cut":
            chunk({"content": "This answer is cut"})
            return
        if kind == "error":
            self.event({"error": {"message": "the fake failed mid-stream", "type": "server_error"}})
            return
        if kind == "tool":
            name, args = payload
            text = json.dumps(args)
            third = max(1, len(text) // 3)
            chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": name, "arguments": ""}}]})
            for piece in (text[:third], text[third:2 * third], text[2 * third:]):
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            chunk({}, "tool_calls")
            out = 3
        else:
            pieces = re.findall(r"\S+\s*", payload) or [""]
            for p in pieces:
                chunk({"content": p})
            chunk({}, "stop")
            out = words(payload)
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": usage_in, "completion_tokens": out, "total_tokens": usage_in + out}
            if "priced" in model:
                usage["cost"] = (usage_in * 2 + out * 8) / 1_000_000
            self.event({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created,
                        "model": model, "choices": [], "usage": usage})
        self.event("[DONE]")

    # ------------------------------------------------------------ Anthropic
    def messages(self, body):
        msgs = body.get("messages") or []
        last = msgs[-1] if msgs else {}
        content = last.get("content")
        tool_result = None
        if isinstance(content, list):
            results = [p for p in content if isinstance(p, dict) and p.get("type") == "tool_result"]
            if results:
                c = results[-1].get("content")
                tool_result = c if isinstance(c, str) else message_text(c)
        tools = [t.get("name") for t in body.get("tools") or []]
        first = next((m for m in msgs if m.get("role") == "user"), {})
        kind, payload = decide(last.get("role", ""), message_text(content), tool_result, tools,
                               str(body.get("model", "")), message_text(first.get("content")))
        if kind == "fail":
            return self.send_error_body(payload, f"failing on purpose with {payload}")
        if kind == "status":
            return self.send_error_body(*payload)
        usage_in = sum(words(message_text(m.get("content"))) for m in msgs) + words(str(body.get("system") or ""))
        model = body.get("model", "fake-claude")
        if not body.get("stream"):
            if kind == "tool":
                name, args = payload
                blocks = [{"type": "tool_use", "id": "toolu_1", "name": name, "input": args}]
                stop, out = "tool_use", 3
            else:
                blocks = [{"type": "text", "text": payload or ""}]
                stop, out = "end_turn", words(payload or "")
            return self.send_json(200, {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": blocks,
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": usage_in, "output_tokens": out}})
        self.start_stream()
        self.event({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": usage_in, "output_tokens": 1}}},
            "message_start")
        self.event({"type": "ping"}, "ping")
        if kind == "error":
            self.event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error")
            return
        if kind == "tool":
            name, args = payload
            text = json.dumps(args)
            third = max(1, len(text) // 3)
            self.event({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}},
                       "content_block_start")
            for piece in (text[:third], text[third:2 * third], text[2 * third:]):
                self.event({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
            stop, out = "tool_use", 3
        else:
            self.event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                       "content_block_start")
            text = "This answer is cut" if kind == "cut" else payload
            for p in re.findall(r"\S+\s*", text) or [""]:
                self.event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                           "content_block_delta")
            if kind == "cut":
                return
            stop, out = "end_turn", words(payload)
        self.event({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self.event({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": out}}, "message_delta")
        self.event({"type": "message_stop"}, "message_stop")


def main() -> None:
    port = 0
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
