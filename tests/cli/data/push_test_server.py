#!/usr/bin/env python3
"""A stand-in for Pyroscope and Parca on 127.0.0.1 for tests/cli/push_cli_test.cpp.

It implements each backend's documented ingestion request and nothing more:
  Pyroscope  POST /ingest?name=APP{k=v,...}&from=S&until=S&format=pprof, the profile in the
             multipart/form-data field "profile" (or the raw body, as newer clients send it);
  Parca      POST /profiles/writeraw, the gRPC-gateway JSON of WriteRawRequest
             {"series":[{"labels":{"labels":[{"name","value"}]},"samples":[{"rawProfile":B64}]}],
              "normalized":bool}, checked strictly (no other keys).
Each accepted profile is saved as OUT/NNN.pb.gz with OUT/NNN.json (path, labels, times, the
Authorization header). A malformed request gets 400 with the reason, which is also logged to
OUT/errors.txt. --fail-first N answers the first N requests with 503. The server writes its port
to --port-file and exits after --max-seconds (bounded: a test that dies cannot leave it behind).
With --tls-cert and --tls-key it serves HTTPS.
"""
import argparse
import base64
import binascii
import json
import os
import re
import ssl
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

args = None
state = {"requests": 0, "saved": 0}
lock = threading.Lock()


class Reject(Exception):
    pass


def parse_pyroscope_name(name):
    match = re.fullmatch(r"([^{}]+)\{(.*)\}", name)
    if not match:
        raise Reject(f"name {name!r} is not APP{{k=v,...}}")
    labels = {}
    if match.group(2):
        for pair in match.group(2).split(","):
            key, sep, value = pair.partition("=")
            if not sep or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_.]*", key):
                raise Reject(f"label {pair!r} is not key=value")
            labels[key] = value
    return match.group(1), labels


def multipart_field(content_type, body, field):
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        raise Reject("multipart without a boundary")
    boundary = b"--" + match.group(1).encode()
    if not body.startswith(boundary):
        raise Reject("the body does not start with the boundary")
    for part in body.split(boundary)[1:]:
        if part.startswith(b"--"):
            break
        head, sep, content = part.partition(b"\r\n\r\n")
        if not sep:
            raise Reject("a part without headers")
        if not content.endswith(b"\r\n"):
            raise Reject("a part not ended by CRLF")
        disposition = re.search(rb'name="([^"]*)"', head)
        if disposition and disposition.group(1).decode() == field:
            return content[:-2]
    raise Reject(f"no multipart field {field!r}")


def pyroscope(handler, query, body):
    for key in ("name", "from", "until"):
        if key not in query:
            raise Reject(f"query parameter {key} missing")
    if query.get("format", ["pprof"])[0] != "pprof":
        raise Reject("format is not pprof")
    app, labels = parse_pyroscope_name(query["name"][0])
    start, end = int(query["from"][0]), int(query["until"][0])
    if end < start:
        raise Reject("until before from")
    content_type = handler.headers.get("Content-Type", "")
    if content_type.startswith("multipart/form-data"):
        profile = multipart_field(content_type, body, "profile")
    else:
        profile = body
    return profile, {"app": app, "labels": labels, "from": start, "until": end,
                     "spyName": query.get("spyName", [""])[0]}


def parca(handler, body):
    if not handler.headers.get("Content-Type", "").startswith("application/json"):
        raise Reject("writeraw takes application/json")
    try:
        request = json.loads(body)
    except ValueError as error:
        raise Reject(f"not JSON: {error}")

    def only(obj, keys, what):
        if not isinstance(obj, dict):
            raise Reject(f"{what} is not an object")
        extra = set(obj) - set(keys)
        if extra:
            raise Reject(f"{what} has unknown fields {sorted(extra)}")

    only(request, ("tenant", "series", "normalized"), "WriteRawRequest")
    if not isinstance(request.get("normalized", False), bool):
        raise Reject("normalized is not a bool")
    series = request.get("series")
    if not isinstance(series, list) or len(series) != 1:
        raise Reject("expected one series")
    only(series[0], ("labels", "samples"), "RawProfileSeries")
    only(series[0]["labels"], ("labels",), "LabelSet")
    labels = {}
    for label in series[0]["labels"]["labels"]:
        only(label, ("name", "value"), "Label")
        labels[label["name"]] = label["value"]
    samples = series[0]["samples"]
    if not isinstance(samples, list) or len(samples) != 1:
        raise Reject("expected one RawSample")
    only(samples[0], ("rawProfile", "executableInfo"), "RawSample")
    try:
        profile = base64.b64decode(samples[0]["rawProfile"], validate=True)
    except (binascii.Error, TypeError) as error:
        raise Reject(f"rawProfile is not base64: {error}")
    return profile, {"app": labels.pop("__name__", ""), "labels": labels,
                     "normalized": request.get("normalized", False)}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *unused):
        pass

    def answer(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        with lock:
            state["requests"] += 1
            number = state["requests"]
        if number <= args.fail_first:
            self.answer(503, "backend starting up")
            return
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        try:
            if url.path == "/ingest":
                profile, meta = pyroscope(self, query, body)
            elif url.path == "/profiles/writeraw":
                profile, meta = parca(self, body)
            else:
                self.answer(404, f"no endpoint {url.path}")
                return
            if profile[:2] != b"\x1f\x8b":
                raise Reject("the profile is not gzipped pprof")
        except Reject as error:
            with open(os.path.join(args.out, "errors.txt"), "a") as log:
                log.write(f"{url.path}: {error}\n")
            self.answer(400, str(error))
            return
        with lock:
            state["saved"] += 1
            stem = os.path.join(args.out, f"{state['saved']:03}")
        meta.update({"path": url.path, "authorization": self.headers.get("Authorization", ""),
                     "request": number})
        with open(stem + ".pb.gz", "wb") as out:
            out.write(profile)
        with open(stem + ".json.tmp", "w") as out:
            json.dump(meta, out)
        os.rename(stem + ".json.tmp", stem + ".json")
        self.answer(200, "")


def main():
    global args
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=120)
    parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", help="and this key (PEM)")
    args = parser.parse_args()
    server = HTTPServer(("127.0.0.1", 0), Handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    timer = threading.Timer(args.max_seconds, lambda: os._exit(3))
    timer.daemon = True
    timer.start()
    with open(args.port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
