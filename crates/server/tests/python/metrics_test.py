"""/metrics of a real podium read by Prometheus's own client library.

Usage: metrics_test.py HTTP_ADDR RPC_ADDR RESP_ADDR DASHBOARD_JSON

Exercises every protocol (so the per-protocol and per-command series have
rows), takes a snapshot (so the snapshot series exist), then parses the
text with prometheus_client's parser: every family has a HELP text and a
TYPE, every sample belongs to a family. Then the Grafana dashboard in
docs/ may only use series that exist.
"""

import json
import re
import socket
import sys
import urllib.request

import msgpack
from prometheus_client.parser import text_string_to_metric_families

http, rpc, resp, dashboard = sys.argv[1:5]


def get(path, method="GET", body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    req = urllib.request.Request(
        f"http://{http}{path}", data=body, method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


assert get("/v1/boards/m/scores", "POST", b'{"member":"a","score":1}')[0] == 200
assert get("/v1/boards/m/top")[0] == 200
assert get("/v1/boards/missing/top")[0] == 404
assert get("/v1/boards/m/reset", "POST")[0] == 200
assert get("/v1/boards/m/scores", "POST", b'{"member":"b","score":2}')[0] == 200

with socket.create_connection(rpc.split(":")) as s:
    s.sendall(msgpack.packb([0, 1, "submit", ["m", {"member": "c", "score": 3}]]))
    u = msgpack.Unpacker(raw=False)
    while True:
        u.feed(s.recv(65536))
        got = list(u)
        if got:
            assert got[0][2] is None, got
            break

with socket.create_connection(resp.split(":")) as s:
    s.sendall(b"*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$1\r\n1\r\n$1\r\na\r\n*1\r\n$4\r\nSAVE\r\n")
    seen = b""
    while seen.count(b"\r\n") < 2:
        seen += s.recv(65536)
    assert seen == b":1\r\n+OK\r\n", seen

status, body = get("/metrics")
assert status == 200
text = body.decode()

families = list(text_string_to_metric_families(text))
assert families, text
names = set()
for f in families:
    assert f.documentation.strip(), f"{f.name}: no HELP text"
    assert f.type in ("counter", "gauge", "histogram", "summary"), f"{f.name}: TYPE {f.type}"
    # The names a query may use: counters with their `_total`, histograms
    # by their series.
    if f.type == "counter":
        names.add(f.name + "_total")
    elif f.type == "histogram":
        names.update(f.name + s for s in ("_bucket", "_sum", "_count"))
    else:
        names.add(f.name)
    for s in f.samples:
        names.add(s.name)
for want in (
    "podium_operations_total",
    "podium_operation_seconds_bucket",
    "podium_rpc_requests_total",
    "podium_resp_commands_total",
    "podium_http_requests_total",
    "podium_build_info",
    "process_cpu_seconds_total",
    "podium_board_heap_bytes",
    "podium_snapshot_seconds_bucket",
):
    assert want in names, f"{want} not exported"
samples = {s.name for f in families for s in f.samples}
for needed in ("podium_resp_commands_total", "podium_rpc_requests_total", "podium_archive_heap_bytes"):
    assert needed in samples, f"{needed}: no sample"

d = json.load(open(dashboard))
used = set()
for p in d["panels"]:
    assert p["targets"], p["title"]
    for t in p["targets"]:
        used.update(re.findall(r"\b((?:podium|process)_[a-z_]+)", t["expr"]))
for q in d["templating"]["list"]:
    if isinstance(q.get("query"), dict):
        used.update(re.findall(r"\b((?:podium|process)_[a-z_]+)", q["query"]["query"]))
missing = sorted(used - names)
assert not missing, f"the dashboard uses series podium does not export: {missing}"
print(f"ok: {len(families)} families, each with HELP and TYPE; dashboard: {len(used)} series, all exported")
