#!/usr/bin/env python3
"""Checks that the official SDKs (PyPI `openai`, `anthropic`) take tests/servers/fake_llm.py
for the real thing: models listed, a text answer and a tool call, streamed and not, usage,
and the providers' own errors (401, 500) raised as the SDKs' own exceptions.

    python3 tests/clients/fake_llm_sdk_check.py BASE_URL      # e.g. http://127.0.0.1:PORT

Prints one line per check, "ok: …" or "FAILED: …", and exits 1 if any failed.
"""
import sys

import anthropic
import openai

failures = []


def check(what: str, cond: bool, detail="") -> None:
    print(("ok: " if cond else "FAILED: ") + what + (f" ({detail})" if detail and not cond else ""))
    if not cond:
        failures.append(what)


def main() -> None:
    base = sys.argv[1].rstrip("/")
    tool = {"type": "function", "function": {"name": "echo", "description": "Echo",
                                              "parameters": {"type": "object",
                                                             "properties": {"message": {"type": "string"}}}}}
    o = openai.OpenAI(base_url=f"{base}/v1", api_key="test-key", max_retries=0)
    check("openai: models listed", [m.id for m in o.models.list()] == ["fake-gpt"])
    r = o.chat.completions.create(model="fake-gpt", messages=[{"role": "user", "content": "hello there"}])
    check("openai: a text answer", r.choices[0].message.content == "You said: hello there", r)
    check("openai: usage", r.usage.prompt_tokens == 2 and r.usage.completion_tokens == 4, r.usage)
    text = ""
    calls = {}
    finish = None
    usage = None
    stream = o.chat.completions.create(
        model="fake-gpt", stream=True, stream_options={"include_usage": True}, tools=[tool],
        messages=[{"role": "user", "content": 'call echo {"message": "hi"}'}])
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            text += c.delta.content or ""
            for tc in c.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"name": "", "args": ""})
                slot["name"] += (tc.function.name or "") if tc.function else ""
                slot["args"] += (tc.function.arguments or "") if tc.function else ""
            finish = c.finish_reason or finish
    check("openai: a streamed tool call", calls.get(0) == {"name": "echo", "args": '{"message": "hi"}'}, calls)
    check("openai: finish_reason tool_calls", finish == "tool_calls", finish)
    check("openai: streamed usage", usage is not None and usage.completion_tokens == 3, usage)
    with o.chat.completions.stream(model="fake-gpt", messages=[{"role": "user", "content": "stream me"}]) as s:
        final = s.get_final_completion()
    check("openai: the stream helper assembles the text", final.choices[0].message.content == "You said: stream me",
          final)
    try:
        openai.OpenAI(base_url=f"{base}/v1", api_key="wrong", max_retries=0).models.list()
        check("openai: a wrong key is refused", False)
    except openai.AuthenticationError:
        check("openai: a wrong key is refused", True)
    try:
        o.chat.completions.create(model="fake-gpt", messages=[{"role": "user", "content": "fail 500"}])
        check("openai: a 500 raises", False)
    except openai.InternalServerError as e:
        check("openai: a 500 raises", "failing on purpose" in str(e), e)

    a = anthropic.Anthropic(base_url=base, api_key="test-key", max_retries=0)
    check("anthropic: models listed", [m.id for m in a.models.list()] == ["fake-claude"])
    m = a.messages.create(model="fake-claude", max_tokens=100, messages=[{"role": "user", "content": "hello"}])
    check("anthropic: a text answer", m.content[0].text == "You said: hello", m)
    check("anthropic: usage", m.usage.input_tokens == 1 and m.usage.output_tokens == 3, m.usage)
    atool = {"name": "echo", "description": "Echo", "input_schema": {"type": "object"}}
    with a.messages.stream(model="fake-claude", max_tokens=100, tools=[atool],
                           messages=[{"role": "user", "content": 'call echo {"message": "hi"}'}]) as s:
        final = s.get_final_message()
    use = [b for b in final.content if b.type == "tool_use"]
    check("anthropic: a streamed tool use", len(use) == 1 and use[0].name == "echo" and use[0].input == {"message": "hi"},
          final)
    check("anthropic: stop_reason tool_use", final.stop_reason == "tool_use", final.stop_reason)
    with a.messages.stream(model="fake-claude", max_tokens=100, messages=[
            {"role": "user", "content": 'call echo {"message": "hi"}'},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "echo",
                                                "input": {"message": "hi"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]}]) as s:
        text = s.get_final_text()
    check("anthropic: a tool result answered, streamed", text == "The tool said: hi", text)
    try:
        a.messages.create(model="fake-claude", max_tokens=10, messages=[{"role": "user", "content": "fail 529"}])
        check("anthropic: an overload raises", False)
    except anthropic.APIStatusError as e:
        check("anthropic: an overload raises", e.status_code == 529, e)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
