#!/usr/bin/env python3
"""An MCP stdio server offering Skills over MCP (SEP-2640) for mcpscope's tests (stdlib only).

    python3 tests/servers/skills_server.py [--tamper PATH]... [--drop-frontmatter]
        [--yaml-bomb] [--bad-size JSON] [--deep-frontmatter N]

Speaks 2025-11-25 over stdio (one JSON object per line). Advertises the extension
`io.modelcontextprotocol/skills` under capabilities.extensions, and `resources`.
  * `skills/list` -> two skills, `pdf-processing` (SKILL.md, references/FORMS.md,
    scripts/fill.py) and `changelog` (SKILL.md only), each file with its size and
    `sha256:` digest, each skill with its frontmatter;
  * `resources/read` of a skill file -> its text; an unknown URI -> error -32002;
  * `--tamper PATH` (e.g. `pdf-processing/references/FORMS.md`): that file is served
    with other bytes of the same length, so only the digest gives it away;
  * `--drop-frontmatter`: pdf-processing's listing carries a `license` field its
    SKILL.md does not have;
  * `--yaml-bomb`: a third skill `bomb` whose SKILL.md frontmatter is a "billion laughs"
    (aliases of aliases; its size and digest are right, so only the YAML gives it away);
  * `--bad-size JSON`: pdf-processing's SKILL.md is listed with this `size` (a JSON value:
    `-5`, `"42"`, `123456789012345678901234567890`…);
  * `--deep-frontmatter N`: a third skill `deep` whose listed frontmatter nests N arrays deep;
  * `--huge-skill BYTES`: a third skill `huge` whose SKILL.md is about BYTES long (so its
    `resources/read` answer is one line of that size);
  * every `resources/read` is logged on stderr as `read URI`.
"""

import argparse
import hashlib
import json
import sys

SKILLS = {
    "pdf-processing": {
        "SKILL.md": (
            "---\n"
            "name: pdf-processing\n"
            "description: Extract, fill, and assemble PDF documents\n"
            "---\n\n"
            "# PDF processing\n\n"
            "Read references/FORMS.md before filling a form; run scripts/fill.py.\n"
        ),
        "references/FORMS.md": "# Forms\n\nField names are case-sensitive.\n",
        "scripts/fill.py": "print('filling')\n",
    },
    "changelog": {
        "SKILL.md": "---\nname: changelog\ndescription: Write a changelog entry\n---\n\nKeep it short.\n",
    },
}

FRONTMATTER = {
    "pdf-processing": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
    "changelog": {"name": "changelog", "description": "Write a changelog entry"},
}


# Nine levels of ten aliases each: 10^9 strings once the aliases are expanded.
BILLION_LAUGHS = (
    "---\n"
    "name: bomb\n"
    "lol0: &lol0 lol\n"
    + "".join(
        f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    + "---\n\nBoom.\n"
)


def digest(text):
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def tampered(text):
    # Same length, other bytes: only the digest can tell.
    return text[:-2] + ("X" if text[-2] != "X" else "Y") + text[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tamper", action="append", default=[])
    ap.add_argument("--drop-frontmatter", action="store_true")
    ap.add_argument("--yaml-bomb", action="store_true")
    ap.add_argument("--bad-size")
    ap.add_argument("--deep-frontmatter", type=int, default=0)
    ap.add_argument("--huge-skill", type=int, default=0)
    args = ap.parse_args()
    sys.setrecursionlimit(100000)
    if args.yaml_bomb:
        SKILLS["bomb"] = {"SKILL.md": BILLION_LAUGHS}
        FRONTMATTER["bomb"] = {"name": "bomb"}
    if args.huge_skill:
        SKILLS["huge"] = {"SKILL.md": "---\nname: huge\n---\n\n" + "h" * args.huge_skill + "\n"}
        FRONTMATTER["huge"] = {"name": "huge"}
    if args.deep_frontmatter:
        SKILLS["deep"] = {"SKILL.md": "---\nname: deep\n---\n\nDeep.\n"}
        nested = "deep"
        for _ in range(args.deep_frontmatter):
            nested = [nested]
        FRONTMATTER["deep"] = {"name": "deep", "nested": nested}

    def listing():
        skills = []
        for name, files in SKILLS.items():
            frontmatter = dict(FRONTMATTER[name])
            if args.drop_frontmatter and name == "pdf-processing":
                frontmatter["license"] = "MIT"
            skills.append({
                "uri": f"skill://{name}/SKILL.md",
                "frontmatter": frontmatter,
                "resources": [
                    {"uri": f"skill://{name}/{path}", "size": len(text.encode("utf-8")), "digest": digest(text)}
                    for path, text in files.items()
                ],
            })
            if args.bad_size is not None and name == "pdf-processing":
                skills[-1]["resources"][0]["size"] = json.loads(args.bad_size)
        return {"skills": skills}

    def read(uri):
        if uri.startswith("skill://"):
            name, _, path = uri[len("skill://"):].partition("/")
            text = SKILLS.get(name, {}).get(path)
            if text is not None:
                if f"{name}/{path}" in args.tamper:
                    text = tampered(text)
                return {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}
        return None

    def send(obj):
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            continue
        mid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        result = None
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
                "serverInfo": {"name": "skills-test", "version": "1.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "skills/list":
            result = listing()
        elif method == "resources/list":
            result = {"resources": []}
        elif method == "resources/read":
            uri = params.get("uri", "")
            print(f"read {uri}", file=sys.stderr, flush=True)
            result = read(uri)
            if result is None:
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32002, "message": f"Resource not found: {uri}"}})
                continue
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
