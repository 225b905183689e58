#!/usr/bin/env python3
"""A Redfish service for rapl-read's tests (tests/rapl-read-redfish.bats).

Usage: redfish-server.py TREE STATE CERT KEY CREDENTIALS, CREDENTIALS being
rapl-read's --bmc-credentials file: the password is in no process's
arguments, the service's included.

Serves a mockup tree (DIR/redfish/v1/X is DIR/X/index.json) over HTTPS on
127.0.0.1, with sessions and Basic authentication, and what a test asks
for through files in the state directory STATE, read at each request:
  watts     the Reading of every place of power, instead of the tree's
  status    an HTTP status answered to every GET below /redfish/v1/Chassis
  body      a body answered instead of the resource's (malformed JSON)
  huge      answer 2 MiB of JSON
  slow      sleep this many seconds before answering
  nosession answer the session POST with 400
  rootless  a service root that names no SessionService
  redirect  answer every GET below /redfish/v1/Chassis with a 301 to this
STATE/log gets one line per request ("GET /redfish/v1/...") and one per
TLS connection ("CONNECT"), and the port chosen is written to STATE/port.
"""
import base64
import http.server
import json
import os
import ssl
import sys
import time
import uuid

TREE, STATE, CERT, KEY, CREDENTIALS = sys.argv[1:6]
with open(CREDENTIALS) as f:
    USER, PASSWORD = f.read().split("\n")[:2]
sessions = {}


def state(name):
    try:
        with open(os.path.join(STATE, name)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def set_watts(doc, watts):
    if "PowerWatts" in doc:
        doc["PowerWatts"]["Reading"] = watts
    if "InputPowerWatts" in doc:
        doc["InputPowerWatts"]["Reading"] = watts
    for pc in doc.get("PowerControl", []):
        pc["PowerConsumedWatts"] = watts


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        with open(os.path.join(STATE, "log"), "a") as f:
            f.write("CONNECT\n")

    def answer(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def note(self):
        with open(os.path.join(STATE, "log"), "a") as f:
            f.write("%s %s\n" % (self.command, self.path))

    def authorized(self):
        if self.headers.get("X-Auth-Token") in sessions.values():
            return True
        basic = base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode())
        return self.headers.get("Authorization") == "Basic " + basic.decode()

    def do_POST(self):
        self.note()
        length = int(self.headers.get("Content-Length", 0))
        doc = json.loads(self.rfile.read(length) or b"{}")
        if self.path != "/redfish/v1/SessionService/Sessions" or state("nosession"):
            return self.answer(400)
        if doc.get("UserName") != USER or doc.get("Password") != PASSWORD:
            return self.answer(401)
        sid = uuid.uuid4().hex
        sessions[sid] = uuid.uuid4().hex
        with open(os.path.join(STATE, "sessions"), "a") as f:
            f.write("open %s\n" % sid)
        self.answer(201, b"{}", [("X-Auth-Token", sessions[sid]),
                                 ("Location", "/redfish/v1/SessionService/Sessions/" + sid)])

    def do_DELETE(self):
        self.note()
        sid = self.path.rsplit("/", 1)[-1]
        if sid not in sessions or not self.authorized():
            return self.answer(404)
        del sessions[sid]
        with open(os.path.join(STATE, "sessions"), "a") as f:
            f.write("closed %s\n" % sid)
        self.answer(204)

    def do_GET(self):
        self.note()
        if state("slow"):
            time.sleep(float(state("slow")))
        path = self.path.rstrip("/")
        if path != "/redfish/v1" and not self.authorized():
            return self.answer(401)
        if path.startswith("/redfish/v1/Chassis"):
            if state("redirect"):
                return self.answer(301, b"{}", [("Location", state("redirect"))])
            if state("status"):
                return self.answer(int(state("status")), b"{}")
            if state("body") is not None:
                return self.answer(200, state("body").encode())
            if state("huge"):
                return self.answer(200, b'{"x": "' + b"x" * (2 << 20) + b'"}')
        rel = path[len("/redfish/v1"):].lstrip("/")
        file = os.path.join(TREE, rel, "index.json")
        if ".." in rel or not os.path.isfile(file):
            return self.answer(404, b"{}")
        with open(file) as f:
            doc = json.load(f)
        if state("watts") is not None:
            set_watts(doc, float(state("watts")))
        if path == "/redfish/v1" and state("rootless"):
            doc.pop("SessionService", None)
            doc.get("Links", {}).pop("Sessions", None)
        self.answer(200, json.dumps(doc).encode())


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(os.path.join(STATE, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(STATE, "port.tmp"), os.path.join(STATE, "port"))
server.serve_forever()
