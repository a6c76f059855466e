#!/usr/bin/env python3
"""The deploy tier (docs/deploy.md): `cellscope agent` in a network namespace this test makes
(a veth pair with addresses in 10.213.0.0/16, which exist only on this machine), `cellscope
deploy` from the root namespace, and the faults of issue 20, each checked for nothing lost:
kill -9 of the agent mid-transfer then resume, a corrupted chunk, a wrong token, a wrong
fingerprint, a path-traversal name, a model that fails to load, a full disk and a dropped link.

Run as root (ip netns, mount): python3 tests/deploy/test_deploy.py --bin build/cellscope
"""
import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = None
NS = f"csdeploy{os.getpid()}"
VETH_HOST = f"csdh{os.getpid() % 100000}"
VETH_NS = f"csdn{os.getpid() % 100000}"
OCTET = 1 + os.getpid() % 250
HOST_IP = f"10.213.{OCTET}.1"
AGENT_IP = f"10.213.{OCTET}.2"
TOKEN = "t0ken-for-the-deploy-tier-" + "x" * 16


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


class Agent:
    """A `cellscope agent` inside the namespace."""

    def __init__(self, state, port, env=None):
        self.state = state
        self.port = port
        self.proc = None
        self.fingerprint = None
        self.env = env or {}

    def start(self):
        env = dict(os.environ, CELLSCOPE_AGENT_TOKEN=TOKEN, **self.env)
        self.log = open(self.state + ".log", "a")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", NS, BIN, "--log-level", "info", "agent", "--listen",
             f"{AGENT_IP}:{self.port}", "--state-dir", self.state],
            stdout=subprocess.PIPE, stderr=self.log,
            text=True, env=env)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError("agent did not start: " + line + open(self.state + ".log").read())
        self.fingerprint = line.rsplit("SHA-256 ", 1)[1].rstrip(")\n")
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.close()

    def close(self):
        self.proc.stdout.close()
        self.log.close()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.close()

    def call(self, method, path, body=None, token=TOKEN):
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(f"https://{AGENT_IP}:{self.port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
        req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")


class DeployTier(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cellscope-deploy-")
        cls.home = os.path.join(cls.tmp, "home")
        os.makedirs(cls.home)
        # The models, exported by Cellscope itself.
        cls.small = os.path.join(cls.tmp, "small.mindir")
        cls.big = os.path.join(cls.tmp, "big.mindir")
        cls.two = os.path.join(cls.tmp, "two.mindir")
        for cell, inputs, out in (("Small", ["1,1,32,32"], cls.small), ("Big", ["1,1024"], cls.big),
                                  ("TwoInputs", ["1,1,8,8", "1,8"], cls.two)):
            r = subprocess.run([BIN, "export", os.path.join(HERE, "models.py"), "--cell", cell,
                                *[a for i in inputs for a in ("--input", i)], "-o", out],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
        cls.broken = os.path.join(cls.tmp, "broken.mindir")
        with open(cls.broken, "wb") as f:
            f.write(b"\x08\x01" + os.urandom(4096))  # hashes fine, is no MindIR
        # The namespace and the veth pair.
        sh("ip", "netns", "add", NS)
        sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS)
        sh("ip", "link", "set", VETH_NS, "netns", NS)
        sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", VETH_HOST)
        sh("ip", "link", "set", VETH_HOST, "up")
        # While the veth is down its route is gone: this keeps the test's packets on the
        # machine instead of following the default route out.
        sh("ip", "route", "add", "blackhole", f"10.213.{OCTET}.0/30", "metric", "4000")
        sh("ip", "netns", "exec", NS, "ip", "addr", "add", f"{AGENT_IP}/30", "dev", VETH_NS)
        sh("ip", "netns", "exec", NS, "ip", "link", "set", VETH_NS, "up")
        sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")
        cls.port = 18443

    @classmethod
    def tearDownClass(cls):
        sh("ip", "route", "del", "blackhole", f"10.213.{OCTET}.0/30", "metric", "4000",
           check=False)
        sh("ip", "link", "del", VETH_HOST, check=False)
        sh("ip", "netns", "del", NS, check=False)
        for m in getattr(cls, "mounts", []):
            sh("umount", "-l", m, check=False)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        DeployTier.port += 1
        self.state = tempfile.mkdtemp(prefix="state-", dir=self.tmp)
        self.project = tempfile.mkdtemp(prefix="project-", dir=self.tmp)
        self.write_config(self.port)
        self.agents = []

    def tearDown(self):
        for a in self.agents:
            a.stop()

    def write_config(self, port, token_env="CS_DEPLOY_TOKEN"):
        with open(os.path.join(self.project, "mindspore_config.json"), "w") as f:
            json.dump({"devices": [{"name": "edge", "address": f"{AGENT_IP}:{port}",
                                    "target": "cpu", "token_env": token_env}]}, f)

    def agent(self, env=None):
        a = Agent(self.state, self.port, env).start()
        self.agents.append(a)
        return a

    def deploy(self, model, *extra, token=TOKEN, wait=True, home=None):
        env = dict(os.environ, CS_DEPLOY_TOKEN=token, HOME=home or self.home)
        env.pop("XDG_CONFIG_HOME", None)
        args = [BIN, "deploy"] + ([model] if model else []) + ["--device", "edge", *extra]
        p = subprocess.Popen(args, cwd=self.project, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if not wait:
            return p
        out, err = p.communicate(timeout=300)
        return p.returncode, out, err

    def infer_first(self, agent):
        status, body = agent.call("POST", "/v1/infer", {"fill": "ones"})
        self.assertEqual(status, 200, body)
        return body["bundle"], body["outputs"][0]["shape"], body["outputs"][0]["data"][:4]

    def bundles(self):
        return sorted(os.listdir(os.path.join(self.state, "bundles")))

    # ---- the path that works ---------------------------------------------------------------

    def test_deploy_then_rollback(self):
        a = self.agent()
        rc, out, err = self.deploy(self.small)
        self.assertEqual(rc, 0, err)
        self.assertIn("pinned its certificate SHA-256 " + a.fingerprint, err)
        bundle, shape, _ = self.infer_first(a)
        self.assertEqual(shape, [1, 10])
        manifest = json.load(open(os.path.join(self.state, "current", "manifest.json")))
        self.assertEqual(manifest["sha256"], hashlib.sha256(open(self.small, "rb").read()).hexdigest())
        self.assertEqual(manifest["check"]["backend"], "cellscope-cpu")
        rc, out, err = self.deploy(self.big)
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.infer_first(a)[1], [1, 1024])
        rc, out, err = self.deploy(None, "--rollback")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.infer_first(a)[0], bundle)
        # The inference equals the one of the same model exported and run locally? The agent's
        # answer is checked against `cellscope-run`-free ground truth: the same file loaded twice
        # gives the same numbers.
        self.assertEqual(self.infer_first(a)[2], self.infer_first(a)[2])

    def test_deploy_a_python_file_exports_it_first(self):
        a = self.agent()
        rc, out, err = self.deploy(os.path.join(HERE, "models.py"), "--cell", "Small",
                                   "--input", "1,1,32,32")
        self.assertEqual(rc, 0, err)
        self.assertIn("wrote ", err)  # the export's line
        bundle, shape, _ = self.infer_first(a)
        self.assertEqual((bundle.split("-", 1)[1], shape), ("Small.mindir", [1, 10]))
        rc, out, err = self.deploy(os.path.join(HERE, "models.py"))
        self.assertEqual(rc, 2)
        self.assertIn("say what to export: --cell and --input", err)

    def read_stream(self, a, count=2):
        """`count` messages of /v1/stream, read by a raw WebSocket client."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection((AGENT_IP, a.port), timeout=10)
        s = ctx.wrap_socket(raw)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET /v1/stream HTTP/1.1\r\nHost: {AGENT_IP}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").encode())
        f = s.makefile("rb")
        self.assertIn(b" 101 ", f.readline())
        while f.readline() not in (b"\r\n", b""):
            pass
        messages = []
        for _ in range(count):
            b0, b1 = f.read(2)
            self.assertEqual(b0, 0x81)  # a final text frame
            n = b1 & 0x7F
            if n == 126:
                n = int.from_bytes(f.read(2), "big")
            messages.append(json.loads(f.read(n)))
        s.close()
        return messages

    def test_telemetry_stream(self):
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        for _ in range(5):
            self.infer_first(a)
        messages = self.read_stream(a)
        m = messages[0]
        self.assertEqual(m["type"], "telemetry")
        self.assertGreaterEqual(m["inferences"], 5)
        self.assertGreater(m["latency_ms"]["p99"], 0)
        self.assertGreaterEqual(m["latency_ms"]["p99"], m["latency_ms"]["p50"])
        self.assertGreater(m["rss_mb"], 1)
        self.assertTrue(m["power_w"] == "n/a" or m["power_w"] >= 0)
        self.assertTrue(m["bundle"].endswith("-small.mindir"))
        # fp32 bundle: no int8 agreement to report, and none invented.
        self.assertEqual(m["precision"], "fp32")
        self.assertEqual(m["backend"], "cellscope-cpu")  # the serving bundle's (the Device chart shows it)
        self.assertEqual(m["agreement"], {"load": "n/a", "last_infer": "n/a"})

    def test_telemetry_power_from_hwmon(self):
        """A board whose only power sensor is hwmon (a fake sysfs tree through the test-only
        $CELLSCOPE_AGENT_SYSFS_ROOT): the stream reports that sensor's watts and names it."""
        root = os.path.join(self.project, "sys")
        chip = os.path.join(root, "class", "hwmon", "hwmon3")
        os.makedirs(chip)
        for name, text in (("name", "ina3221"), ("power1_label", "VDD_IN"),
                           ("power1_input", "3300000")):
            with open(os.path.join(chip, name), "w") as f:
                f.write(text + "\n")
        a = self.agent(env={"CELLSCOPE_AGENT_SYSFS_ROOT": root})
        m = self.read_stream(a, 1)[0]
        self.assertEqual(m["power_w"], 3.3)
        self.assertIn("hwmon3 ina3221 power1_input (VDD_IN)", m["power_source"])
        with open(os.path.join(chip, "power1_input"), "w") as f:
            f.write("5125000\n")
        self.assertEqual(self.read_stream(a, 2)[1]["power_w"], 5.125)

    def test_progress_json(self):
        a = self.agent()
        rc, out, err = self.deploy(self.big, "--chunk-kib", "1024", "--progress", "json")
        self.assertEqual(rc, 0, err)
        events = [json.loads(line) for line in out.splitlines()]  # every stdout line is JSON
        phases = [e["phase"] for e in events if e["phase"] != "message"]
        self.assertEqual(phases[0], "connect")
        self.assertEqual(events[0]["device"], "edge")
        uploads = [e for e in events if e["phase"] == "upload"]
        size = os.path.getsize(self.big)
        total = -(-size // (1024 * 1024))
        self.assertEqual([u["chunks_done"] for u in uploads], list(range(total + 1)))
        self.assertTrue(all(u["chunks_total"] == total and u["bytes_total"] == size
                            for u in uploads))
        self.assertEqual(uploads[-1]["bytes_done"], size)
        self.assertEqual(phases[-2:], ["commit", "done"])
        done = events[-1]
        self.assertEqual(done["sha256"], hashlib.sha256(open(self.big, "rb").read()).hexdigest())
        self.assertEqual(done["bundle"], self.infer_first(a)[0])
        # A refusal is the last line: its code and message.
        rc, out, err = self.deploy(self.broken, "--progress", "json")
        self.assertEqual(rc, 1)
        last = json.loads(out.splitlines()[-1])
        self.assertEqual((last["phase"], last["code"]), ("error", "load-failed"))
        self.assertIn(last["message"], err)
        rc, out, err = self.deploy(None, "--rollback", "--progress", "json")
        self.assertEqual(rc, 1)  # nothing to roll back to: the broken one never served
        self.assertEqual(json.loads(out.splitlines()[-1])["code"], "no-previous")

    def test_watch_prints_telemetry_lines(self):
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        for _ in range(5):
            self.infer_first(a)
        p = self.deploy(None, "--watch", "--retry-for", "3", wait=False)
        lines = [p.stdout.readline() for _ in range(2)]
        m = json.loads(lines[0])
        self.assertEqual(m["type"], "telemetry")
        self.assertGreaterEqual(m["inferences"], 5)
        self.assertGreaterEqual(m["latency_ms"]["p99"], m["latency_ms"]["p50"])
        self.assertTrue(m["bundle"].endswith("-small.mindir"))
        self.assertTrue(m["power_w"] == "n/a" or m["power_w"] >= 0)
        self.assertEqual(json.loads(lines[1])["type"], "telemetry")
        # The device goes away: the watch retries, then says so and exits 1.
        a.stop()
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("device 'edge' (" + AGENT_IP, err)
        self.assertIn("is unreachable", err)
        # Nothing listens: the same, from the start.
        rc, out, err = self.deploy(None, "--watch", "--retry-for", "2")
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("is unreachable", err)

    def test_watch_refuses_a_changed_fingerprint(self):
        a = self.agent()
        home = tempfile.mkdtemp(prefix="home-", dir=self.tmp)
        known = os.path.join(home, ".config", "cellscope")
        os.makedirs(known)
        old = ":".join(["AB"] * 32)
        with open(os.path.join(known, "known_devices.json"), "w") as f:
            json.dump({"devices": {f"{AGENT_IP}:{a.port}": {"name": "edge", "fingerprint": old}}}, f)
        p = self.deploy(None, "--watch", wait=False, home=home)
        out, err = p.communicate(timeout=60)
        self.assertEqual((p.returncode, out), (1, ""), err)
        self.assertIn("has changed: pinned SHA-256 " + old + ", now " + a.fingerprint, err)

    # ---- faults ------------------------------------------------------------------------------

    def test_kill9_mid_transfer_resumes(self):
        a = self.agent()
        p = self.deploy(self.big, "--chunk-kib", "64", "--chunk-delay-ms", "40", wait=False)
        sent = 0
        while sent < 20:
            line = p.stderr.readline()
            self.assertTrue(line, "deploy ended early")
            if "sent chunk" in line:
                sent += 1
        a.kill9()
        time.sleep(1.5)
        a = self.agent()  # same state dir
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        resumed = [l for l in err.splitlines() if "resuming upload" in l]
        self.assertTrue(resumed, err)
        m = re.search(r"(\d+) of (\d+) chunks already", resumed[-1])
        have, total = int(m.group(1)), int(m.group(2))
        self.assertGreaterEqual(have, 15)  # not from the start
        sent_after = sum(1 for l in err.splitlines() if "sent chunk" in l) - sent
        self.assertLessEqual(sent_after, total - have + 1)
        self.assertEqual(self.infer_first(a)[1], [1, 1024])
        manifest = json.load(open(os.path.join(self.state, "current", "manifest.json")))
        self.assertEqual(manifest["sha256"], hashlib.sha256(open(self.big, "rb").read()).hexdigest())

    def test_corrupted_chunk_is_rejected_and_resent(self):
        a = self.agent()
        rc, out, err = self.deploy(self.big, "--chunk-kib", "256", "--fault-corrupt-chunk", "3")
        self.assertEqual(rc, 0, err)
        self.assertIn("chunk 3 rejected by the device", err)
        self.assertIn("send it again", err)
        self.assertEqual(self.infer_first(a)[1], [1, 1024])

    def test_wrong_token_refused_nothing_written_then_rate_limited(self):
        a = self.agent()
        rc, out, err = self.deploy(self.small, token="wrong-token-wrong-token")
        self.assertEqual(rc, 1)
        self.assertIn("wrong token", err)
        self.assertEqual(os.listdir(os.path.join(self.state, "uploads")), [])
        self.assertEqual(self.bundles(), [])
        codes = [a.call("GET", "/v1/info", token="nope-nope-nope-nope")[0] for _ in range(4)]
        self.assertIn(429, codes)
        self.assertEqual(codes[0], 401)

    def test_changed_fingerprint_refused_nothing_sent(self):
        a = self.agent()
        rc, out, err = self.deploy(self.small)
        self.assertEqual(rc, 0, err)
        old = a.fingerprint
        a.stop()
        for f in ("agent.crt", "agent.key"):
            os.remove(os.path.join(self.state, f))
        a = self.agent()  # a new certificate
        self.assertNotEqual(a.fingerprint, old)
        before = self.bundles()
        rc, out, err = self.deploy(self.big)
        self.assertEqual(rc, 1)
        self.assertIn("has changed: pinned SHA-256 " + old + ", now " + a.fingerprint, err)
        self.assertEqual(self.bundles(), before)
        self.assertEqual(os.listdir(os.path.join(self.state, "uploads")), [])
        self.assertEqual(self.infer_first(a)[1], [1, 10])

    def test_path_traversal_name_refused(self):
        a = self.agent()
        for name in ("../evil.mindir", "/etc/evil.mindir", "a/b.mindir", "..mindir"):
            rc, out, err = self.deploy(self.small, "--name", name)
            self.assertEqual(rc, 1, name)
            self.assertIn("[bad-name]", err)
        self.assertEqual(self.bundles(), [])
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "evil.mindir")))
        status, body = a.call("POST", "/v1/uploads", {"name": "x\u0000.mindir", "size": 10,
                                                      "sha256": "0" * 64})
        self.assertEqual((status, body["error"]["code"]), (400, "bad-name"))

    # ---- int8 bundles (docs/deploy.md, "INT8 bundles") -------------------------------------

    def calibration(self, n=24, shape=(1, 32, 32), seed=0):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        path = os.path.join(self.project, f"cal{seed}.npy")
        np.save(path, x)
        labels = os.path.join(self.project, f"labels{seed}.npy")
        np.save(labels, rng.integers(0, 10, n).astype(np.int64))
        return path, labels, x

    def test_int8_bundle_built_on_the_device(self):
        a = self.agent()
        cal, labels, x = self.calibration()
        rc, out, err = self.deploy(self.small, "--precision", "int8", "--calibration", "kl",
                                   "--calibration-data", cal, "--labels", labels)
        self.assertEqual(rc, 0, err)
        self.assertIn("int8 vs fp32:", out)
        cur = os.path.join(self.state, "current")
        with open(os.path.join(cur, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["precision"], "int8")
        self.assertEqual(manifest["calibration"]["method"], "kl")
        def sha(p):
            with open(p, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        self.assertEqual(manifest["calibration_data"]["sha256"], sha(cal))
        self.assertEqual(manifest["labels"]["sha256"], sha(labels))
        self.assertEqual(manifest["quant_table"]["sha256"], sha(os.path.join(cur, "quant.json")))
        with open(os.path.join(cur, "quant.json")) as f:
            table = json.load(f)
        self.assertEqual(table["format"], "cellscope-quant-table")
        self.assertEqual(table["calibration"]["method"], "kl")
        self.assertEqual(table["calibration"]["samples"], 24)
        self.assertEqual(len(table["nodes"]), 4)  # conv1, conv2, fc1, fc2
        status, info = a.call("GET", "/v1/info")
        self.assertEqual(info["precision"], "int8")
        self.assertEqual(info["calibration"]["method"], "kl")
        q = info["quality"]
        self.assertEqual((q["on"], q["samples"]), ("calibration data", 24))
        self.assertGreater(q["cosine"], 0.99)
        self.assertTrue(0 <= q["top1_agreement"] <= 1)
        self.assertEqual(q["accuracy"]["samples"], 24)

        # /v1/infer answers at int8, fp32 on request; "compare" measures both on this input.
        sample = {"inputs": [{"shape": [1, 1, 32, 32], "data": x[3].ravel().tolist()}]}
        s8, r8 = a.call("POST", "/v1/infer", sample)
        s32, r32 = a.call("POST", "/v1/infer", dict(sample, precision="fp32"))
        self.assertEqual((s8, s32), (200, 200), (r8, r32))
        self.assertEqual((r8["precision"], r32["precision"]), ("int8", "fp32"))
        o8 = np.array(r8["outputs"][0]["data"])
        o32 = np.array(r32["outputs"][0]["data"])
        self.assertFalse(np.array_equal(o8, o32))  # really another path
        cos = float(o8 @ o32 / np.sqrt((o8 @ o8) * (o32 @ o32)))
        self.assertGreater(cos, 0.99)
        sc, rc_ = a.call("POST", "/v1/infer", dict(sample, compare=True))
        self.assertEqual(sc, 200, rc_)
        self.assertEqual(rc_["outputs"][0]["data"], r8["outputs"][0]["data"])
        self.assertAlmostEqual(rc_["agreement"]["cosine"], cos, places=9)
        self.assertEqual(rc_["agreement"]["top1_agreement"],
                         1.0 if o8.argmax() == o32.argmax() else 0.0)
        m = self.read_stream(a, 1)[0]
        self.assertEqual(m["precision"], "int8")
        self.assertEqual(m["agreement"]["load"], q)
        self.assertEqual(m["agreement"]["last_infer"], rc_["agreement"])
        # A restart reads quant.json back (hash checked): the same int8 numbers.
        a.stop()
        a = self.agent()
        self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], r8["outputs"])

    def test_int8_bad_build_or_table_rolls_back(self):
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        good = self.infer_first(a)
        # Calibration data of another shape: refused on the device, the fp32 model serves.
        cal, _, _ = self.calibration(shape=(1, 28, 28), seed=1)
        rc, out, err = self.deploy(self.small, "--precision", "int8", "--calibration-data", cal)
        self.assertEqual(rc, 1, err)
        self.assertIn("[load-failed]", err)
        self.assertIn("has the shape (N, 1, 32, 32)", err)
        self.assertEqual(self.infer_first(a), good)
        self.assertEqual(a.call("GET", "/v1/info")[1]["precision"], "fp32")
        # int8 without calibration data: refused before anything is sent.
        rc, out, err = self.deploy(self.small, "--precision", "int8")
        self.assertEqual(rc, 2, err)
        # A good int8 bundle, then its table altered on disk: at restart the hash check fails,
        # the agent switches back to the previous (fp32) bundle.
        cal, _, _ = self.calibration(seed=2)
        rc, out, err = self.deploy(self.small, "--precision", "int8", "--calibration-data", cal)
        self.assertEqual(rc, 0, err)
        self.assertEqual(a.call("GET", "/v1/info")[1]["precision"], "int8")
        table = os.path.join(self.state, "current", "quant.json")
        with open(table) as f:
            t = json.load(f)
        t["nodes"][0]["inputs"][0]["scale"] *= 4
        with open(table, "w") as f:
            json.dump(t, f)
        a.stop()
        a = self.agent()
        status, info = a.call("GET", "/v1/info")
        self.assertEqual(info["precision"], "fp32")
        self.assertEqual(self.infer_first(a)[1:], good[1:])
        with open(self.state + ".log") as f:
            self.assertIn("quant.json does not match its SHA-256", f.read())

    # ---- target (fp16) bundles (docs/deploy.md, "Target bundles") --------------------------

    def test_target_bundle_serves_fp16_emulation(self):
        a = self.agent()
        rc, out, err = self.deploy(self.small, "--precision", "target")
        self.assertEqual(rc, 0, err)
        self.assertIn("target vs fp32:", out)
        with open(os.path.join(self.state, "current", "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["precision"], "target")
        self.assertNotIn("quant_table", manifest)
        self.assertNotIn("calibration_data", manifest)
        status, info = a.call("GET", "/v1/info")
        self.assertEqual(info["precision"], "target")
        cpu = {b["name"]: b for b in info["backends"]}["cellscope-cpu"]
        self.assertIn("target", cpu["precisions"])
        q = info["quality"]
        # No data sent: two batches of seeded normal inputs, said so.
        self.assertEqual((q["on"], q["samples"]), ("random normal inputs (seed 0)", 2))
        self.assertEqual(q["accuracy"], "n/a")
        self.assertGreater(q["cosine"], 0.999)
        self.assertLess(q["cosine"], 1.0)
        self.assertEqual(q, manifest["quality"])

        x = np.random.default_rng(9).standard_normal((1, 1, 32, 32)).astype(np.float32)
        sample = {"inputs": [{"shape": [1, 1, 32, 32], "data": x.ravel().tolist()}]}
        st, rt = a.call("POST", "/v1/infer", sample)
        s32, r32 = a.call("POST", "/v1/infer", dict(sample, precision="fp32"))
        self.assertEqual((st, s32), (200, 200), (rt, r32))
        self.assertEqual((rt["precision"], r32["precision"]), ("target", "fp32"))
        ot = np.array(rt["outputs"][0]["data"])
        o32 = np.array(r32["outputs"][0]["data"])
        self.assertEqual(rt["outputs"][0]["dtype"], "float32")
        # fp16 storage: every value the target path answers is a half-precision number, and it
        # is not the fp32 answer (whose values are not all halves).
        self.assertTrue(np.array_equal(ot.astype(np.float16).astype(np.float64), ot))
        self.assertFalse(np.array_equal(o32.astype(np.float16).astype(np.float64), o32))
        self.assertFalse(np.array_equal(ot, o32))
        # Within fp16's precision of fp32 (11 significant bits, a few roundings per layer).
        np.testing.assert_allclose(ot, o32, rtol=0, atol=2e-2 * np.abs(o32).max())
        cos = float(ot @ o32 / np.sqrt((ot @ ot) * (o32 @ o32)))
        sc, rc_ = a.call("POST", "/v1/infer", dict(sample, compare=True))
        self.assertEqual(sc, 200, rc_)
        self.assertEqual(rc_["outputs"], rt["outputs"])
        self.assertAlmostEqual(rc_["agreement"]["cosine"], cos, places=9)
        # A target bundle has no int8 path.
        s8, r8 = a.call("POST", "/v1/infer", dict(sample, precision="int8"))
        self.assertEqual((s8, r8["error"]["code"]), (422, "bad-input"))
        m = self.read_stream(a, 1)[0]
        self.assertEqual(m["precision"], "target")
        self.assertEqual(m["agreement"]["load"], q)
        self.assertEqual(m["agreement"]["last_infer"], rc_["agreement"])
        # A restart rebuilds the target executor from the bundle: the same numbers.
        a.stop()
        a = self.agent()
        self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], rt["outputs"])

        # With data and labels: the quality is measured on them (accuracy fp32 and target).
        cal, labels, _ = self.calibration(n=10, seed=4)
        rc, out, err = self.deploy(self.small, "--precision", "target", "--calibration-data",
                                   cal, "--labels", labels)
        self.assertEqual(rc, 0, err)
        q = a.call("GET", "/v1/info")[1]["quality"]
        self.assertEqual((q["on"], q["samples"]), ("calibration data", 10))
        self.assertEqual(sorted(q["accuracy"]), ["fp32", "samples", "target"])
        # --labels alone, or with fp32: refused before anything is sent.
        self.assertEqual(self.deploy(self.small, "--precision", "target", "--labels",
                                     labels)[0], 2)
        self.assertEqual(self.deploy(self.small, "--calibration-data", cal)[0], 2)

    def test_target_bundle_of_two_inputs(self):
        """A model of two inputs: served at target, its quality measured on seeded inputs for
        both; a .npy (one input's data) for it refused, the bundle still serves."""
        a = self.agent()
        rc, out, err = self.deploy(self.two, "--precision", "target")
        self.assertEqual(rc, 0, err)
        q = a.call("GET", "/v1/info")[1]["quality"]
        self.assertEqual((q["on"], q["samples"]), ("random normal inputs (seed 0)", 2))
        self.assertGreater(q["cosine"], 0.999)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((1, 1, 8, 8))
        y = rng.standard_normal((1, 8))
        sample = {"inputs": [{"shape": [1, 1, 8, 8], "data": x.ravel().tolist()},
                             {"shape": [1, 8], "data": y.ravel().tolist()}]}
        st, rt = a.call("POST", "/v1/infer", sample)
        s32, r32 = a.call("POST", "/v1/infer", dict(sample, precision="fp32"))
        self.assertEqual((st, s32), (200, 200), (rt, r32))
        ot = np.array(rt["outputs"][0]["data"])
        o32 = np.array(r32["outputs"][0]["data"])
        self.assertEqual(ot.shape, (5,))
        self.assertTrue(np.array_equal(ot.astype(np.float16).astype(np.float64), ot))
        np.testing.assert_allclose(ot, o32, rtol=0, atol=2e-2 * np.abs(o32).max())
        cal, _, _ = self.calibration(n=4, shape=(1, 8, 8), seed=5)
        rc, out, err = self.deploy(self.two, "--precision", "target", "--calibration-data", cal)
        self.assertEqual(rc, 1, err)
        self.assertIn("[load-failed]", err)
        self.assertIn("a .npy holds the data of one input; this model takes 2 (x, y)", err)
        self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], rt["outputs"])

    def two_input_data(self, name, n=16, seed=6, **arrays):
        """A .npz for TwoInputs (x: (N, 1, 8, 8), y: (N, 8)); `arrays` replace or add members,
        None removes one; positional=True writes arr_0, arr_1 (np.savez's names)."""
        rng = np.random.default_rng(seed)
        members = {"x": rng.standard_normal((n, 1, 8, 8)).astype(np.float32),
                   "y": rng.standard_normal((n, 8)).astype(np.float32)}
        positional = arrays.pop("positional", False)
        for k, v in arrays.items():
            if v is None:
                members.pop(k)
            else:
                members[k] = v
        path = os.path.join(self.project, name)
        if positional:
            np.savez(path, *members.values())
        else:
            np.savez_compressed(path, **members)
        return path, members

    def test_int8_of_two_inputs_from_npz(self):
        """Issue 20: calibration data for a model of several inputs, a .npz of one array per
        input (by name, or in order); each wrong archive refused with the member named."""
        a = self.agent()
        self.assertEqual(self.deploy(self.two)[0], 0)
        # By name (the MindIR's input names), members in another order than the inputs.
        rng = np.random.default_rng(7)
        y_first = os.path.join(self.project, "named.npz")
        x = rng.standard_normal((12, 1, 8, 8)).astype(np.float32)
        y = rng.standard_normal((12, 8)).astype(np.float32)
        np.savez(y_first, y=y, x=x)
        labels = os.path.join(self.project, "two_labels.npy")
        np.save(labels, rng.integers(0, 5, 12))
        rc, out, err = self.deploy(self.two, "--precision", "int8", "--calibration-data",
                                   y_first, "--labels", labels)
        self.assertEqual(rc, 0, err)
        self.assertIn("int8 vs fp32:", out)
        cur = os.path.join(self.state, "current")
        with open(os.path.join(cur, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["calibration_data"]["file"], "calibration.npz")
        with open(y_first, "rb") as f:
            self.assertEqual(manifest["calibration_data"]["sha256"],
                             hashlib.sha256(f.read()).hexdigest())
        with open(os.path.join(cur, "quant.json")) as f:
            table = json.load(f)
        self.assertEqual(table["calibration"]["samples"], 12)
        self.assertEqual(len(table["nodes"]), 2)  # the convolution and the dense layer
        q = a.call("GET", "/v1/info")[1]["quality"]
        self.assertEqual((q["on"], q["samples"], q["accuracy"]["samples"]),
                         ("calibration data", 12, 12))
        self.assertGreater(q["cosine"], 0.99)
        self.assertLess(q["cosine"], 1.0)
        # The cosine the agent reports on an input equals numpy's on its two answers.
        sample = {"inputs": [{"shape": [1, 1, 8, 8], "data": x[5].ravel().tolist()},
                             {"shape": [1, 8], "data": y[5].ravel().tolist()}]}
        s, r = a.call("POST", "/v1/infer", dict(sample, compare=True))
        self.assertEqual(s, 200, r)
        o8 = np.array(r["outputs"][0]["data"])
        o32 = np.array(a.call("POST", "/v1/infer", dict(sample, precision="fp32"))[1]
                       ["outputs"][0]["data"])
        self.assertFalse(np.array_equal(o8, o32))
        self.assertAlmostEqual(r["agreement"]["cosine"],
                               float(o8 @ o32 / np.sqrt((o8 @ o8) * (o32 @ o32))), places=9)
        # A restart rebuilds from calibration.npz and quant.json: the same int8 answer.
        a.stop()
        a = self.agent()
        self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], r["outputs"])
        good = a.call("POST", "/v1/infer", sample)[1]["outputs"]

        # In order (np.savez's arr_0, arr_1): also accepted, another calibration.
        path, _ = self.two_input_data("ordered.npz", positional=True)
        rc, out, err = self.deploy(self.two, "--precision", "int8", "--calibration-data", path)
        self.assertEqual(rc, 0, err)
        good = a.call("POST", "/v1/infer", sample)[1]["outputs"]

        # Wrong archives: refused on the device with the member named; the bundle before serves.
        bad = [
            (dict(y=None), "no array for the input 'y'"),
            (dict(z=np.zeros((16, 3), np.float32)), "array 'z' is not an input of the model (x, y)"),
            (dict(y=np.zeros((16, 9), np.float32)),
             "array for the input y has shape (16, 9); int8 calibration data for the input "
             "(1, 8) has the shape (N, 8)"),
            (dict(y=np.zeros((15, 8), np.float32)), "holds 15 samples, the input x's 16"),
            (dict(positional=True, y=None), "holds 1 arrays (arr_0), the model takes 2 inputs"),
        ]
        for k, (arrays, message) in enumerate(bad):
            path, _ = self.two_input_data(f"bad{k}.npz", **arrays)
            rc, out, err = self.deploy(self.two, "--precision", "int8", "--calibration-data", path)
            self.assertEqual(rc, 1, err)
            self.assertIn("[load-failed]", err)
            self.assertIn(path, err)  # the device's calibration.npz, named as the host's file
            self.assertIn(message, err)
            self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], good)
        # Not an archive at all, or a truncated one: refused on the host, nothing sent.
        bundles = self.bundles()
        junk = os.path.join(self.project, "junk.npz")
        with open(junk, "wb") as f:
            f.write(b"PK\x03\x04 not really a zip")
        rc, out, err = self.deploy(self.two, "--precision", "int8", "--calibration-data", junk)
        self.assertEqual(rc, 2, err)
        self.assertIn("junk.npz is not a readable .npz archive", err)
        path, _ = self.two_input_data("cut.npz")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[:len(data) // 2])
        rc, out, err = self.deploy(self.two, "--precision", "int8", "--calibration-data", path)
        self.assertEqual(rc, 2, err)
        self.assertIn("cut.npz is not a readable .npz archive", err)
        self.assertEqual(self.bundles(), bundles)
        self.assertEqual(a.call("POST", "/v1/infer", sample)[1]["outputs"], good)

    def raw_infer(self, a, body, content_type, accept=None, query="", token=TOKEN):
        """POST /v1/infer with a binary body: (status, headers, answer bytes)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(f"https://{AGENT_IP}:{a.port}/v1/infer{query}",
                                     method="POST", data=body)
        req.add_header("Authorization", "Bearer " + token)
        req.add_header("Content-Type", content_type)
        if accept:
            req.add_header("Accept", accept)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    @staticmethod
    def npy(x):
        f = io.BytesIO()
        np.save(f, x)
        return f.getvalue()

    def test_binary_infer(self):
        """/v1/infer with a .npy body (one input) or a .npz (several, by name or in order), the
        answer in the same encoding when Accept asks for it (JSON stays the default); size and
        shape checked before anything runs; the same token check."""
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        x = np.random.default_rng(11).standard_normal((1, 1, 32, 32)).astype(np.float32)
        s, want = a.call("POST", "/v1/infer", {"inputs": [{"shape": [1, 1, 32, 32],
                                                           "data": x.ravel().tolist()}]})
        self.assertEqual(s, 200, want)
        want32 = np.array(want["outputs"][0]["data"], np.float32).reshape(1, 10)
        # .npy in, JSON out (no Accept): the same answer as the JSON request.
        s, h, body = self.raw_infer(a, self.npy(x), "application/x-npy")
        self.assertEqual(s, 200, body)
        self.assertEqual(h["Content-Type"], "application/json")
        self.assertEqual(json.loads(body)["outputs"], want["outputs"])
        # .npy in and out: the float32 values themselves, figures in headers.
        s, h, body = self.raw_infer(a, self.npy(x), "application/x-npy", "application/x-npy")
        self.assertEqual(s, 200, body)
        self.assertEqual(h["Content-Type"], "application/x-npy")
        got = np.load(io.BytesIO(body))
        self.assertEqual((got.dtype, got.shape), (np.float32, (1, 10)))
        np.testing.assert_array_equal(got, want32)
        self.assertEqual(h["X-Cellscope-Bundle"], want["bundle"])
        self.assertEqual((h["X-Cellscope-Precision"], h["X-Cellscope-Backend"]),
                         ("fp32", "cellscope-cpu"))
        self.assertGreater(float(h["X-Cellscope-Ms"]), 0)
        self.assertEqual(h["X-Cellscope-Non-Finite"], "0")
        # Another dtype is converted as the JSON numbers are; a zip answer names output_0.
        s, h, body = self.raw_infer(a, self.npy(x.astype(np.float64)), "application/x-npy",
                                    "application/zip")
        self.assertEqual((s, h["Content-Type"]), (200, "application/zip"), body)
        with np.load(io.BytesIO(body)) as z:
            self.assertEqual(z.files, ["output_0"])
            np.testing.assert_array_equal(z["output_0"], want32)
        # JSON JSON when Accept prefers it.
        s, h, body = self.raw_infer(a, self.npy(x), "application/x-npy",
                                    "application/json, application/x-npy")
        self.assertEqual(h["Content-Type"], "application/json")
        # Refusals, each a located message, nothing run.
        for payload, ctype, query, code, message in [
            (self.npy(x[:, :, :16]), "application/x-npy", "", 422,
             "input x has shape (1, 1, 16, 32), the model's is (1, 1, 32, 32)"),
            (self.npy(x)[:-4], "application/x-npy", "", 422,
             "the request's .npy: not a readable .npy array: expected 4096 data bytes"),
            (self.npy(x), "application/x-npy", "?precision=int8", 422, "this bundle was built at fp32"),
            (self.npy(x), "application/x-npy", "?threads=8", 422, "unknown parameter 'threads'"),
            (b"1,2,3", "text/csv", "", 400, "the body must be a JSON object"),
        ]:
            s, h, body = self.raw_infer(a, payload, ctype, query=query)
            self.assertEqual(s, code, body)
            self.assertIn(message, json.loads(body)["error"]["message"])
        # A header that claims a huge array: refused from its size, not allocated.
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 1, 32, 32), }"
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        huge = (b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
                + x.tobytes())
        s, h, body = self.raw_infer(a, huge, "application/x-npy")
        self.assertEqual(s, 422, body)
        self.assertIn("expected 409599999995904 data bytes for (99999999999, 1, 32, 32) float32, "
                      "found 4096", json.loads(body)["error"]["message"])
        # The token is checked first, as for JSON.
        s, h, body = self.raw_infer(a, self.npy(x), "application/x-npy", token="wrong" * 5)
        self.assertEqual(s, 401)

        # Two inputs: a .npz by name (any order) or in order; one output, so .npy may answer.
        self.assertEqual(self.deploy(self.two)[0], 0)
        rng = np.random.default_rng(12)
        xi = rng.standard_normal((1, 1, 8, 8)).astype(np.float32)
        yi = rng.standard_normal((1, 8)).astype(np.float32)
        s, want = a.call("POST", "/v1/infer", {"inputs": [
            {"shape": [1, 1, 8, 8], "data": xi.ravel().tolist()},
            {"shape": [1, 8], "data": yi.ravel().tolist()}]})
        self.assertEqual(s, 200, want)
        want32 = np.array(want["outputs"][0]["data"], np.float32).reshape(1, 5)
        for kind in ("named", "ordered", "compressed"):
            f = io.BytesIO()
            if kind == "named":
                np.savez(f, y=yi, x=xi)
            elif kind == "ordered":
                np.savez(f, xi, yi)
            else:
                np.savez_compressed(f, x=xi, y=yi)
            s, h, body = self.raw_infer(a, f.getvalue(), "application/zip", "application/zip",
                                        query="?compare=false")
            self.assertEqual(s, 200, body)
            with np.load(io.BytesIO(body)) as z:
                np.testing.assert_array_equal(z["output_0"], want32, err_msg=kind)
        for arrays, message in [({"x": xi}, "no array for the input 'y'"),
                                ({"x": xi, "y": yi, "z": yi}, "array 'z' is not an input"),
                                ({"x": xi, "y": yi[:, :4]}, "input y has shape (1, 4)")]:
            f = io.BytesIO()
            np.savez(f, **arrays)
            s, h, body = self.raw_infer(a, f.getvalue(), "application/zip")
            self.assertEqual(s, 422, body)
            self.assertIn(message, json.loads(body)["error"]["message"])
        # A deflated member that inflates past the 64 MiB limit: refused before inflating.
        f = io.BytesIO()
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("x.npy", self.npy(np.zeros((65 << 20) // 4, np.float32)))
            zf.writestr("y.npy", self.npy(yi))
        self.assertLess(len(f.getvalue()), 1 << 20)
        s, h, body = self.raw_infer(a, f.getvalue(), "application/zip")
        self.assertEqual(s, 422, body)
        self.assertIn("above the 67108864 allowed", json.loads(body)["error"]["message"])
        self.assertEqual(a.call("POST", "/v1/infer", {"fill": "ones"})[0], 200)

    def test_model_that_fails_to_load_rolls_back(self):
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        good = self.infer_first(a)
        rc, out, err = self.deploy(self.broken)
        self.assertEqual(rc, 1)
        self.assertIn("[load-failed]", err)
        self.assertIn("still serves", err)
        self.assertEqual(self.infer_first(a), good)

    def test_full_disk_clear_error_old_model_intact(self):
        os.rmdir(self.state)
        os.makedirs(self.state)
        sh("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", self.state)
        DeployTier.mounts = getattr(DeployTier, "mounts", []) + [self.state]
        a = self.agent()
        self.assertEqual(self.deploy(self.small)[0], 0)
        good = self.infer_first(a)
        rc, out, err = self.deploy(self.big)
        self.assertEqual(rc, 1)
        self.assertIn("[disk-full]", err)
        self.assertIn("no space left", err)
        self.assertEqual(self.infer_first(a), good)
        a.stop()
        sh("umount", self.state)

    def test_dropped_link_reconnects(self):
        a = self.agent()
        p = self.deploy(self.big, "--chunk-kib", "64", "--chunk-delay-ms", "30", wait=False)
        sent = 0
        while sent < 10:
            line = p.stderr.readline()
            self.assertTrue(line, "deploy ended early")
            if "sent chunk" in line:
                sent += 1
        sh("ip", "link", "set", VETH_HOST, "down")
        time.sleep(25)  # past the client's 20 s timeout: the connection fails, retries begin
        sh("ip", "link", "set", VETH_HOST, "up")
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertRegex(err, "failed|cannot reach")
        self.assertEqual(self.infer_first(a)[1], [1, 1024])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args, rest = ap.parse_known_args()
    BIN = os.path.abspath(args.bin)
    if os.geteuid() != 0:
        print("the deploy tier needs root (ip netns, mount)", file=sys.stderr)
        sys.exit(1)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
