#!/usr/bin/env python3
"""redis-py's own command tests against podium and a real redis-server.

Usage: redis_py_suite.py --tests DIR --redis PORT --podium PORT --docs FILE

DIR is the `tests` folder of the redis-py source distribution (with its
`redis` package beside it, which is the one imported, so the client is the
version the tests were written for). The families podium's Redis protocol
has are picked from `tests/test_commands.py` by the section comments
redis-py groups its tests under (`# BASIC KEY COMMANDS`, `# SCAN COMMANDS`,
`# SORTED SET COMMANDS`, `# HASH COMMANDS`, `# SERVER INFORMATION`), plus
the whole of `tests/test_scripting.py`; each runs once per protocol (RESP2,
RESP3) against both servers.

Every case that passes on redis-server must pass on podium, unless
docs/server.md's table of excluded cases names it with its reason (a data
type or feature podium does not have). A listed case that passes on podium
in both protocols is reported too, so the list stays true. Exits 1 with the
cases at fault, 0 otherwise; the last line is `N passed, N failed`.
"""

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

FAMILIES = [
    "BASIC KEY COMMANDS",
    "SCAN COMMANDS",
    "SORTED SET COMMANDS",
    "HASH COMMANDS",
    "SERVER INFORMATION",
]
SECTION = re.compile(r"^    # ([A-Z][A-Z ]+[A-Z])\s*$")


def selected(tests_dir):
    """The node ids of the families' cases, in file order."""
    path = os.path.join(tests_dir, "test_commands.py")
    lines = open(path, encoding="utf-8").read().splitlines()
    sections = [(i + 1, m.group(1)) for i, l in enumerate(lines) if (m := SECTION.match(l))]
    tree = ast.parse("\n".join(lines))
    ids = []
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "TestRedisCommands"):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
                continue
            # Decorators come first: the section is the one above them.
            first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
            family = None
            for line, name in sections:
                if line < first:
                    family = name
            if family in FAMILIES:
                ids.append(f"tests/test_commands.py::TestRedisCommands::{fn.name}")
    ids.append("tests/test_scripting.py")
    return ids


def excluded(docs):
    """Test name -> reason, from the table under docs' `### redis-py's test suite`."""
    out = {}
    inside = False
    for line in open(docs, encoding="utf-8"):
        if line.startswith("#"):
            inside = line.strip() == "### redis-py's test suite"
            continue
        m = inside and re.match(r"^\|\s*`(test_\w+)`\s*\|\s*(.+?)\s*\|\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def run(tests_dir, port, proto, ids):
    """Outcome of each case: passed, failed, error or skipped."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "junit.xml")
        cmd = [
            sys.executable, "-m", "pytest", "-q", "--tb=no", "-p", "no:cacheprovider",
            "-p", "no:randomly", f"--junitxml={report}",
            f"--redis-url=redis://127.0.0.1:{port}", f"--protocol={proto}",
            "-o", "timeout=30", *ids,
        ]
        proc = subprocess.run(
            cmd, cwd=os.path.dirname(os.path.abspath(tests_dir)), capture_output=True,
            text=True, timeout=1200,
        )
        if not os.path.exists(report):
            sys.exit(f"pytest wrote no report ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        outcomes = {}
        for case in ET.parse(report).iter("testcase"):
            name = case.get("name")
            kinds = [c.tag for c in case]
            if "error" in kinds:
                outcome = "error"
            elif "failure" in kinds:
                outcome = "failed"
            elif "skipped" in kinds:
                outcome = "skipped"
            else:
                outcome = "passed"
            # A teardown error is a second entry of the same case: the
            # worse outcome stands.
            if outcomes.get(name) in ("failed", "error"):
                continue
            outcomes[name] = outcome
        return outcomes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", required=True)
    ap.add_argument("--redis", type=int, required=True)
    ap.add_argument("--podium", type=int, required=True)
    ap.add_argument("--docs", required=True)
    ap.add_argument("--protocols", default="2,3")
    a = ap.parse_args()
    ids = selected(a.tests)
    skip = excluded(a.docs)
    if not skip:
        sys.exit(f"no excluded cases found in {a.docs}: the table moved?")
    faults = []
    passed = 0
    podium_passes = {}
    for proto in a.protocols.split(","):
        redis = run(a.tests, a.redis, proto, ids)
        podium = run(a.tests, a.podium, proto, ids)
        on_redis = sorted(n for n, o in redis.items() if o == "passed")
        if len(on_redis) < 100:
            sys.exit(f"only {len(on_redis)} cases pass on redis-server: the harness is broken")
        missing = [n for n in on_redis if podium.get(n) != "passed" and n not in skip]
        for n in missing:
            faults.append(f"RESP{proto}: {n} passes on redis-server, {podium.get(n, 'absent')} on podium")
        passed += len(on_redis) - len(missing)
        for n, o in podium.items():
            podium_passes.setdefault(n, []).append(o == "passed")
        print(
            f"RESP{proto}: {len(redis)} cases of test_commands.py and test_scripting.py; "
            f"{len(on_redis)} pass on redis-server, "
            f"{sum(o == 'passed' for o in podium.values())} on podium, "
            f"{len(missing)} missing on podium, "
            f"{sum(n in skip and redis.get(n) == 'passed' for n in on_redis)} excluded"
        )
    unknown = [n for n in skip if n not in podium_passes]
    for n in unknown:
        faults.append(f"{n} is in the excluded table but is not a case of the selected families")
    for n, ok in sorted(podium_passes.items()):
        if n in skip and all(ok):
            faults.append(f"{n} is excluded ({skip[n]}) but passes on podium: remove it from the table")
    for f in faults:
        print(f)
    print(f"{passed} passed, {len(faults)} failed")
    sys.exit(1 if faults else 0)


if __name__ == "__main__":
    main()
