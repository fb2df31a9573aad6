#!/usr/bin/env bash
# The workspace's Rust tests, as `cargo test` runs them, but three test
# binaries (or integration modules) at a time instead of one after the
# other.
#
# Many integration tests spend their time waiting on the servers they
# start (timeouts, fsyncs, restarts, redis-server), so a core sits
# idle under plain `cargo test`: on two cores, three lanes take about half
# the time of one (376 s → 193 s), two lanes two thirds. Builds once with
# cargo (`--no-run`), reads the test executables from cargo's JSON
# messages, and runs each from its package's directory as cargo would; a
# test binary named `integration` (one module per subject) is run once per
# top-level module, with exactly that module's tests, as if each module
# were a binary of its own. The
# documentation tests run as one more job: `cargo test` again with a
# filter only their names match (`cargo test --doc` alone resolves
# features without the dev-dependencies' and would build the workspace a
# second time). Each job's output goes to target/test-logs/; the summary
# lines of every job are printed at the end, a failing job's log in full.
#
# Other suites (the clients' and the console's) can share the lanes:
# each `--job NAME COMMAND` before
# cargo's arguments is one more job, COMMAND run by bash from the
# repository's root once the tests are built, with its output in
# target/test-logs/NAME.log like the rest.
#
# Arguments are cargo's (workspace, profile, features), e.g.
#   scripts/rust-tests.sh --job py 'clients/python/run-tests.sh' \
#       --workspace --release --features podium-server/external
# RUST_TEST_LANES sets the number of lanes (default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
lanes="${RUST_TEST_LANES:-3}"
extra_names=()
extra_cmds=()
while [ "${1:-}" = --job ]; do
    extra_names+=("$2")
    extra_cmds+=("$3")
    shift 3
done
logs=target/test-logs
rm -rf "$logs"
mkdir -p "$logs"

jobs_file="$logs/jobs.tsv"
cargo test "$@" --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, os, subprocess, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not m["profile"]["test"]:
        continue
    kind = m["target"]["kind"][0]
    package = m["package_id"].split("#")[0].rsplit("/", 1)[-1]
    cwd = os.path.dirname(m["manifest_path"])
    if kind == "test" and m["target"]["name"] == "integration":
        # One job per top-level module, running exactly its tests.
        listing = subprocess.run([m["executable"], "--list", "--format", "terse"],
                                 cwd=cwd, capture_output=True, text=True, check=True).stdout
        modules = {}
        for entry in listing.splitlines():
            if entry.endswith(": test"):
                test = entry[: -len(": test")]
                modules.setdefault(test.split("::")[0], []).append(test)
        for module, tests in modules.items():
            print("\t".join([package + ".test." + module, cwd, m["executable"], " ".join(tests)]))
        continue
    print("\t".join([package + "." + kind + "." + m["target"]["name"], cwd, m["executable"]]))
' > "$jobs_file"

# The slowest binaries start first so the lanes end together, then the
# other suites (each longer than most binaries); the rest follow in
# cargo's order.
slow=(limits resp_clients resp_script_sandbox backend_conformance chaos crash)
ordered="$logs/ordered.tsv"
: > "$ordered"
for s in "${slow[@]}"; do grep -P "\\.test\\.$s\\t" "$jobs_file" >> "$ordered" || true; done
for i in "${!extra_names[@]}"; do
    printf '%s\t.\tjob:%s\n' "${extra_names[$i]}" "$i" >> "$ordered"
done
awk -F'\t' 'NR == FNR { first[$1] = 1; next } !($1 in first)' "$ordered" "$jobs_file" > "$ordered.rest"
cat "$ordered.rest" >> "$ordered"
printf 'doctests\t.\t-\n' >> "$ordered"

run_job() {
    local name="$1" dir="$2" exe="$3" tests="$4" start=$SECONDS status=0
    if [ "$name" = doctests ]; then
        # A documentation test is named "<file> - <item> (line <n>)".
        cargo test "${cargo_args[@]}" -- ' (line ' > "$logs/$name.log" 2>&1 || status=$?
    elif [ "${exe#job:}" != "$exe" ]; then
        bash -c "${extra_cmds[${exe#job:}]}" > "$logs/$name.log" 2>&1 || status=$?
    else
        # shellcheck disable=SC2086 # the test names are words
        (cd "$dir" && "$exe" ${tests:+--exact $tests}) > "$logs/$name.log" 2>&1 || status=$?
    fi
    # CPU time of the job and what it waited for (servers it started and
    # reaped included): the jobs keep most of the two cores busy (1.4–1.7
    # of them), so this is what a job costs the run, more than its wall
    # time.
    # (`times` into a file: in a pipe or $(...) it would report a subshell.)
    local cpu
    times > "$logs/$name.times"
    cpu=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t }' "$logs/$name.times")
    printf '%4ds %4ds cpu  %s\n' $((SECONDS - start)) "$cpu" "$name" >> "$logs/durations"
    if [ "$status" -ne 0 ]; then
        echo "FAILED: $name (exit $status)" >> "$logs/failed"
    fi
    return 0
}
cargo_args=("$@")

# Jobs that spend their time waiting (on Redis nodes killed and brought
# back, on cluster fail-over, on timeouts: 2 s of CPU in 78 s, 1 s in 27 s)
# run one after the other in a lane of their own beside the others, which
# they do not slow.
waiting=(backend_faults backend_serve)
waiting_lane=""
waiting_re="\\.test\\.($(IFS='|'; echo "${waiting[*]}"))\t"
if grep -qP "$waiting_re" "$ordered"; then
    (
        grep -P "$waiting_re" "$ordered" | while IFS=$'\t' read -r name dir exe tests; do
            echo "   $name (waiting lane)"
            (run_job "$name" "$dir" "$exe" "$tests" < /dev/null)
        done
    ) &
    waiting_lane=$!
fi
grep -vP "$waiting_re" "$ordered" > "$ordered.lanes" || true

running=0
while IFS=$'\t' read -r name dir exe tests; do
    while [ "$running" -ge "$lanes" ]; do
        # (The waiting lane ending frees none of the three.)
        wait -n -p ended || true
        if [ "${ended:-}" != "$waiting_lane" ]; then running=$((running - 1)); fi
    done
    echo "   $name"
    run_job "$name" "$dir" "$exe" "$tests" < /dev/null &
    running=$((running + 1))
done < "$ordered.lanes"
wait

sort -rn "$logs/durations" | head -12 | sed 's/^/   slowest: /'
sort -k2 -rn "$logs/durations" | head -12 | sed 's/^/   most CPU: /'
awk '{ w += $1; c += $2 } END { printf "   in all: %d s of wall time in the jobs, %d s of CPU\n", w, c }' "$logs/durations"

# Each job's own summary (cargo's "test result:" lines, pytest's "N passed",
# node's "# pass N" and "# fail N"), so the run's output shows what ran and
# not only that the jobs exited 0.
echo "== what each job ran"
while IFS=$'\t' read -r name _ _; do
    [ -f "$logs/$name.log" ] || continue
    # The documentation tests' job runs every test binary with a filter
    # none of their tests match: those binaries' empty results are left out.
    grep -E '^test result:|^[0-9]+ passed|^=+ .*[0-9]+ (passed|failed)|^# (pass|fail) [0-9]+$' "$logs/$name.log" |
        grep -vE '^test result: ok\. 0 passed; 0 failed; 0 ignored; 0 measured; [1-9][0-9]* filtered out' |
        sed "s/^/   $name: /" || true
done < "$ordered" | tee "$logs/summary"
awk '{ for (i = 1; i < NF; i++) if ($(i + 1) ~ /^passed/ && $i ~ /^[0-9]+$/) n += $i; if ($2 == "#" && $3 == "pass") n += $4 }
     END { print "   " n " tests passed in all" }' "$logs/summary"
if [ -s "$logs/failed" ]; then
    while read -r _ name _; do
        echo "===== $name"
        cat "$logs/$name.log"
    done < "$logs/failed"
    cat "$logs/failed" >&2
    exit 1
fi
echo "all $(wc -l < "$logs/durations") test jobs passed"
