#!/usr/bin/env python3
"""CLI tests for the built `cellscope` binary (Python 3 standard library only).

Run by ctest (tests/CMakeLists.txt registers one entry per test class) with CELLSCOPE_BIN set to
the binary, or by hand:  CELLSCOPE_BIN=build/cellscope python3 tests/cli/test_cli.py -v
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("CELLSCOPE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("CELLSCOPE_BIN", SOURCE_DIR / "build" / "cellscope")).resolve()

LENET = "tests/corpus/models/lenet5.py"
BUGGY = "tests/corpus/buggy/mnist_article_bug.py"
LENET_TRAINABLE = 61684  # LeNet-5 with MindSpore's Conv2d default has_bias=False
BUGGY_DENSE_LINE = 22  # 1-based: `x = self.relu(self.fc1(x))` in construct
BUGGY_MAXPOOL_LINE = 12  # 1-based: `self.pool = ops.MaxPool2d(...)`

TEXT_DIAG = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): "
                       r"(?P<sev>error|warning|info|hint): (?P<msg>.*?)(?: \[(?P<code>[a-z0-9-]+)\])?$")
SEVERITIES = {"error", "warning", "information", "hint"}


def setUpModule():
    # A missing binary is a failure, never a silent skip.
    if not BIN.is_file() or not os.access(BIN, os.X_OK):
        raise RuntimeError(f"cellscope binary not found at {BIN} (build it with `make build`)")


def run(*args, cwd=SOURCE_DIR, timeout=120):
    return subprocess.run([str(BIN), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def check_position(tc, pos):
    tc.assertIsInstance(pos, dict)
    for key in ("line", "character"):
        tc.assertIn(key, pos)
        tc.assertIsInstance(pos[key], int)
        tc.assertGreaterEqual(pos[key], 0)


def check_diagnostic(tc, d):
    for key in ("file", "range", "severity", "code", "message"):
        tc.assertIn(key, d)
    tc.assertIn(d["severity"], SEVERITIES)
    tc.assertIsInstance(d["message"], str)
    tc.assertTrue(d["message"])
    check_position(tc, d["range"]["start"])
    check_position(tc, d["range"]["end"])
    start, end = d["range"]["start"], d["range"]["end"]
    tc.assertLessEqual((start["line"], start["character"]), (end["line"], end["character"]))
    for r in d.get("related", []):
        check_position(tc, r["range"]["start"])
        tc.assertIn("message", r)


def check_tensor(tc, t):
    tc.assertIn("shape", t)
    tc.assertIn("dtype", t)
    tc.assertIsInstance(t["dtype"], str)
    for dim in t["shape"]:
        tc.assertTrue(dim is None or isinstance(dim, (int, str)) and not isinstance(dim, bool),
                      f"bad dim {dim!r} in {t}")


def errors_with_code(diags, code):
    return [d for d in diags if d["severity"] == "error" and d["code"] == code]


class GeneralTests(unittest.TestCase):
    def test_version(self):
        p = run("--version")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^cellscope \d+\.\d+\.\d+")

    def test_help(self):
        p = run("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("check", p.stdout)
        self.assertIn("graph", p.stdout)

    def test_no_arguments_is_usage_error(self):
        p = run()
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("cellscope", p.stderr)

    def test_unknown_subcommand_is_usage_error(self):
        p = run("frobnicate", LENET)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertIn("frobnicate", p.stderr)

    def test_bad_option_values_are_usage_errors(self):
        for args in (["check", LENET, "--format", "xml"],
                     ["check", LENET, "--target", "tpu"],
                     ["check", LENET, "--ms-version", "two"],
                     ["graph", LENET, "--format", "png"],
                     ["graph", LENET, "--input", "1,3:nodtype"],
                     ["graph", LENET, "--cell", "LeNet5", "--entry", "LeNet5()"],
                     ["--log-level", "loud", "check", LENET]):
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertTrue(p.stderr.strip())

    def test_numeric_option_values_name_the_option_and_the_value(self):
        # issue 14: a number that is not one, or does not fit, is a usage error naming the option
        # and the value; no library wording (stoll, json.exception) reaches the user.
        for args, says in ((["graph", LENET, "--input", "2x3"], "bad dimension `2x3`"),
                           (["graph", LENET, "--input", "99999999999999999999"], "too large"),
                           (["graph", LENET, "--input", "3037000500,3037000500"],
                            "more elements than fit in int64"),
                           (["check", LENET, "--ms-version", "99999999999999999999"], "--ms-version"),
                           (["view", LENET, "--port", "abc"], "--port: Value abc"),
                           (["view", LENET, "--port", "99999999999999999999"],
                            "--port: Value 99999999999999999999"),
                           (["lsp", "--debounce-ms", "1e3"], "--debounce-ms")):
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(says, p.stderr)
                self.assertNotRegex(p.stderr, r"json\.exception|\bsto[a-z]+\b|what\(\)")

    def test_missing_file_is_usage_error_with_clear_message(self):
        for cmd in ("check", "graph"):
            with self.subTest(cmd=cmd):
                p = run(cmd, "no/such/model.py")
                self.assertEqual(p.returncode, 2)
                self.assertEqual(p.stdout, "")
                self.assertIn("no/such/model.py", p.stderr)
                self.assertIn("no such file", p.stderr)

    def test_logs_never_on_stdout(self):
        p = run("--log-level", "trace", "check", LENET, "--format", "json")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        json.loads(p.stdout)  # stdout is exactly the JSON document
        self.assertIn("checking", p.stderr)  # the info log went to stderr

        p = run("graph", LENET, "--format", "json", "--log-level", "debug")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        json.loads(p.stdout)

    def test_log_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "cellscope.log"
            p = run("--log-level", "debug", "--log-file", log, "check", LENET, "--format", "json")
            self.assertIn(p.returncode, (0, 1), p.stderr)
            json.loads(p.stdout)
            self.assertNotIn("checking", p.stderr)
            self.assertIn("checking", log.read_text())


TAB_CASES = {
    'tabs_then_spaces': 'if True:\n\tx = 1\n        y = 2\n',
    'spaces_then_tabs': 'if True:\n        x = 1\n\ty = 2\n',
    'consistent_tabs': 'if True:\n\tx = 1\n\tif x:\n\t\ty = 2\n',
    'consistent_spaces': 'if True:\n    x = 1\n',
    'tab_plus_spaces_consistent': 'if True:\n\t    x = 1\n\t    y = 2\n',
    'tab8_equiv_indent_dedent': 'if True:\n\tif True:\n\t\tx = 1\n\ty = 2\n',
    'space_tab_mix_same_each_line': 'if True:\n  \tx = 1\n  \ty = 2\n',
    'tab_vs_8spaces_nested': 'if True:\n\tif True:\n\t        x = 1\n',
    'dedent_mixed': 'if True:\n\tif True:\n\t\tx = 1\n        y = 2\n',
    'indent_altcol_less': 'if True:\n        if True:\n\t x = 1\n',
    'continuation_line': 'x = 1 + \\\n\t        2\nif x:\n    y = 3\n',
    'inside_brackets': 'x = (1,\n\t2,\n        3)\nif x:\n    y = 1\n',
    'in_triple_string': "s = '''\n\tabc\n        def\n'''\nif s:\n    y = 1\n",
    'in_string_escape_newline': "s = 'a\\\n\tb'\nif s:\n    y = 1\n",
    'comment_lines_mixed': 'if True:\n    x = 1\n\t# tab comment\n        # spaces comment\n    y = 2\n',
    'blank_lines_mixed': 'if True:\n    x = 1\n\t\n        \n    y = 2\n',
    'formfeed': 'if True:\n    x = 1\n\x0c    y = 2\n',
    'crlf_tabs_then_spaces': 'if True:\r\n\tx = 1\r\n        y = 2\r\n',
    'cr_tabs_then_spaces': 'if True:\r\tx = 1\r        y = 2\r',
    'fstring_braces': 's = f"{\'{\'}"\nif s:\n\tx = 1\n        y = 2\n',
    'later_in_class': 'import mindspore.nn as nn\nclass N(nn.Cell):\n    def __init__(self):\n        super().__init__()\n\tself.x = 1\n',
    'unindent_mismatch': 'if True:\n        x = 1\n    y = 2\n\tz = 3\n',
    'after_string_with_hash': "s = '#'\nif s:\n\tx = 1\n        y = 2\n",
    'bracket_in_string': "s = '('\nif s:\n\tx = 1\n        y = 2\n",
    'tab_after_spaces_deeper': 'if True:\n    if True:\n    \tx = 1\n',
    'tab_after_spaces_deeper2': 'if True:\n    x = 0\n    \tx = 1\n',
    'spaces7_tab_vs_tab': 'if True:\n       \tx = 1\n\ty = 2\n',
    'tab_spaces_vs_spaces_tab': 'if True:\n\t x = 1\n \ty = 2\n',
}


class CheckTests(unittest.TestCase):
    def test_tab_errors_exactly_where_this_python_raises_them(self):
        # issue 14: CPython's tokenizer raises TabError where tabs and spaces disagree; tree-sitter
        # does not. Every case is compiled by the python3 running this test; cellscope must report
        # the TabError at its line and never where CPython compiles (or fails otherwise first).
        with tempfile.TemporaryDirectory() as tmp:
            want = {}
            for name, src in TAB_CASES.items():
                path = Path(tmp) / f"{name}.py"
                path.write_bytes(src.encode())
                try:
                    with open(path) as f:  # universal newlines, as the brief's check reads it
                        compile(f.read(), str(path), "exec")
                    want[name] = None
                except TabError as e:
                    want[name] = (e.lineno - 1, e.offset - 1, e.msg)
                except SyntaxError:
                    want[name] = None
            self.assertIn((2, 0, "inconsistent use of tabs and spaces in indentation"),
                          want.values())
            p = run("check", tmp, "--format", "json")
            doc = json.loads(p.stdout)
            got = {name: None for name in TAB_CASES}
            for d in doc["diagnostics"]:
                if "inconsistent use of tabs and spaces" in d["message"]:
                    name = Path(d["file"]).stem
                    self.assertIsNone(got[name], f"two TabErrors in {name}")
                    got[name] = (d["range"]["start"]["line"], d["range"]["start"]["character"],
                                 d["message"].removeprefix("TabError: "))
                    self.assertEqual(d["severity"], "error")
            self.assertEqual(got, want)

    def test_cr_only_line_ends_are_lines(self):
        # issue 14: CPython compiles "\r" alone as a line end; the article's bug is reported at
        # the same lines and columns whatever the line ends.
        lf = (SOURCE_DIR / BUGGY).read_bytes()
        self.assertNotIn(b"\r", lf)
        located = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name, end in (("lf", b"\n"), ("crlf", b"\r\n"), ("cr", b"\r")):
                path = Path(tmp) / f"{name}.py"
                path.write_bytes(lf.replace(b"\n", end))
                compile(path.read_bytes(), str(path), "exec")
                doc = json.loads(run("check", path, "--format", "json").stdout)
                located[name] = sorted((d["code"], d["range"]["start"]["line"],
                                        d["range"]["start"]["character"], d["range"]["end"]["line"],
                                        d["range"]["end"]["character"], d["message"])
                                       for d in doc["diagnostics"])
        self.assertIn(BUGGY_DENSE_LINE - 1, [d[1] for d in located["lf"] if d[0] == "shape-mismatch"])
        self.assertEqual(located["crlf"], located["lf"])
        self.assertEqual(located["cr"], located["lf"])
        text = run("check", BUGGY).stdout
        self.assertIn(f"{BUGGY}:{BUGGY_DENSE_LINE}:", text)

    def test_clean_model_text(self):
        p = run("check", LENET)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        errors = [m for m in map(TEXT_DIAG.match, p.stdout.splitlines()) if m and m["sev"] == "error"]
        self.assertEqual(errors, [])
        self.assertIn("1 file", p.stdout.strip().splitlines()[-1])

    def test_article_bug_text(self):
        p = run("check", BUGGY)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        diags = [m for m in map(TEXT_DIAG.match, p.stdout.splitlines()) if m]
        self.assertTrue(diags, p.stdout)
        for m in diags:
            self.assertEqual(m["file"], BUGGY)
            self.assertGreaterEqual(int(m["line"]), 1)
            self.assertGreaterEqual(int(m["col"]), 1)
        shape = [m for m in diags if m["sev"] == "error" and m["code"] == "shape-mismatch"]
        self.assertTrue(shape, p.stdout)
        self.assertTrue(any("1600" in m["msg"] and "9216" in m["msg"] for m in shape), p.stdout)
        self.assertIn(BUGGY_DENSE_LINE, [int(m["line"]) for m in shape])
        api = [m for m in diags if m["sev"] == "error" and m["code"] == "unknown-api"]
        self.assertTrue(any("MaxPool2d" in m["msg"] for m in api), p.stdout)
        self.assertIn(BUGGY_MAXPOOL_LINE, [int(m["line"]) for m in api])
        self.assertRegex(p.stdout.strip().splitlines()[-1], r"\d+ errors?, \d+ warnings? in 1 file")

    def test_article_bug_json(self):
        p = run("check", BUGGY, "--format", "json")
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["files"], 1)
        self.assertIsInstance(doc["diagnostics"], list)
        for d in doc["diagnostics"]:
            check_diagnostic(self, d)
        shape = errors_with_code(doc["diagnostics"], "shape-mismatch")
        self.assertTrue(any("1600" in d["message"] and "9216" in d["message"] for d in shape))
        self.assertIn(BUGGY_DENSE_LINE - 1, [d["range"]["start"]["line"] for d in shape])
        api = errors_with_code(doc["diagnostics"], "unknown-api")
        self.assertTrue(any("MaxPool2d" in d["message"] for d in api))

    def test_text_and_json_agree(self):
        text = run("check", BUGGY, "--no-snippets")
        js = json.loads(run("check", BUGGY, "--format", "json").stdout)
        from_text = sorted((int(m["line"]), int(m["col"]), m["code"] or "")
                           for m in map(TEXT_DIAG.match, text.stdout.splitlines()) if m)
        from_json = sorted((d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1,
                            d["code"]) for d in js["diagnostics"])
        self.assertEqual(from_text, from_json)

    def test_clean_model_json(self):
        p = run("check", LENET, "--format", "json", "--target", "ascend910b")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["files"], 1)
        self.assertEqual([d for d in doc["diagnostics"] if d["severity"] == "error"], [])

    def test_directory_walk_skips_hidden_venv_node_modules(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            model = (SOURCE_DIR / LENET).read_text()
            for rel in ("a.py", "sub/b.py", ".hidden/c.py", "venv/lib/d.py",
                        "node_modules/pkg/e.py", "__pycache__/f.py", "notes.txt"):
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(model)
            (root / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
            p = run("check", root, "--format", "json")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(json.loads(p.stdout)["files"], 2)

    def test_several_paths(self):
        p = run("check", LENET, BUGGY, "--format", "json")
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["files"], 2)
        self.assertEqual({d["file"] for d in doc["diagnostics"] if d["severity"] == "error"}
                         - {BUGGY, str(SOURCE_DIR / BUGGY)}, set())


class SarifTests(unittest.TestCase):
    def validate(self, log):
        """Structural validation against SARIF 2.1.0's required properties."""
        self.assertEqual(log["version"], "2.1.0")
        self.assertIn("sarif", log["$schema"])
        self.assertEqual(len(log["runs"]), 1)
        run_ = log["runs"][0]
        driver = run_["tool"]["driver"]
        self.assertEqual(driver["name"], "cellscope")
        self.assertRegex(driver["version"], r"^\d+\.\d+\.\d+")
        rule_ids = []
        for rule in driver.get("rules", []):
            self.assertIsInstance(rule["id"], str)
            self.assertTrue(rule["shortDescription"]["text"])
            rule_ids.append(rule["id"])
        self.assertEqual(len(rule_ids), len(set(rule_ids)))
        base_ids = set(run_.get("originalUriBaseIds", {}))
        for r in run_["results"]:
            self.assertIn(r["ruleId"], rule_ids)
            if "ruleIndex" in r:
                self.assertEqual(rule_ids[r["ruleIndex"]], r["ruleId"])
            self.assertIn(r["level"], ("none", "note", "warning", "error"))
            self.assertTrue(r["message"]["text"])
            self.assertGreaterEqual(len(r["locations"]), 1)
            for loc in r["locations"] + r.get("relatedLocations", []):
                phys = loc["physicalLocation"]
                art = phys["artifactLocation"]
                self.assertFalse(art["uri"].startswith("/"), art)
                if "uriBaseId" in art:
                    self.assertIn(art["uriBaseId"], base_ids)
                else:
                    self.assertTrue(art["uri"].startswith("file://"))
                region = phys["region"]
                self.assertGreaterEqual(region["startLine"], 1)
                self.assertGreaterEqual(region["startColumn"], 1)
                self.assertGreaterEqual(region["endLine"], region["startLine"])
                if region["endLine"] == region["startLine"]:
                    self.assertGreaterEqual(region["endColumn"], region["startColumn"])
            for loc in r.get("relatedLocations", []):
                self.assertTrue(loc["message"]["text"])
        return run_

    def test_article_bug_sarif(self):
        p = run("check", BUGGY, "--format", "sarif")
        self.assertEqual(p.returncode, 1, p.stderr)
        run_ = self.validate(json.loads(p.stdout))
        shape = [r for r in run_["results"] if r["ruleId"] == "shape-mismatch"]
        self.assertTrue(shape)
        self.assertEqual(shape[0]["level"], "error")
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in shape}
        self.assertEqual(uris, {BUGGY})
        lines = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in shape]
        self.assertIn(BUGGY_DENSE_LINE, lines)

    def test_sarif_matches_json(self):
        sarif = json.loads(run("check", BUGGY, "--format", "sarif").stdout)
        js = json.loads(run("check", BUGGY, "--format", "json").stdout)
        a = sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
                    r["locations"][0]["physicalLocation"]["region"]["startColumn"])
                   for r in sarif["runs"][0]["results"])
        b = sorted((d["code"], d["range"]["start"]["line"] + 1, d["range"]["start"]["character"] + 1)
                   for d in js["diagnostics"])
        self.assertEqual(a, b)

    def test_clean_model_sarif(self):
        p = run("check", LENET, "--format", "sarif")
        self.assertEqual(p.returncode, 0, p.stderr)
        run_ = self.validate(json.loads(p.stdout))
        self.assertEqual([r for r in run_["results"] if r["level"] == "error"], [])


class GraphTests(unittest.TestCase):
    def graph_json(self, *args, expect=0):
        p = run("graph", *args, "--format", "json")
        self.assertEqual(p.returncode, expect, p.stderr)
        return json.loads(p.stdout)

    def lenet_cell(self, doc):
        cells = [c for c in doc["cells"] if c["name"] == "LeNet5"]
        self.assertEqual(len(cells), 1, [c["name"] for c in doc["cells"]])
        return cells[0]

    def test_lenet_json_document(self):
        doc = self.graph_json(LENET)
        self.assertIsInstance(doc["diagnostics"], list)
        for d in doc["diagnostics"]:
            check_diagnostic(self, d)
        cell = self.lenet_cell(doc)
        self.assertIsInstance(cell["params"], int)
        self.assertEqual(cell["params"], LENET_TRAINABLE)
        self.assertTrue(cell["compiled"])
        for t in cell["inputs"] + cell["outputs"]:
            check_tensor(self, t)
        self.assertEqual(cell["inputs"][0]["shape"], [1, 1, 32, 32])  # from the __main__ call
        self.assertEqual(cell["outputs"][0]["shape"], [1, 10])
        self.assertEqual(cell["outputs"][0]["dtype"], "float32")
        ids = [n["id"] for n in cell["nodes"]]
        self.assertTrue(ids)
        self.assertEqual(len(ids), len(set(ids)), "node ids are unique")
        for n in cell["nodes"]:
            self.assertIn(n["kind"], ("input", "parameter", "constant", "op"))
            for e in n["inputs"]:
                self.assertIn(e["node"], ids)
            for t in n["outputs"]:
                check_tensor(self, t)
            check_position(self, n["range"]["start"])
        ops = [n["op"] for n in cell["nodes"] if n["kind"] == "op"]
        self.assertEqual(ops.count("Conv2D"), 2, ops)

    def test_semantic_layer_is_the_default(self):
        doc = self.graph_json(LENET)
        self.assertEqual(doc["layer"], "semantic")
        self.assertNotIn("optimized", self.lenet_cell(doc))

    def test_optimized_layer(self):
        formats = {"NCHW", "ND", "NC1HWC0", "FRACTAL_NZ"}
        for target in ("cpu", "ascend910"):
            doc = self.graph_json(LENET, "--layer", "optimized", "--target", target)
            self.assertEqual(doc["layer"], "optimized")
            cell = self.lenet_cell(doc)
            opt = cell["optimized"]
            self.assertEqual(opt["target"], target)
            semantic_ops = sorted(n["id"] for n in cell["nodes"] if n["kind"] == "op")
            covered = [o for n in opt["nodes"] for o in n["origins"] if o in semantic_ops]
            covered += [r["node"] for r in opt["removed"]]
            self.assertEqual(sorted(covered), semantic_ops)
            ids = [n["id"] for n in opt["nodes"]]
            self.assertEqual(len(ids), len(set(ids)))
            for n in opt["nodes"]:
                for e in n["inputs"]:
                    self.assertIn(e["node"], ids[:ids.index(n["id"])], "inputs come first")
                for t in n["outputs"]:
                    check_tensor(self, t)
                    self.assertIn(t["format"], formats)
            self.assertEqual(opt["results"][0]["node"] in ids, True)
            fused = [f for f in opt["fusions"] if f["fused"]]
            self.assertTrue(fused)
            for f in opt["fusions"]:
                self.assertTrue(f["reason"])
                self.assertTrue(set(f["nodes"]) <= set(semantic_ops))
            mem = opt["memory"]
            self.assertEqual(mem["algorithm"], "greedy-by-size")
            self.assertEqual(mem["alignment"], 32 if target == "cpu" else 512)
            self.assertLessEqual(mem["lowerBoundBytes"], mem["peakBytes"])
            self.assertLessEqual(mem["peakBytes"], mem["naiveBytes"])
            self.assertGreater(mem["weightBytes"], 0)
            transdata = [n for n in opt["nodes"] if n["op"] == "TransData"]
            self.assertEqual(bool(transdata), target != "cpu")
            self.assertEqual(opt["transdata"], len(transdata))
            self.assertEqual([p["name"] for p in opt["passes"]][-1], "memory-plan")

    def test_optimized_text_report(self):
        p = run("graph", LENET, "--layer", "optimized", "--format", "text")
        self.assertEqual(p.returncode, 0, p.stderr)
        for text in ("optimized for cpu", "fusion groups", "not fused", "memory plan", "peak",
                     "naive", "kernels"):
            self.assertIn(text, p.stdout)

    def test_dump_passes(self):
        with tempfile.TemporaryDirectory() as d:
            p = run("graph", LENET, "--layer", "optimized", "--target", "ascend310p",
                    "--dump-passes", d, "-o", Path(d) / "out.json")
            self.assertEqual(p.returncode, 0, p.stderr)
            cell_dirs = [c for c in Path(d).iterdir() if c.is_dir()]
            self.assertEqual(len(cell_dirs), 1)
            names = sorted(f.name for f in cell_dirs[0].iterdir())
            self.assertEqual(names[0], "00-import.json")
            for name in ("08-amp.json", "09-layout.json", "10-transdata-elim.json"):
                self.assertIn(name, names)
            self.assertEqual(names[-1], "11-memory-plan.json")
            first = json.loads((cell_dirs[0] / names[0]).read_text())
            last = json.loads((cell_dirs[0] / names[-1]).read_text())
            self.assertGreater(len(first["nodes"]),
                               len(last["nodes"]) - last["transdata"] - last["casts"])
            self.assertEqual(last["precision"], "mixed")
            self.assertEqual(last, json.loads((Path(d) / "out.json").read_text())["cells"][0]["optimized"])
        p = run("graph", LENET, "--layer", "optimized", "--dump-passes", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [json.loads(l) for l in p.stderr.splitlines() if l.startswith("{")]
        self.assertEqual(len(lines), 9)  # import + 8 passes (no amp, layout, transdata-elim on cpu)

    def test_layer_usage_errors(self):
        for args in (["--layer", "bogus"], ["--dump-passes", "dumps"],
                     ["--layer", "optimized", "--format", "dot"], ["--mode", "train"],
                     ["--layer", "hardware", "--format", "dot"],
                     ["--layer", "hardware", "--target", "gpu"]):
            p = run("graph", LENET, *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("error", p.stderr)

    def test_input_override(self):
        cell = self.lenet_cell(self.graph_json(LENET, "--input", "32,1,32,32"))
        self.assertEqual(cell["inputs"][0]["shape"], [32, 1, 32, 32])
        self.assertEqual(cell["outputs"][0]["shape"], [32, 10])
        cell = self.lenet_cell(self.graph_json(LENET, "--input", "N,1,32,32"))
        self.assertEqual(cell["outputs"][0]["shape"], ["N", 10])

    def test_cell_and_entry(self):
        doc = self.graph_json(LENET, "--cell", "LeNet5")
        self.assertEqual([c["name"] for c in doc["cells"]], ["LeNet5"])
        doc = self.graph_json(LENET, "--entry", "LeNet5(num_class=5)", "--input", "2,1,32,32")
        self.assertEqual(len(doc["cells"]), 1)
        self.assertEqual(doc["cells"][0]["outputs"][0]["shape"], [2, 5])

    def test_article_bug_graph(self):
        doc = self.graph_json(BUGGY, expect=1)
        shape = errors_with_code(doc["diagnostics"], "shape-mismatch")
        self.assertTrue(any("1600" in d["message"] and "9216" in d["message"] for d in shape))

    def test_text_format(self):
        p = run("graph", LENET, "--format", "text")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("LeNet5", p.stdout)
        self.assertIn("61,684 trainable", p.stdout)
        self.assertIn("Conv2D", p.stdout)
        self.assertIn("(1, 10)", p.stdout)

    def test_dot_format(self):
        p = run("graph", LENET, "--format", "dot")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("digraph"))
        self.assertEqual(p.stdout.count("{"), p.stdout.count("}"))
        self.assertIn("->", p.stdout)
        self.assertIn("subgraph cluster_", p.stdout)
        if shutil.which("dot"):
            r = subprocess.run(["dot", "-Tsvg"], input=p.stdout, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_output_file_is_written_atomically(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "lenet.json"
            out.write_text("old contents")
            p = run("graph", LENET, "-o", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "")
            self.lenet_cell(json.loads(out.read_text()))
            self.assertEqual(os.listdir(tmp), ["lenet.json"], "no temporary files left behind")
            p = run("graph", LENET, "--format", "dot", "--output", Path(tmp) / "lenet.dot")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue((Path(tmp) / "lenet.dot").read_text().startswith("digraph"))

    def test_output_into_missing_directory_fails_cleanly(self):
        with tempfile.TemporaryDirectory() as tmp:
            p = run("graph", LENET, "-o", Path(tmp) / "missing" / "out.json")
            self.assertNotIn(p.returncode, (0, 1))
            self.assertLess(p.returncode, 128, "no crash")
            self.assertEqual(p.stdout, "")
            self.assertIn("cannot", p.stderr)


class HardwareTests(unittest.TestCase):
    """`cellscope graph --layer hardware`: the analytical hardware model."""

    RESNET = "tests/corpus/models/resnet50.py"

    def hardware(self, *args):
        p = run("graph", *args, "--layer", "hardware", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["layer"], "hardware")
        return doc

    def test_ascend_document(self):
        doc = self.hardware(LENET, "--target", "ascend910b")
        cell = [c for c in doc["cells"] if c["name"] == "LeNet5"][0]
        hw = cell["hardware"]
        self.assertEqual(hw["target"], "ascend910b")
        self.assertTrue(hw["ascend"])
        self.assertIn("Analytical model", hw["statement"])
        est = hw["estimate"]
        self.assertTrue(est["analytical"])
        self.assertEqual(est["target"], "ascend910b")
        self.assertEqual(est["mode"], "infer")
        self.assertEqual(est["batch"], 1)
        self.assertGreater(est["latencyMs"], 0)
        self.assertAlmostEqual(est["throughputPerSec"], 1000 / est["latencyMs"], delta=1e-6 * est["throughputPerSec"])
        spec = hw["spec"]
        self.assertEqual((spec["aiCores"], spec["vectorCores"], spec["organisation"]), (24, 48, "separated"))
        self.assertTrue(all(s["source"] and s["confidence"] for s in spec["sources"]))
        units = set()
        for n in cell["optimized"]["nodes"]:
            if n["kind"] != "op":
                self.assertEqual(n["hardware"], [])
                continue
            self.assertTrue(n["hardware"], n["id"])
            for k in n["hardware"]:
                units.add(k["unit"])
                self.assertEqual(k["node"], n["id"])
                pool = 24 if k["unit"] == "cube" else 48
                self.assertTrue(all(0 <= c < pool for c in k["coreIds"]), k)
                if k["unit"] in ("cube", "vector"):
                    self.assertEqual(len(k["coreIds"]), k["blockDim"])
                    self.assertGreater(k["cycles"], 0)
                    self.assertTrue(k["tiling"] and k["loops"] and k["dma"] and k["schedule"])
                    for t in k["tiling"]:
                        self.assertLessEqual(t["bytes"] * t["copies"], t["capacity"], t)
                    for d in k["dma"]:
                        self.assertIn(d["channel"], ("MTE1", "MTE2", "MTE3", "FixPipe"))
        self.assertIn("cube", units)
        self.assertIn("vector", units)
        cube = [k for n in cell["optimized"]["nodes"] for k in n["hardware"] if k["unit"] == "cube"]
        self.assertIn("FixPipe", {d["channel"] for k in cube for d in k["dma"]})  # separated cores

    def test_train_mode(self):
        infer = self.hardware(LENET, "--target", "ascend910")["cells"][0]["hardware"]["estimate"]
        doc = self.hardware(LENET, "--target", "ascend910", "--mode", "train", "--optimizer", "adam")
        cell = doc["cells"][0]
        est = cell["hardware"]["estimate"]
        self.assertEqual(est["mode"], "train")
        self.assertGreater(est["backwardMs"], 0)
        self.assertGreater(est["optimizerMs"], 0)
        self.assertGreater(est["latencyMs"], infer["latencyMs"])
        phases = {k["phase"] for n in cell["optimized"]["nodes"] for k in n["hardware"]}
        self.assertTrue({"forward", "backward-dgrad", "backward-wgrad"} <= phases, phases)
        # One update per trainable Parameter: 2 conv weights (no bias), 3 Dense weights and biases.
        unattributed = cell["hardware"]["optimizer"]
        updates = [k for k in unattributed if k["phase"] == "optimizer"]
        self.assertEqual(len(updates), 8)
        self.assertTrue(all(k["name"].startswith("ApplyAdam") for k in updates))
        # LeNet-5 has no loss: the stand-in's forward kernel and its gradient belong to no node.
        self.assertIn(("forward", "ReduceMean"), {(k["phase"], k["name"]) for k in unattributed})
        self.assertTrue(any(k["phase"] == "backward" for k in unattributed))
        self.assertTrue(any("stand-in, ReduceMean" in n for n in est["notes"]), est["notes"])
        # Backward kernels are those of the graph autodiff builds (no derived CANN names).
        names = {k["name"] for n in cell["optimized"]["nodes"] for k in n["hardware"]}
        self.assertIn("Conv2DGrad(dW)", names)
        self.assertNotIn("Conv2DBackpropInput", names)

    def test_mixed_precision_casts_and_transdata_elimination(self):
        doc = self.hardware("tests/corpus/models/bert_base.py", "--entry", "bert_base()",
                            "--input", "2,128:int32", "--target", "ascend910")
        cell = doc["cells"][0]
        opt = cell["optimized"]
        self.assertEqual(opt["precision"], "mixed")
        self.assertIn("amp", [p["name"] for p in opt["passes"]])
        self.assertIn("transdata-elim", [p["name"] for p in opt["passes"]])
        nodes = {n["id"]: n for n in opt["nodes"]}
        casts = [n for n in opt["nodes"] if n["op"] == "Cast" and n["pass"] == "amp"]
        self.assertEqual(opt["casts"], len(casts))
        self.assertGreaterEqual(len(casts), 50)  # into and out of each of the 25 LayerNorms
        for c in casts:
            attrs = c["attrs"]
            self.assertIn("src_dtype", attrs)
            self.assertIn("dst_dtype", attrs)
            self.assertEqual(c["origins"], [])
            self.assertTrue(c["hardware"])
            self.assertEqual(c["hardware"][0]["unit"], "vector")
        norms = [n for n in opt["nodes"] if n["op"] in ("LayerNorm", "AddLayerNorm")]
        self.assertTrue(norms)
        for n in norms:
            self.assertEqual(n["outputs"][0]["dtype"], "float32", n["id"])
            for e in n["inputs"]:
                src = nodes.get(e["node"])
                if src and src["kind"] == "op":
                    self.assertEqual(src["outputs"][e["output"]]["dtype"], "float32", src["id"])
        matmuls = [n for n in opt["nodes"] if n["op"] == "MatMul"]
        self.assertTrue(all(n["outputs"][0]["dtype"] == "float16" for n in matmuls))
        # BERT's format conversions all surround real data movement (Transpose): none is a pair.
        self.assertEqual(opt.get("eliminated", []), [])
        self.assertIn("amp O2", " ".join(cell["hardware"]["estimate"]["notes"]))

    def test_cpu_target_says_ascend_details_are_absent(self):
        doc = self.hardware(LENET)
        hw = doc["cells"][0]["hardware"]
        self.assertFalse(hw["ascend"])
        self.assertIn("--target ascend910b", hw["statement"])
        self.assertIn("graph_visualization", hw["statement"])
        p = run("graph", LENET, "--layer", "hardware", "--format", "text")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("No Ascend details", p.stdout)
        # In a CPU's words: DRAM and the executor's overhead, not Global Memory and dispatch.
        self.assertIn("DRAM BYTES", p.stdout)
        self.assertIn("executor overhead", p.stdout)
        for ascend_word in ("GM BYTES", "global-memory", "dispatch"):
            self.assertNotIn(ascend_word, p.stdout)

    def test_text_report(self):
        p = run("graph", self.RESNET, "--entry", "resnet50()", "--input", "2,3,224,224",
                "--layer", "hardware", "--target", "ascend310p", "--format", "text")
        self.assertEqual(p.returncode, 0, p.stderr)
        for text in ("Analytical model", "analytical model, not a measurement", "latency",
                     "throughput", "memory peak", "totals", "time by operator",
                     "kernels by cycles", "FusedConv2D", "tiling of", "L0A", "per tile:"):
            self.assertIn(text, p.stdout)
        self.assertIn("GM BYTES", p.stdout)
        self.assertIn("global-memory traffic", p.stdout)

    def test_unsupported_custom_op(self):
        with tempfile.TemporaryDirectory() as d:
            model = Path(d) / "custom.py"
            model.write_text(
                "from mindspore import nn, ops\n\n\n"
                "class Net(nn.Cell):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.fc = nn.Dense(16, 16)\n"
                "        self.host = ops.Custom(lambda x: x, out_shape=lambda x: x,\n"
                "                               out_dtype=lambda x: x, func_type=\"pyfunc\")\n\n"
                "    def construct(self, x):\n"
                "        return self.host(self.fc(x))\n")
            p = run("graph", model, "--input", "4,16", "--layer", "hardware", "--target",
                    "ascend910", "--format", "json")
            self.assertEqual(p.returncode, 1, p.stderr)
            doc = json.loads(p.stdout)
            diags = errors_with_code(doc["diagnostics"], "unsupported-on-target")
            self.assertEqual(len(diags), 1, doc["diagnostics"])
            self.assertEqual(diags[0]["range"]["start"]["line"], 11)
            self.assertIn("pyfunc", diags[0]["message"])
            p = run("graph", model, "--input", "4,16", "--layer", "hardware", "--format", "json")
            self.assertEqual(p.returncode, 0, p.stderr)  # pyfunc runs on the CPU



class ProjectConfigTests(unittest.TestCase):
    """mindspore_config.json at the workspace root: backend, version and inputs; bad values are
    located diagnostics in the file, and the command line wins over it."""

    def workspace(self, config_text):
        d = tempfile.mkdtemp(prefix="cellscope-config-")
        self.addCleanup(shutil.rmtree, d)
        shutil.copy(Path(SOURCE_DIR) / LENET, Path(d) / "lenet5.py")
        (Path(d) / "mindspore_config.json").write_text(config_text)
        return Path(d)

    def graph(self, ws, *args):
        p = run("graph", ws / "lenet5.py", "--format", "json", *args)
        return p, json.loads(p.stdout) if p.stdout.strip() else None

    def test_backend_version_and_inputs_apply(self):
        ws = self.workspace(json.dumps({"graph_visualization": {"enable": True, "backend": "ascend"},
                                        "mindspore_version": "2.9.0",
                                        "inputs": {"LeNet5": ["8,1,32,32"]}}))
        p, doc = self.graph(ws, "--cell", "LeNet5")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(doc["target"], "ascend910b")
        self.assertEqual(doc["mindsporeVersion"], "2.9.0")
        self.assertEqual(doc["cells"][0]["inputs"][0]["shape"], [8, 1, 32, 32])
        # The command line wins.
        p, doc = self.graph(ws, "--cell", "LeNet5", "--target", "cpu", "--input", "2,1,32,32")
        self.assertEqual(doc["target"], "cpu")
        self.assertEqual(doc["cells"][0]["inputs"][0]["shape"], [2, 1, 32, 32])

    def test_invalid_values_are_located_diagnostics(self):
        ws = self.workspace('{\n  "graph_visualization": {"enable": true, "backend": "tpu"},\n'
                            '  "inputs": {"*": ["1,3:float99"]}\n}\n')
        p = run("check", ws / "lenet5.py", "--format", "json")
        self.assertEqual(p.returncode, 1, p.stdout)
        diags = [d for d in json.loads(p.stdout)["diagnostics"] if d["code"] == "invalid-config"]
        self.assertEqual(len(diags), 2, diags)
        by_line = {d["range"]["start"]["line"]: d for d in diags}
        self.assertIn("backend", by_line[1]["message"])
        self.assertTrue(by_line[1]["file"].endswith("mindspore_config.json"))
        self.assertIn("float99", by_line[2]["message"])

    def test_not_json(self):
        ws = self.workspace('{"graph_visualization": {"backend": "ascend",}')
        p = run("check", ws / "lenet5.py")
        self.assertEqual(p.returncode, 1)
        self.assertIn("mindspore_config.json:1:", p.stdout)
        self.assertIn("not valid JSON", p.stdout)

    def test_configs_make_yaml_loads_known(self):
        # A model built from a YAML config (tests/fixtures/yaml_config.py): named in `configs`,
        # relative to mindspore_config.json, the model builds; a broken one is a located error
        # at the load; unnamed, the config is run-time data (no error, no parameters).
        d = Path(tempfile.mkdtemp(prefix="cellscope-configs-"))
        self.addCleanup(shutil.rmtree, d)
        fixtures = Path(SOURCE_DIR) / "tests" / "fixtures"
        shutil.copy(fixtures / "yaml_config.py", d / "net.py")
        cfg = d / "yaml_config_net.yaml"  # where net.py reads it (next to itself)
        shutil.copy(fixtures / "yaml_config_net.yaml", cfg)

        def graph(*args):
            p = run("graph", d / "net.py", "--input", "1,3,8,8", "--cell", "Net", "--format",
                    "json", *args)
            return p, json.loads(p.stdout) if p.stdout.strip() else None

        p, doc = graph()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(doc["cells"][0]["totalParams"], 0)
        self.assertFalse([x for x in doc["diagnostics"] if x["severity"] == "error"])
        # --config names it; so does mindspore_config.json (paths relative to it).
        p, doc = graph("--config", str(cfg))
        self.assertEqual(doc["cells"][0]["params"], 1586, doc["diagnostics"])
        (d / "mindspore_config.json").write_text(json.dumps({"configs": ["yaml_config_net.yaml"]}))
        p, doc = graph()
        self.assertEqual(doc["cells"][0]["params"], 1586, doc["diagnostics"])
        self.assertEqual(doc["cells"][0]["outputs"][0]["shape"], [1, 10])
        # A broken config: an error at the load, with the line in the config.
        cfg.write_text("backbone: [ConvBNReLU, [8, 3\n")
        p = run("check", d / "net.py", "--format", "json")
        self.assertEqual(p.returncode, 1, p.stdout)
        errs = [x for x in json.loads(p.stdout)["diagnostics"] if x["code"] == "config-error"]
        self.assertEqual(len(errs), 1, p.stdout)
        self.assertTrue(errs[0]["file"].endswith("net.py"))
        self.assertIn("not valid YAML/JSON: line", errs[0]["message"])
        # `configs` of the wrong type: a located problem in mindspore_config.json.
        (d / "mindspore_config.json").write_text('{"configs": 3}')
        p = run("check", d / "net.py", "--format", "json")
        bad = [x for x in json.loads(p.stdout)["diagnostics"] if x["code"] == "invalid-config"]
        self.assertEqual(len(bad), 1, p.stdout)
        self.assertIn("configs", bad[0]["message"])


class ViewTests(unittest.TestCase):
    """`cellscope view` (the live view's server) and `cellscope graph --format html` (a snapshot)."""

    def start_view(self, *args):
        tmp = Path(tempfile.mkdtemp(prefix="cellscope-view-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        model = tmp / "lenet.py"
        shutil.copy(SOURCE_DIR / LENET, model)
        proc = subprocess.Popen([str(BIN), "view", str(model), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.stderr.close)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait, 10)
        self.addCleanup(proc.terminate)
        line = proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{32})&file=\S+)", line)
        self.assertTrue(m, line + proc.stderr.read() if not line else line)
        return proc, model, m.group(1), int(m.group(2)), m.group(3)

    def fetch(self, url, headers=None):
        import urllib.error
        import urllib.request
        req = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, dict(res.headers), res.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def test_serves_the_view_with_token_and_origin_checks(self):
        proc, model, url, port, token = self.start_view("--cell", "LeNet5")
        self.assertIn("&cell=LeNet5", url)
        status, headers, body = self.fetch(url)
        self.assertEqual(status, 200)
        self.assertIn("text/html", headers["Content-Type"])
        self.assertIn("HttpOnly", headers["Set-Cookie"])
        self.assertIn("default-src 'none'", headers["Content-Security-Policy"])
        self.assertEqual(headers["Referrer-Policy"], "no-referrer")
        base = f"http://127.0.0.1:{port}"
        self.assertEqual(self.fetch(base + "/")[0], 401)
        self.assertEqual(self.fetch(base + "/app.js")[0], 401)
        self.assertEqual(self.fetch(base + "/?token=" + "f" * 32)[0], 401)
        self.assertEqual(self.fetch(url, {"Origin": "http://evil.example"})[0], 403)
        self.assertEqual(self.fetch(url, {"Host": f"attacker.example:{port}"})[0], 403)
        cookie = headers["Set-Cookie"].split(";")[0]
        for asset in ("/app.js", "/app.css", "/layout-worker.js"):
            status, _, body = self.fetch(base + asset, {"Cookie": cookie})
            self.assertEqual(status, 200, asset)
            self.assertTrue(body, asset)
        self.assertEqual(self.fetch(base + "/nope", {"Cookie": cookie})[0], 404)
        # Stops cleanly on SIGTERM.
        proc.terminate()
        self.assertEqual(proc.wait(10), 0)

    def test_bad_input(self):
        r = run("view", "no/such/model.py")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such file", r.stderr)
        r = run("view", LENET, "--target", "tpu")
        self.assertEqual(r.returncode, 2)
        # A port that is taken is a clear error.
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            r = run("view", LENET, "--port", str(s.getsockname()[1]), timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot listen on 127.0.0.1", r.stderr)

    def test_compare_with_a_base_it_cannot_have_says_why_and_keeps_serving(self):
        # Outside any git repository (a temporary directory), and a file that does not exist.
        for base, why in (("HEAD", "lenet.py is not in a git repository"),
                          ("missing.py", "no such file: ")):
            proc, model, url, port, token = self.start_view("--compare-with", base)
            self.assertEqual(self.fetch(url)[0], 200)
            proc.terminate()
            self.assertEqual(proc.wait(10), 0)
            self.assertIn(f"cellscope: cannot compare with {base}: {why}", proc.stderr.read())

    def test_html_snapshot_is_self_contained(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "resnet.html"
            r = run("graph", "tests/corpus/models/resnet50.py", "--format", "html", "--target",
                    "ascend910", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            html = out.read_text()
        self.assertTrue(html.startswith("<!doctype html>"))
        # No external resources: every script and style is inline.
        self.assertNotRegex(html, r"<script[^>]+src=")
        self.assertNotRegex(html, r"<link[^>]+stylesheet")
        m = re.search(r'<script id="cellscope-snapshot" type="application/json">(.*?)</script>',
                      html, re.S)
        self.assertTrue(m)
        messages = json.loads(m.group(1).replace("<\\/", "</"))
        self.assertIn("hello", messages[0])
        doc = messages[1]["update"]["document"]
        self.assertEqual(doc["layer"], "hardware")
        self.assertEqual(doc["target"], "ascend910")
        cell = doc["cells"][0]
        self.assertGreater(len(cell["nodes"]), 100)
        # The snapshot has no server to ask: per-kernel detail is included.
        self.assertTrue(any(k["schedule"] for n in cell["optimized"]["nodes"]
                            for k in n.get("hardware", [])))
        self.assertIn('id="cellscope-worker-src"', html)
        self.assertEqual(html.count("</script>"), 3)
        # html needs every layer.
        r = run("graph", LENET, "--format", "html", "--layer", "semantic")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--format html", r.stderr)


def frame(body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def parse_frames(data):
    """The bodies (parsed JSON) of a Content-Length framed stream."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        length = int(re.search(rb"Content-Length: *(\d+)", head, re.I).group(1))
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


# A model whose input may have any shape (the DAP launch tests choose it).
ANY_SHAPE_MODEL = """import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def construct(self, x):
        return self.relu(x)
"""


TRAIN_SCRIPT = """import mindspore as ms
import mindspore.dataset as ds
import mindspore.dataset.transforms as transforms
import mindspore.dataset.vision as vision
from mindspore import nn
from mindspore.train import LossMonitor, Model


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(28 * 28, 10)

    def construct(self, x):
        return self.fc(self.flatten(x))


data = ds.MnistDataset("./MNIST_Data", usage="train", shuffle=False)
data = data.map(operations=[vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],
                input_columns="image")
data = data.map(operations=transforms.TypeCast(ms.int32), input_columns="label")
data = data.batch(8, drop_remainder=True)
net = Net()
loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
opt = nn.Momentum(net.trainable_params(), learning_rate=0.1, momentum=0.9)
Model(net, loss, opt).train(2, data, callbacks=[LossMonitor()])
"""


def write_idx(path, shape, data):
    with open(path, "wb") as f:
        f.write(bytes([0, 0, 8, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape))
        f.write(bytes(data))


EXPORT_UNMAPPED = """import mindspore.nn as nn
import mindspore.ops as ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4)

    def construct(self, x):
        y = self.fc(x)
        return ops.logsumexp(y, 1)
"""

# A factory file whose `__main__` demo calls a method that does not exist (as mindcv's
# repmlp.py does): a real error when the file runs as a script, not in what --entry exports.
EXPORT_MAIN_ERROR = """import mindspore.nn as nn


class Net(nn.Cell):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Dense(4, width)

    def construct(self, x):
        return self.fc(x)


def net_w8():
    return Net(8)


if __name__ == "__main__":
    model = net_w8()
    model.reparameterize()
"""

# ops.Custom with a CPU-only kernel (pyfunc), exported for Ascend: the article's "custom op with
# no implementation for the target" pitfall, at the op's line.
EXPORT_CUSTOM = """import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.op = ops.Custom(np.add, out_shape=lambda x: x, out_dtype=lambda x: x,
                             func_type="pyfunc")

    def construct(self, x):
        return self.op(x)
"""


class ExportTests(unittest.TestCase):
    """`cellscope export --format mindir|onnx`: exit codes, located refusals, nothing written on
    refusal, format from -o's extension (the files themselves: MindSpore loading the MindIR ones
    in tests/mindspore/test_export_mindir.py; onnx.checker and onnxruntime on the ONNX ones in
    tests/runtime/check_onnx.py, the onnx tier)."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cellscope-export-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.lenet = SOURCE_DIR / "tests/corpus/models/lenet5.py"

    def test_writes_a_mindir(self):
        out = self.dir / "lenet.mindir"
        p = run("export", self.lenet, "--input", "1,1,32,32", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")  # stdout carries no logs
        self.assertIn("wrote", p.stderr)
        self.assertIn("MindIR", p.stderr)
        self.assertIn("8 weights", p.stderr)
        data = out.read_bytes()
        # LeNet-5's 61,684 float32 parameters travel inline; the producer name is there.
        self.assertGreater(len(data), 4 * 61684)
        self.assertIn(b"MindSpore", data)
        self.assertIn(b"REF::Conv2D:", data)
        self.assertEqual(sorted(f.name for f in self.dir.iterdir()), ["lenet.mindir"])
        # The same seed writes the same bytes; another seed other weights.
        again = self.dir / "again.mindir"
        self.assertEqual(run("export", self.lenet, "--input", "1,1,32,32", "-o", again)
                         .returncode, 0)
        self.assertEqual(again.read_bytes(), data)
        other = self.dir / "other.mindir"
        self.assertEqual(run("export", self.lenet, "--input", "1,1,32,32", "--seed", "5", "-o",
                             other).returncode, 0)
        self.assertNotEqual(other.read_bytes(), data)

    def test_refusal_is_located_and_writes_nothing(self):
        model = self.dir / "net.py"
        model.write_text("import mindspore.nn as nn\nimport mindspore.ops as ops\n\n"
                         "class Net(nn.Cell):\n    def construct(self, x):\n"
                         "        return ops.logsumexp(x, 1)\n")
        out = self.dir / "net.mindir"
        out.write_bytes(b"previous")
        p = run("export", model, "--input", "2,4", "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"net\.py:6:\d+: error: cannot export to MindIR: operator "
                                   r"LogSumExp \(ops\.logsumexp\).*\[export-unsupported-op\]")
        self.assertEqual(out.read_bytes(), b"previous")
        self.assertEqual(sorted(f.name for f in self.dir.iterdir()), ["net.mindir", "net.py"])

    EXPORT_CALL_MODEL = ("import numpy as np\nimport mindspore as ms\nimport mindspore.nn as nn\n\n\n"
                         "class Net(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
                         "        self.fc = nn.Dense(4, 3)\n\n    def construct(self, x):\n"
                         "        return self.fc(x)\n\n\nif __name__ == '__main__':\n"
                         "    net = Net()\n")

    def export_call_model(self, *calls):
        model = self.dir / "net.py"
        model.write_text(self.EXPORT_CALL_MODEL + "".join("    %s\n" % c for c in calls))
        return model

    def test_options_from_the_files_ms_export_call(self):
        # No --cell/--entry/--input/-o: the file's ms.export call gives them; MindSpore appends
        # the format's extension unless the name ends with it.
        x = "ms.Tensor(np.ones((2, 4)), ms.float32)"
        model = self.export_call_model(
            "ms.export(net, %s, file_name='small', file_format='MINDIR')" % x)
        p = run("export", model, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("net.py:17", p.stderr)
        self.assertIn("(2, 4):float32", p.stderr)
        self.assertGreater((self.dir / "small.mindir").stat().st_size, 4 * 15)
        model = self.export_call_model(
            "ms.export(net, %s, file_name='small.onnx', file_format='ONNX')" % x)
        p = run("export", model, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(f.name for f in self.dir.iterdir()),
                         ["net.py", "small.mindir", "small.onnx"])

    def test_unfollowable_export_call_asks_for_options(self):
        x = "ms.Tensor(np.ones((2, 4)), ms.float32)"
        cases = [
            ("ms.export(net, %s, file_name='s', file_format='AIR')" % x, "not AIR"),
            ("ms.export(net, ms.Tensor(np.load('x.npy')), file_name='s', file_format='MINDIR')",
             "no static shape"),
        ]
        for call, why in cases:
            model = self.export_call_model(call)
            p = run("export", model, cwd=self.dir)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertRegex(p.stderr, r"net\.py:17:5: note: .*" + why +
                             r".*\[export-call-unfollowed\]")
            self.assertIn("--input and -o", p.stderr)
        model = self.export_call_model(
            "ms.export(net, %s, file_name='a', file_format='MINDIR')" % x,
            "ms.export(net, %s, file_name='b', file_format='ONNX')" % x)
        p = run("export", model, cwd=self.dir)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("2 times", p.stderr)
        model.write_text(self.EXPORT_CALL_MODEL)  # no call at all
        p = run("export", model, cwd=self.dir)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("no ms.export(...) call", p.stderr)
        self.assertEqual(sorted(f.name for f in self.dir.iterdir()), ["net.py"])

    def test_export_input_differing_from_project_config_is_refused(self):
        x = "ms.Tensor(np.ones((2, 4)), ms.float32)"
        model = self.export_call_model(
            "ms.export(net, %s, file_name='small', file_format='MINDIR')" % x)
        (self.dir / "mindspore_config.json").write_text(
            '{\n  "target": "cpu",\n  "inputs": {"Net": ["3,4"]}\n}\n')
        p = run("export", model, cwd=self.dir)  # the call's (2, 4)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"net\.py:17:5: error: .*\(2, 4\).*\(3, 4\).*"
                                   r"\[export-input-mismatch\]")
        p = run("export", model, "--input", "2,4", "-o", self.dir / "x.mindir", cwd=self.dir)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"mindspore_config\.json:3:3: error: .*"
                                   r"\[export-input-mismatch\]")
        self.assertEqual(sorted(f.name for f in self.dir.iterdir()),
                         ["mindspore_config.json", "net.py"])
        # The configuration's own shape (no --input, or the same one) exports.
        p = run("export", model, "--cell", "Net", "-o", self.dir / "y.mindir", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("export", model, "--input", "3,4", "-o", self.dir / "z.mindir", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_bad_destinations_and_options(self):
        # MindIR needs the .mindir name mindspore.load accepts; -o's extension names the format.
        p = run("export", self.lenet, "--format", "mindir", "--input", "1,1,32,32", "-o",
                self.dir / "lenet.onnx")
        self.assertEqual(p.returncode, 2)
        self.assertIn(".mindir", p.stderr)
        p = run("export", self.lenet, "--format", "onnx", "--input", "1,1,32,32", "-o",
                self.dir / "lenet.mindir")
        self.assertEqual(p.returncode, 2)
        self.assertIn(".mindir", p.stderr)
        p = run("export", self.lenet, "--input", "1,1,32,32", "-o", self.dir / "lenet.bin")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--format", p.stderr)
        p = run("export", self.lenet, "--format", "tflite", "-o", self.dir / "lenet.bin")
        self.assertEqual(p.returncode, 2)
        p = run("export", self.lenet, "--input", "1,1,32,32", "-o",
                self.dir / "missing" / "lenet.mindir")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no such directory", p.stderr)
        p = run("export", self.lenet, "--input", "1,1,32,32", "--checkpoint",
                self.dir / "none.ckpt", "-o", self.dir / "x.mindir")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no such checkpoint", p.stderr)
        p = run("export", self.lenet, "--input", "N,1,32,32", "-o", self.dir / "x.mindir")
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"lenet5\.py:\d+:\d+: error: .*\(N, 1, 32, 32\).*"
                                   r"\[export-dynamic-shape\]")
        # The same refusal, the same code, for ONNX.
        p = run("export", self.lenet, "--input", "N,1,32,32", "-o", self.dir / "x.onnx")
        self.assertEqual(p.returncode, 1)
        self.assertRegex(p.stderr, r"lenet5\.py:\d+:\d+: error: .*\(N, 1, 32, 32\).*"
                                   r"\[export-dynamic-shape\]")
        self.assertEqual(list(self.dir.iterdir()), [])

    def test_format_from_extension_and_one_seed_option(self):
        # No --format: -o's extension names it; --seed reaches both formats' weights.
        onnx = self.dir / "lenet.onnx"
        p = run("export", self.lenet, "--input", "1,1,32,32", "-o", onnx)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ONNX opset", p.stderr)
        self.assertEqual(onnx.read_bytes()[:2], bytes([0x08, 14]))
        seeded = self.dir / "seeded.onnx"
        p = run("export", self.lenet, "--input", "1,1,32,32", "--seed", "5", "-o", seeded)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(seeded.read_bytes()), len(onnx.read_bytes()))
        self.assertNotEqual(seeded.read_bytes(), onnx.read_bytes())

    def test_exports_lenet(self):
        out = self.dir / "lenet.onnx"
        p = run("export", "tests/corpus/models/lenet5.py", "--format", "onnx", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")  # stdout carries no logs
        self.assertIn("ONNX opset 28", p.stderr)
        data = out.read_bytes()
        # ModelProto: ir_version (field 1, varint 14) first, the producer name, the weights.
        self.assertEqual(data[:2], bytes([0x08, 14]))
        self.assertIn(b"cellscope", data)
        self.assertIn(b"conv1.weight", data)
        self.assertGreater(len(data), 61706 * 4)  # LeNet-5's 61,706 float32 weights
        self.assertEqual(sorted(os.listdir(self.dir)), ["lenet.onnx"])

    def test_unmapped_operator_is_refused_with_its_line(self):
        src = self.dir / "net.py"
        src.write_text(EXPORT_UNMAPPED)
        out = self.dir / "net.onnx"
        p = run("export", src, "--format", "onnx", "--input", "2,4", "-o", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"net\.py:12:\d+: error: .*LogSumExp.*\[export-unsupported-op\]")
        self.assertFalse(out.exists())

    def test_entry_is_exported_from_the_module_as_imported(self):
        src = self.dir / "factory.py"
        src.write_text(EXPORT_MAIN_ERROR)
        # As a script, the demo block's mistake is an error at its line...
        p = run("check", src)
        self.assertEqual(p.returncode, 1, p.stderr + p.stdout)
        self.assertRegex(p.stdout + p.stderr, r"factory\.py:19:\d+: error: .*reparameterize")
        # ...but --entry with its input calls the factory on the module as `import factory`
        # loads it.
        out = self.dir / "net.onnx"
        p = run("export", src, "--entry", "net_w8()", "--input", "2,4", "-o", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(out.is_file())
        self.assertNotIn("reparameterize", p.stderr)
        # Without --input the file runs as a script (its calls would give the input): the
        # demo's error is part of that run.
        p = run("export", src, "--entry", "net_w8()", "-o", self.dir / "other.onnx")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("reparameterize", p.stderr)

    def test_custom_op_without_an_implementation_for_the_target_is_refused(self):
        src = self.dir / "custom.py"
        src.write_text(EXPORT_CUSTOM)
        out = self.dir / "net.mindir"
        p = run("export", src, "--cell", "Net", "--input", "2,4", "--target", "ascend910",
                "-o", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertRegex(p.stderr, r"custom\.py:13:\d+: error: cannot export Net: `ops\.Custom` "
                                   r"with func_type='pyfunc' has no implementation for ascend910 "
                                   r".*\[unsupported-on-target\]")
        self.assertFalse(out.exists())

    def test_unwritable_destination(self):
        out = self.dir / "no" / "such" / "dir" / "m.onnx"
        p = run("export", "tests/corpus/models/lenet5.py", "--format", "onnx", "-o", out)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot", p.stderr)
        self.assertIn(str(out), p.stderr)
        self.assertFalse((self.dir / "no").exists())

    def test_output_is_required(self):
        p = run("export", "tests/corpus/models/lenet5.py", "--format", "onnx")
        self.assertEqual(p.returncode, 2, p.stderr)


class TrainTests(unittest.TestCase):
    """`cellscope train`: the training plan of a script run on the CPU runtime (the numbers are
    checked against MindSpore by tests/training/compare_training.py in the MindSpore tier)."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cellscope-train-"))
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.script = self.dir / "train.py"
        self.script.write_text(TRAIN_SCRIPT)
        self.data = self.dir / "MNIST_Data"
        self.data.mkdir()

    def write_mnist(self, labels):
        n = len(labels)
        pixels = [(i * 37 + j * 11) % 256 for i in range(n) for j in range(28 * 28)]
        write_idx(self.data / "train-images-idx3-ubyte", (n, 28, 28), pixels)
        write_idx(self.data / "train-labels-idx1-ubyte", (n,), labels)

    def test_trains_and_writes_a_checkpoint(self):
        self.write_mnist([i % 10 for i in range(32)])
        out = self.dir / "net.ckpt"
        p = run("train", self.script, "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        steps = re.findall(r"^epoch: (\d+) step: (\d+), loss is ([0-9.e+-]+)", p.stdout, re.M)
        # 32 images in batches of 8, two epochs: LossMonitor's numbering.
        self.assertEqual([(int(e), int(s)) for e, s, _ in steps],
                         [(e, s) for e in (1, 2) for s in (1, 2, 3, 4)])
        self.assertIn("training Net with nn.SoftmaxCrossEntropyWithLogits", p.stdout)
        self.assertTrue(out.is_file() and out.stat().st_size > 4 * 7850)
        # json: the same steps, and --steps stops early.
        p = run("train", self.script, "--steps", "3", "--format", "json", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([s["global_step"] for s in doc["steps"]], [1, 2, 3])
        self.assertAlmostEqual(doc["steps"][0]["loss"], float(steps[0][2]), places=4)

    def test_drift_after_training_and_of_initial_weights(self):
        # Precision drift (docs/precision.md; its numbers are recomputed independently by
        # tests/training/check_drift.py). No t10k files: the training batches, with a note.
        self.write_mnist([i % 10 for i in range(32)])
        p = run("train", self.script, "--steps", "0", "--drift", "int8", "--eval-batches", "2",
                "--calibration-batches", "1", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("epoch:", p.stdout)
        self.assertIn("precision drift: int8", p.stdout)
        self.assertRegex(p.stdout, r"\n  fc +MatMul\* ")
        self.assertIn("calibrated on 8 sample(s)", p.stdout)
        self.assertIn("note: the test split cannot be read", p.stdout)
        self.assertIn("top-1 agreement:", p.stdout)
        p = run("train", self.script, "--steps", "2", "--drift", "target", "--eval-batches", "2",
                "--format", "json", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        drift = json.loads(p.stdout)["drift"]
        self.assertEqual(drift["precision"], "target")
        self.assertEqual([entry["node"] for entry in drift["layers"]], ["flatten", "fc"])
        self.assertEqual(drift["logits"], "fc")
        self.assertEqual(drift["samples"], 16)
        fc = drift["layers"][1]
        self.assertGreater(fc["max_abs"], 0)
        self.assertGreater(fc["cosine"], 0.999)
        self.assertEqual(fc["line"], 16)
        self.assertEqual(drift["first_below"], "")
        # A threshold above every cosine names the first layer (the input already rounded to
        # fp16 makes Flatten's output drift).
        p = run("train", self.script, "--steps", "0", "--drift", "target", "--drift-threshold",
                "1", "--eval-batches", "1", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("first layer under cosine 1: flatten (Flatten", p.stdout)
        self.assertRegex(p.stdout, r"\n> flatten ")
        # int8 with KL calibration writes the table (graphcore/quant.h) it ran with.
        table = self.dir / "quant.json"
        p = run("train", self.script, "--steps", "0", "--drift", "int8", "--calibration", "kl",
                "--calibration-batches", "2", "--eval-batches", "1", "--quant-table", table,
                "--format", "json", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["drift"]["calibration"], "kl")
        t = json.loads(table.read_text())
        self.assertEqual((t["format"], t["version"]), ("cellscope-quant-table", 1))
        self.assertEqual(t["calibration"]["method"], "kl")
        self.assertEqual(t["calibration"]["samples"], 16)
        self.assertEqual([(n["node"], n["weight"]) for n in t["nodes"]], [("fc", "fc.weight")])
        self.assertEqual(len(t["nodes"][0]["weight_scales"]), 10)
        p = run("train", self.script, "--steps", "0", "--drift", "int8", "--calibration",
                "percentile", "--percentile", "99.9", "--calibration-batches", "2",
                "--eval-batches", "1", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("by percentile 99.9 % (2048 bins)", p.stdout)
        for bad in (["--drift", "int4"], ["--steps", "-1"],
                    ["--drift", "target", "--synthetic", "--steps", "1"],
                    ["--drift", "int8", "--eval-batches", "0"],
                    ["--drift", "int8", "--calibration", "mse"],
                    ["--drift", "int8", "--calibration", "percentile", "--percentile", "101"],
                    ["--drift", "target", "--quant-table", self.dir / "t.json"]):
            p = run("train", self.script, *bad, cwd=self.dir)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
        self.assertFalse((self.dir / "t.json").exists())
        # More batches than the data has: the ones there are, with a note.
        p = run("train", self.script, "--steps", "0", "--drift", "target", "--eval-batches", "9",
                cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("evaluated 4 batch(es) of the 9 asked", p.stdout)

    def test_drift_reads_the_programs_evaluation_pipeline(self):
        # model.eval on another folder's test split, batched by 4: the drift reads it (not the
        # training rows), at the batch the network was compiled for (8), with a note.
        self.write_mnist([i % 10 for i in range(32)])
        evald = self.dir / "MNIST_Eval"
        evald.mkdir()
        n = 24
        pixels = [(i * 53 + j * 7) % 256 for i in range(n) for j in range(28 * 28)]
        write_idx(evald / "t10k-images-idx3-ubyte", (n, 28, 28), pixels)
        write_idx(evald / "t10k-labels-idx1-ubyte", (n,), [i % 10 for i in range(n)])
        script = TRAIN_SCRIPT.replace(
            "Model(net, loss, opt).train(2, data, callbacks=[LossMonitor()])\n",
            "model = Model(net, loss, opt)\n"
            "model.train(2, data, callbacks=[LossMonitor()])\n"
            "test = ds.MnistDataset('./MNIST_Eval', usage='test')\n"
            "test = test.map(operations=[vision.Rescale(1.0 / 255.0, 0.0), vision.HWC2CHW()],\n"
            "                input_columns='image')\n"
            "test = test.map(operations=transforms.TypeCast(ms.int32), input_columns='label')\n"
            "model.eval(test.batch(4))\n")
        self.assertNotEqual(script, TRAIN_SCRIPT)
        self.script.write_text(script)
        p = run("graph", self.script, "--format", "text", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("eval data (line 33) dataset.MnistDataset(", p.stdout)
        p = run("train", self.script, "--steps", "1", "--drift", "target", "--eval-batches", "9",
                "--format", "json", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        drift = json.loads(p.stdout)["drift"]
        self.assertIn("the program's evaluation pipeline (line 33, dataset.MnistDataset",
                      drift["data"])
        self.assertEqual(drift["samples"], 24)  # 3 batches of 8 from the 24 eval rows
        self.assertTrue(any("the batch the network was compiled for" in n
                            for n in drift["notes"]), drift["notes"])
        # Without the folder: the training pipeline, with a note that says why.
        shutil.rmtree(evald)
        p = run("train", self.script, "--steps", "0", "--drift", "target", "--format", "json",
                cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        drift = json.loads(p.stdout)["drift"]
        self.assertNotIn("evaluation pipeline", drift["data"])
        self.assertTrue(any("cannot be read" in n for n in drift["notes"]), drift["notes"])

    def test_missing_data_names_the_directory_and_files(self):
        out = self.dir / "net.ckpt"
        p = run("train", self.script, "--data", self.dir / "nowhere", "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nowhere", p.stderr)
        self.assertIn("train-images-idx3-ubyte", p.stderr)
        self.assertFalse(out.exists())

    def test_label_out_of_range_stops_at_the_loss(self):
        labels = [i % 10 for i in range(32)]
        labels[13] = 12
        self.write_mnist(labels)
        out = self.dir / "net.ckpt"
        p = run("train", self.script, "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("12", p.stderr)
        self.assertRegex(p.stderr, r"step 2")
        self.assertFalse(out.exists(), "nothing is written when training fails")

    def test_truncated_idx_file_is_an_error(self):
        self.write_mnist([i % 10 for i in range(32)])
        f = self.data / "train-images-idx3-ubyte"
        f.write_bytes(f.read_bytes()[:1000])
        p = run("train", self.script, cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("train-images-idx3-ubyte", p.stderr)

    def test_the_scripts_command_line_after_double_dash(self):
        # argparse evaluated statically: the defaults without arguments, the command line after
        # `--` otherwise; a command line the script rejects is a warning, not a crash.
        self.write_mnist([i % 10 for i in range(32)])
        script = self.dir / "args.py"
        script.write_text(TRAIN_SCRIPT.replace(
            "from mindspore.train import LossMonitor, Model\n",
            "from mindspore.train import LossMonitor, Model\nimport argparse\n"
            "parser = argparse.ArgumentParser()\n"
            "parser.add_argument('--epochs', type=int, default=2)\n"
            "parser.add_argument('--lr', type=float, default=0.1)\n"
            "args = parser.parse_args()\n").replace(
            "learning_rate=0.1", "learning_rate=args.lr").replace(
            ".train(2, data", ".train(args.epochs, data"))
        p = run("train", script, "--format", "json", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(json.loads(p.stdout)["steps"]), 8)
        p = run("train", script, "--format", "json", "--", "--epochs", "1", "--lr=0.5",
                cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(len(doc["steps"]), 4)
        self.assertEqual(doc["steps"][0]["learning_rate"], 0.5)
        p = run("train", script, "--", "--epochs", "one", cwd=self.dir)
        self.assertIn("invalid int value: 'one'", p.stderr)

    def test_synthetic_batches_for_a_generator_dataset(self):
        # The rows of a GeneratorDataset exist only when the script runs: training stops with a
        # note unless the user asks for synthetic batches, whose column types --input gives.
        script = self.dir / "gen.py"
        script.write_text(TRAIN_SCRIPT.replace(
            'data = ds.MnistDataset("./MNIST_Data", usage="train", shuffle=False)',
            "def rows():\n    yield None\n\n\n"
            'data = ds.GeneratorDataset(rows, column_names=["image", "label"])'))
        out = self.dir / "net.ckpt"
        p = run("train", script, "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("GeneratorDataset", p.stderr)
        self.assertIn("--synthetic", p.stderr)
        self.assertFalse(out.exists())
        # Without the column types: the error names --input; without --steps: a usage error.
        p = run("train", script, "--synthetic", "--steps", "2", cwd=self.dir)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--input", p.stderr)
        p = run("train", script, "--synthetic", cwd=self.dir)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--steps", p.stderr)
        p = run("train", script, "--input", "8,1,28,28", cwd=self.dir)
        self.assertEqual(p.returncode, 2)
        args = ["train", script, "--synthetic", "--steps", "3", "--input", "8,1,28,28",
                "--input", "8:int32", "--format", "json"]
        p = run(*args, "-o", out, cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual([s["samples"] for s in doc["steps"]], [8, 8, 8])
        losses = [s["loss"] for s in doc["steps"]]
        # Labels drawn inside the loss's 10 classes (one outside stops at the loss), finite.
        self.assertTrue(all(0 < x < 100 for x in losses), losses)
        self.assertTrue(any("synthetic data" in n for n in doc["notes"]))
        self.assertTrue(out.is_file())
        # The same seed, the same batches.
        again = json.loads(run(*args, cwd=self.dir).stdout)
        self.assertEqual([s["loss"] for s in again["steps"]], losses)
        other = json.loads(run(*args, "--seed", "7", cwd=self.dir).stdout)
        self.assertNotEqual([s["loss"] for s in other["steps"]], losses)

    def test_a_file_without_training(self):
        p = run("train", LENET)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no training found", p.stderr)

    def test_the_plan_shows_the_compiled_lr_schedule_graph(self):
        # The user's LearningRateSchedule subclass is compiled (global_step -> lr); `cellscope
        # graph` shows that graph in the plan, text and JSON, beside the schedule's call.
        script = SOURCE_DIR / "tests/training/scripts/transformer_adamw_warmup.py"
        p = run("graph", script, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        plans = json.loads(p.stdout)["training"]
        self.assertEqual(len(plans), 1)
        lr = plans[0]["lrGraph"]
        self.assertTrue(lr["compiled"], lr)
        self.assertEqual(lr["className"], "WarmupCosine")
        ops = {n["op"] for n in lr["nodes"]}
        self.assertIn("Cos", ops)
        self.assertEqual([i["name"] for i in lr["inputs"]], ["global_step"])
        text = run("graph", script, "--format", "text").stdout
        self.assertRegex(text, r"lr graph  WarmupCosine\.construct compiled, \d+ nodes")


class ServerRobustnessTests(unittest.TestCase):
    """`cellscope dap` and `cellscope lsp` given hostile messages: they answer or drop them with a
    logged error, and keep serving (issue 14)."""

    def check_init_under_data_limit(self, init_lines, gib, *args):
        """Runs `cellscope check ARGS` on a Net whose __init__ runs `init_lines` (indented 8),
        under a data limit of `gib` GiB. Under AddressSanitizer the limit cannot apply (its
        shadow memory alone is larger): the sanitizer tier runs the check unlimited, where ASan's
        own allocator would report the growth instead."""
        import resource
        d = Path(tempfile.mkdtemp(prefix="cellscope-limit-"))
        self.addCleanup(shutil.rmtree, d)
        f = d / "net.py"
        f.write_text("from mindspore import nn\n\n\nclass Net(nn.Cell):\n"
                     "    def __init__(self):\n        super().__init__()\n"
                     + "".join(f"        {line}\n" for line in init_lines) +
                     "        self.fc = nn.Dense(4, 2)\n\n    def construct(self, x):\n"
                     "        return self.fc(x)\n\n\nnet = Net()\n")

        def limit():
            resource.setrlimit(resource.RLIMIT_DATA, (gib << 30, gib << 30))

        sanitized = os.environ.get("CELLSCOPE_SANITIZED") == "1"
        return subprocess.run([str(BIN), "check", *args, str(f)], capture_output=True,
                              text=True, timeout=60, preexec_fn=None if sanitized else limit)

    def test_values_doubled_in_a_loop_stay_bounded(self):
        # A string, list and tuple doubled 64 times in __init__: before, `check` ran 100 s and
        # reached 24 GB. Now what grows past what the analyser follows is unknown; under a 1 GiB
        # data limit the check finishes with no problem.
        p = self.check_init_under_data_limit(
            ["s, l, t, m = 'ab', [1], (1,), [0]", "for _ in range(64):",
             "    s = s + s", "    l = l * 2", "    t = t + t", "    m += m"], 1)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no problems", p.stdout)

    def test_many_values_stay_within_the_memory_budget(self):
        # 10^10 list items built by a nested comprehension, 100,000 strings of 8 MiB, 100 lists
        # of a million items: each value is under the per-value limit, but together they took
        # `check` past 4-9 GB in 2 minutes. The evaluator's memory budget (512 MiB of values)
        # stops them with a note, under a 2 GiB data limit.
        cases = [["e = [[0] * 100000 for _ in range(100000)]"],
                 ["s = 'ab' * (2**22)", "t = [s + str(i) for i in range(100000)]"],
                 ["x = [list(range(1000000)) for _ in range(100)]"]]
        for lines in cases:
            p = self.check_init_under_data_limit(lines, 2, "--format", "json")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            diags = json.loads(p.stdout)["diagnostics"]
            self.assertEqual([x["code"] for x in diags], ["budget-exceeded"], lines)
            self.assertEqual(diags[0]["severity"], "information", lines)
            self.assertIn("512 MiB", diags[0]["message"])

    def serve(self, cmd, stream, timeout=120):
        p = subprocess.run([str(BIN), cmd], input=stream, capture_output=True, timeout=timeout)
        return p.returncode, parse_frames(p.stdout), p.stderr.decode(errors="replace")

    def dap(self, *requests):
        """Runs `cellscope dap` on these requests (dicts or raw bodies) then `threads` with seq
        1000; returns the exit code, the responses by request_seq, and stderr."""
        stream = b"".join(frame(r) for r in requests)
        stream += frame({"seq": 1000, "type": "request", "command": "threads"})
        code, msgs, err = self.serve("dap", stream)
        responses = {m["request_seq"]: m for m in msgs if m.get("type") == "response"}
        return code, responses, err

    def test_dap_requests_with_wrongly_typed_seq_or_command(self):
        code, responses, err = self.dap(
            {"seq": "1", "type": "request", "command": "initialize", "arguments": {}},
            {"seq": None, "type": "request", "command": "initialize"},
            {"seq": 3, "type": "request", "command": 5},
            {"seq": 4, "type": 7, "command": "initialize"},
            {"seq": 5.5, "type": "request", "command": "threads"},
            {"seq": [6], "type": "request", "command": None},
            [1, 2, 3],
            {"seq": 8, "type": "request", "command": "initialize", "arguments": "oops"})
        self.assertEqual(code, 0, err)
        self.assertIn("seq", err)  # the dropped ones are logged
        self.assertEqual(responses[3]["success"], False)
        self.assertEqual(responses[3]["command"], "")
        self.assertIn("command", responses[3]["message"])
        self.assertTrue(responses[8]["success"])  # arguments of the wrong type: ignored
        self.assertTrue(responses[1000]["success"])  # still serving
        self.assertEqual(sorted(responses), [3, 8, 1000])

    def launch_error(self, inputs, extra=None):
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / "net.py"
            model.write_text(ANY_SHAPE_MODEL)
            args = {"program": str(model), "inputs": inputs, **(extra or {})}
            code, responses, err = self.dap(
                {"seq": 1, "type": "request", "command": "initialize", "arguments": {}},
                {"seq": 2, "type": "request", "command": "launch", "arguments": args})
        self.assertEqual(code, 0, err)
        self.assertTrue(responses[1000]["success"], err)  # still serving
        self.assertFalse(responses[2]["success"], responses[2])
        return responses[2]["message"]

    def test_dap_launch_with_input_shapes_whose_size_overflows(self):
        # 2**31 * 2**31 elements fit in int64 but their byte count wraps size_t (to 0: a one-byte
        # allocation that Tensor::random wrote past); 3037000500**2 and 100000**4 overflow int64.
        msg = self.launch_error(["2147483648,2147483648"])
        self.assertIn("(2147483648, 2147483648)", msg)
        self.assertIn("bytes", msg)
        for shape in ("3037000500,3037000500", "100000,100000,100000,100000"):
            with self.subTest(shape=shape):
                msg = self.launch_error([shape])
                self.assertIn("bad input shape", msg)
                self.assertIn("more elements than fit in int64", msg)

    def test_dap_launch_with_a_tensor_larger_than_the_limit(self):
        # 4 TB: more than this machine's memory (the default limit), refused before allocating.
        msg = self.launch_error(["1000000,1000000"])
        self.assertIn("more than the runtime's limit", msg)
        msg = self.launch_error(["1000,1000"], {"maxTensorBytes": 1000000})
        self.assertIn("tensor (1000, 1000) f32 needs 3.8 MiB, more than the runtime's limit of "
                      "976.6 KiB", msg)

    def test_dap_launch_with_a_forged_npy_header(self):
        with tempfile.TemporaryDirectory() as tmp:
            for shape in ("(100000, 100000, 100000)", "(100000, 100000, 100000, 100000)",
                          "(-1, 4)", "(99999999999999999999999,)"):
                with self.subTest(shape=shape):
                    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape
                    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
                    npy = Path(tmp) / "forged.npy"
                    npy.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                                    header.encode() + b"\0" * 64)
                    msg = self.launch_error([str(npy)])
                    self.assertIn("cannot read input", msg)
                    self.assertIn("not a supported .npy file", msg)

    def lsp_initialize(self, id_):
        return frame({"jsonrpc": "2.0", "id": id_, "method": "initialize",
                      "params": {"capabilities": {}}})

    def test_lsp_content_length_beyond_the_limit_with_a_short_body(self):
        for length in (33 << 20, 10 ** 15 - 1):  # longer ones are malformed (15 digits at most)
            with self.subTest(length=length):
                short = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}).encode()
                stream = (b"Content-Length: %d\r\n\r\n" % length + short + self.lsp_initialize(2) +
                          frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}) +
                          frame({"jsonrpc": "2.0", "method": "exit"}))
                code, msgs, err = self.serve("lsp", stream)
                self.assertEqual(code, 0, err)
                by_id = {m.get("id"): m for m in msgs if "id" in m}
                self.assertEqual(by_id[1]["error"]["code"], -32600)  # refused, answered
                self.assertIn("exceeds the limit", by_id[1]["error"]["message"])
                self.assertIn("capabilities", by_id[2]["result"])  # the next message is served
                self.assertIn(3, by_id)
                self.assertIn("exceeds the limit", err)

    def test_lsp_ids_methods_and_params_of_the_wrong_types(self):
        bad = [{"jsonrpc": "2.0", "id": 1.5, "method": "initialize"},
               {"jsonrpc": "2.0", "id": None, "method": "initialize"},
               {"jsonrpc": "2.0", "id": [1], "method": "initialize"},
               {"jsonrpc": "2.0", "id": 4, "method": 7},
               {"jsonrpc": 2, "id": 5, "method": "initialize"},
               {"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": "x"}]
        uri = "file:///tmp/cellscope_bad_types.py"
        opened = {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                  "params": {"textDocument": {"uri": uri, "languageId": "python",
                                              "version": "1", "text": "x = 1\n"}}}
        changed = {"jsonrpc": "2.0", "method": "textDocument/didChange",
                   "params": {"textDocument": {"uri": uri, "version": 2},
                              "contentChanges": [{"text": "y = 2\n"}]}}
        complete = {"jsonrpc": "2.0", "id": 8, "method": "textDocument/completion",
                    "params": {"textDocument": {"uri": uri},
                               "position": {"line": 0, "character": 1}}}
        stream = b"".join(frame(m) for m in bad) + self.lsp_initialize(7)
        stream += frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        stream += frame(opened) + frame(changed) + frame(complete)
        stream += frame({"jsonrpc": "2.0", "id": 9, "method": "shutdown"})
        stream += frame({"jsonrpc": "2.0", "method": "exit"})
        code, msgs, err = self.serve("lsp", stream)
        self.assertEqual(code, 0, err)
        errors = [m for m in msgs if "error" in m]
        self.assertEqual(len(errors), len(bad), msgs)
        by_id = {m.get("id"): m for m in msgs if "id" in m}
        self.assertIn("capabilities", by_id[7]["result"])
        # A didOpen whose version is a string is dropped whole: the document is not open, and
        # completion in it answers null instead of reading a missing text.
        self.assertIsNone(by_id[8].get("result"), by_id[8])
        self.assertIn(9, by_id)


class DeployTests(unittest.TestCase):
    """`cellscope deploy`'s command line without a device (the deploy tier, tests/deploy, runs
    the agent): usage errors, and --progress json / --watch against an address nobody serves."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cellscope-cli-deploy-")
        self.env = dict(os.environ, HOME=self.tmp, CS_TOKEN="t" * 32)
        self.env.pop("XDG_CONFIG_HOME", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def deploy(self, *args, devices=None):
        with open(os.path.join(self.tmp, "mindspore_config.json"), "w") as f:
            json.dump({"devices": devices if devices is not None else [
                {"name": "nobody", "address": "127.0.0.1:1", "token_env": "CS_TOKEN"}]}, f)
        return subprocess.run([str(BIN), "deploy", *args], cwd=self.tmp, env=self.env,
                              capture_output=True, text=True, timeout=60)

    def test_usage_errors(self):
        for args in (["--watch", "m.mindir"], ["--watch", "--rollback"], []):
            r = self.deploy(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn("give a model file, or --rollback or --watch without one", r.stderr)
        r = self.deploy("--rollback", "--progress", "yaml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--progress", r.stderr)

    def test_progress_json_errors_are_json_lines(self):
        r = self.deploy("--rollback", "--progress", "json", devices=[])
        self.assertEqual(r.returncode, 2)
        lines = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual([e["phase"] for e in lines], ["error"])
        self.assertIn("no devices", lines[0]["message"])
        r = self.deploy("--rollback", "--device", "nobody", "--retry-for", "1", "--progress", "json")
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(lines[0], {"phase": "connect", "device": "nobody", "address": "127.0.0.1:1"})
        self.assertEqual((lines[-1]["phase"], lines[-1]["code"]), ("error", "unreachable"))
        self.assertIn("cannot reach 127.0.0.1:1", lines[-1]["message"])
        self.assertTrue(any(e["phase"] == "message" and "retrying" in e["message"] for e in lines))

    def test_watch_of_an_unreachable_device_exits_1(self):
        r = self.deploy("--watch", "--device", "nobody", "--retry-for", "1")
        self.assertEqual((r.returncode, r.stdout), (1, ""), r.stderr)
        self.assertIn("device 'nobody' (127.0.0.1:1) is unreachable", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, ".config")))  # nothing pinned


if __name__ == "__main__":
    unittest.main()
