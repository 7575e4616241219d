#!/bin/sh
# The shipped binary's footprint against a served simulated world (docs/operations.md,
# "Sizing"): `fdb-operator run` reconciles clusters created from nothing by the world
# (`simulate --serve --external-operator --fdb-tools-dir`), then idles in steady state.
# Prints the operator's peak RSS, its own CPU seconds (creation, then steady state) and
# its API requests as the world counted them.
#
#   cargo build --release -p fdb-operator-cli --bin fdb-operator
#   scripts/footprint.sh [--rollout] [STORAGE_GROUPS] [STEADY_SECONDS] [CLUSTERS]
#
# STORAGE_GROUPS (default 3) sizes each cluster (plus 2 log, 2 stateless, 1 cluster
# controller groups); STEADY_SECONDS (default 120) is how long it idles once every
# cluster is Reconciled; CLUSTERS (default 1) is how many clusters one operator
# reconciles: the first is the scenario's `cluster:`, the others its `fleet:`, each its
# own database. With --rollout, after the steady state every cluster's spec gets a new
# custom parameter (a knob, `kubectl patch`, one cluster after the other) and the script
# waits until all are Reconciled again: the operator's CPU and API requests during that
# fleet-wide knob rollout are printed too.
# Needs kubectl and python3. FDB_OPERATOR names another binary (default
# target/release/fdb-operator); FDB_WORLD the binary that serves the world (default:
# the same; only the operator's process is measured); FOOTPRINT_LIMIT (default 3600) is how many seconds a
# wait for Reconciled may take before the script gives up (the world's result JSON is
# then kept in FOOTPRINT_KEEP, default ./footprint-result.json).
set -eu
rollout=0
if [ "${1:-}" = "--rollout" ]; then
    rollout=1
    shift
fi
storage=${1:-3}
steady=${2:-120}
clusters=${3:-1}
limit=${FOOTPRINT_LIMIT:-3600}
for value in "$storage" "$steady" "$clusters" "$limit"; do
    case $value in
        '' | *[!0-9]*) echo "footprint.sh: $value is not a whole number" >&2; exit 2 ;;
    esac
done
[ "$clusters" -ge 1 ] || { echo "footprint.sh: CLUSTERS must be at least 1" >&2; exit 2; }
bin=$(realpath "${FDB_OPERATOR:-target/release/fdb-operator}")
world_bin=$(realpath "${FDB_WORLD:-$bin}")
work=$(mktemp -d)
op=''
world=''
trap 'kill $op $world 2>/dev/null || true; rm -rf "$work"' EXIT
nodes=$((storage + 5))

# One cluster's manifest, named $1, indented by $2.
manifest() {
    sed "s/^/$2/" <<YAML
apiVersion: apps.foundationdb.org/v1beta2
kind: FoundationDBCluster
metadata: {name: $1, namespace: default}
spec:
  version: 7.1.57
  minimumUptimeSecondsForBounce: 10
  databaseConfiguration: {redundancy_mode: double}
  processCounts: {storage: $storage, log: 2, stateless: 2, cluster_controller: 1}
YAML
}
{
    echo "name: footprint"
    echo "world: {nodes: $nodes, configMapDelaySeconds: 1}"
    echo "cluster:"
    manifest sample "  "
    if [ "$clusters" -gt 1 ]; then
        echo "fleet:"
        i=2
        while [ "$i" -le "$clusters" ]; do
            manifest "sample-$i" "    " | sed '1s/^    /  - /'
            i=$((i + 1))
        done
    fi
    echo "steps: []"
} > "$work/scenario.yaml"

"$world_bin" simulate "$work/scenario.yaml" --serve 127.0.0.1:0 --kubeconfig "$work/kc" \
    --external-operator --fdb-tools-dir "$work/tools" --output "$work/result.json" \
    >/dev/null 2>"$work/world.log" &
world=$!
until [ -f "$work/kc" ]; do
    kill -0 $world 2>/dev/null || { cat "$work/world.log" >&2; exit 1; }
    sleep 0.2
done
KUBECONFIG="$work/kc.operator" "$bin" run --metrics-address 127.0.0.1:0 \
    --work-dir "$work/operator" --fdb-binaries-dir "$work/tools" >"$work/operator.log" 2>&1 &
op=$!
started=$(date +%s)
export KUBECONFIG="$work/kc"
server=$(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')

cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
# The operator's API requests so far, as the world counts them (all verbs).
requests() {
    python3 - "$server/simulation/control/v1/api-requests" <<'PY'
import json, sys, urllib.request
counts = json.load(urllib.request.urlopen(sys.argv[1]))["apiRequests"].get("operator", {})
print(sum(counts.values()))
PY
}
# How often the wait below lists the clusters: each list is served under the world's
# turn, and at 100 clusters of 100 groups a list is megabytes of statuses, so a list a
# second was a load of its own on the world (session 24).
poll=1
[ "$clusters" -gt 10 ] && poll=5
# Waits until every cluster's current generation is Reconciled; prints the seconds.
wait_reconciled() {
    from=$(date +%s)
    while :; do
        done=$(kubectl get fdb -o jsonpath='{range .items[*]}{.metadata.generation} {.status.generations}{"\n"}{end}' |
            awk '$2 == "{\"reconciled\":" $1 "}"' | wc -l)
        [ "$done" -ge "$clusters" ] && break
        kill -0 $op 2>/dev/null || { tail -20 "$work/operator.log" >&2; exit 1; }
        kill -0 $world 2>/dev/null || { tail -20 "$work/world.log" >&2; exit 1; }
        if [ $(($(date +%s) - from)) -gt "$limit" ]; then
            echo "footprint.sh: $done of $clusters clusters Reconciled after ${limit}s; giving up" >&2
            give_up
        fi
        sleep "$poll"
    done
    echo $(($(date +%s) - from))
}
minus() { echo "$1 $2" | awk '{printf "%.2f", $1 - $2}'; }
# Prints the world's judgement: its API counts, status reads and violations.
judgement() {
    python3 - "$work/result.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
metrics = result["metrics"]
counts = metrics["apiRequests"]
print("API requests of the operator:", sum(counts.values()), json.dumps(counts, sort_keys=True))
print("status json reads:", metrics["statusJsonCalls"], "other admin commands:", metrics["adminCommands"])
print("violations:", len(result["violations"]))
for violation in result["violations"][:5]:
    print("  ", json.dumps(violation)[:300])
PY
}
# A run that gives up still ends the world with SIGTERM, so that it writes its result
# JSON: the violations are printed (on stderr) and the file is kept in FOOTPRINT_KEEP
# (default ./footprint-result.json) instead of going with the work folder.
give_up() {
    # Called inside `$(wait_reconciled)`: the processes are not this subshell's
    # children, so it cannot wait for them, and a world that has exited stays a zombie
    # (its parent is blocked on this subshell): wait until it is gone or one.
    kill -TERM $op 2>/dev/null || true
    kill -TERM $world 2>/dev/null || true
    while kill -0 $world 2>/dev/null &&
        [ "$(awk '{print $3}' "/proc/$world/stat" 2>/dev/null)" != Z ]; do
        sleep 0.5
    done
    if [ -f "$work/result.json" ]; then
        judgement >&2 || true
        cp "$work/result.json" "${FOOTPRINT_KEEP:-footprint-result.json}"
        echo "footprint.sh: the world's result JSON is in ${FOOTPRINT_KEEP:-footprint-result.json}" >&2
    fi
    exit 1
}

reconciled=$(wait_reconciled)
cpu_created=$(cpu $op)
world_created=$(cpu $world)
requests_created=$(requests)
sleep "$steady"
cpu_steady=$(cpu $op)
requests_steady=$(requests)
rss_steady=$(awk '/VmRSS/ {print $2}' "/proc/$op/status")
peak_steady=$(awk '/VmHWM/ {print $2}' "/proc/$op/status")
if [ "$rollout" = 1 ]; then
    rollout_from=$(date +%s)
    for name in $(kubectl get fdb -o jsonpath='{.items[*].metadata.name}'); do
        kubectl patch fdb "$name" --type=merge \
            -p '{"spec":{"processes":{"general":{"customParameters":["knob_max_trace_lines=20000"]}}}}' >/dev/null
    done
    rolled=$(wait_reconciled)
    rolled_wall=$(($(date +%s) - rollout_from))
    cpu_rolled=$(cpu $op)
    requests_rolled=$(requests)
fi
peak=$(awk '/VmHWM/ {print $2}' "/proc/$op/status")
world_end=$(cpu $world)
kill -TERM $op; wait $op || true
kill -TERM $world; wait $world || true

groups=$((storage + 5))
echo "clusters: $clusters of $groups process groups ($storage storage + 5 other); all Reconciled after ${reconciled}s"
echo "peak RSS: $((peak / 1024)) MiB (to the end of the steady state: $((peak_steady / 1024)) MiB; at its end: $((rss_steady / 1024)) MiB)"
echo "CPU to Reconciled: ${cpu_created}s; API requests to Reconciled: $requests_created"
echo "steady state, ${steady}s: CPU $(minus "$cpu_steady" "$cpu_created")s" \
    "($(echo "$cpu_steady $cpu_created $steady" | awk '{printf "%.1f", ($1 - $2) * 3600 / $3}') s/hour)," \
    "API requests $((requests_steady - requests_created))" \
    "($(echo "$requests_steady $requests_created $steady" | awk '{printf "%.1f", ($1 - $2) * 60 / $3}') a minute)"
if [ "$rollout" = 1 ]; then
    echo "knob rollout: all Reconciled again ${rolled_wall}s after the first patch (${rolled}s waiting);" \
        "CPU $(minus "$cpu_rolled" "$cpu_steady")s, API requests $((requests_rolled - requests_steady))"
fi
echo "the world's own CPU (not the operator's): ${world_created}s to Reconciled, ${world_end}s in all"
judgement
