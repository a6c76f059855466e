#!/usr/bin/env python3
"""A scripted editor session against `cellscope lsp` for `make demo` (Python stdlib only).

Opens the article's MNIST network as an editor would, prints the diagnostics the server pushes,
the hover and inlay hints of construct, applies the "Change in_channels to 9216" and
"Replace ops.MaxPool2d" quick fixes the server offers, and shows that the errors are gone.
Exits non-zero if the server does not behave as described.
"""
import json
import os
import subprocess
import sys


class Client:
    def __init__(self, binary):
        self.proc = subprocess.Popen([binary, "lsp", "--debounce-ms", "0"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 1

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("lsp-demo: the server closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == rid and "method" not in m:
                if "error" in m:
                    raise SystemExit(f"lsp-demo: {method} failed: {m['error']}")
                return m.get("result")

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def diagnostics(self, uri, version):
        while True:
            m = self.read()
            p = m.get("params", {})
            if m.get("method") == "textDocument/publishDiagnostics" and p.get("uri") == uri \
                    and p.get("version") == version:
                return p["diagnostics"]


def apply(text, edits):
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                    reverse=True):
        s, t = e["range"]["start"], e["range"]["end"]
        a = offsets[s["line"]] + s["character"]
        b = offsets[t["line"]] + t["character"]
        text = text[:a] + e["newText"] + text[b:]
    return text


def show(diags):
    if not diags:
        print("   (no diagnostics)")
    for d in diags:
        r = d["range"]["start"]
        print(f"   line {r['line'] + 1}:{r['character'] + 1}  [{d.get('code')}]  {d['message']}")


def main():
    binary, path = sys.argv[1], os.path.abspath(sys.argv[2])
    uri = "file://" + path
    text = open(path, encoding="utf-8").read()
    c = Client(binary)
    init = c.request("initialize", {"processId": os.getpid(), "rootUri": "file://" + os.path.dirname(path),
                                    "capabilities": {}})
    print("   server:", init["serverInfo"]["name"], init["serverInfo"]["version"],
          "| positionEncoding", init["capabilities"]["positionEncoding"])
    c.notify("initialized", {})
    version = 1
    c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                       "text": text}})
    diags = c.diagnostics(uri, version)
    print("\n   publishDiagnostics on open:")
    show(diags)
    if len(diags) != 2:
        raise SystemExit("lsp-demo: expected the article network's two errors")

    line = next(i for i, l in enumerate(text.split("\n")) if "x = self.relu(self.conv2(x))" in l)
    hover = c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                             "position": {"line": line, "character": 8}})
    print("\n   hover on `x` (line %d):" % (line + 1), hover["contents"]["value"].replace("\n", " "))
    hints = c.request("textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": len(text.split("\n")), "character": 0}}})
    print("   inlay hints:", "; ".join(f"line {h['position']['line'] + 1}: {h['label']}" for h in hints))

    for d in diags:
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": d["range"],
                                                        "context": {"diagnostics": [d]}})
        fix = actions[0]
        print(f"\n   quick fix: {fix['title']}")
        text = apply(text, fix["edit"]["changes"][uri])
        version += 1
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                            "contentChanges": [{"text": text}]})
        show(c.diagnostics(uri, version))
    c.request("shutdown", None)
    c.notify("exit", None)
    rc = c.proc.wait(timeout=10)
    print(f"\n   shutdown + exit: server exit code {rc}")
    if rc != 0:
        raise SystemExit("lsp-demo: the server did not exit cleanly")


if __name__ == "__main__":
    main()
