#!/bin/sh
# The shipped binary's footprint against a served simulated world (docs/operations.md,
# "Sizing"): `fdb-operator run` reconciles a cluster created from nothing by the world
# (`simulate --serve --external-operator --fdb-tools-dir`), then idles in steady state.
# Prints the operator's peak RSS, its own CPU seconds (creation, then steady state) and
# its API requests as the world counted them.
#
#   cargo build --release -p fdb-operator-cli --bin fdb-operator
#   scripts/footprint.sh [STORAGE_GROUPS] [STEADY_SECONDS]
#
# STORAGE_GROUPS (default 3) sizes the cluster (plus 2 log, 2 stateless, 1 cluster
# controller groups); STEADY_SECONDS (default 120) is how long it idles once Reconciled.
# Needs kubectl. FDB_OPERATOR names another binary (default target/release/fdb-operator).
set -eu
storage=${1:-3}
steady=${2:-120}
bin=$(realpath "${FDB_OPERATOR:-target/release/fdb-operator}")
work=$(mktemp -d)
trap 'kill $op $world 2>/dev/null || true; rm -rf "$work"' EXIT
nodes=$((storage + 5))
cat > "$work/scenario.yaml" <<YAML
name: footprint
world: {nodes: $nodes, configMapDelaySeconds: 1}
cluster:
  apiVersion: apps.foundationdb.org/v1beta2
  kind: FoundationDBCluster
  metadata: {name: sample, namespace: default}
  spec:
    version: 7.1.57
    databaseConfiguration: {redundancy_mode: double}
    processCounts: {storage: $storage, log: 2, stateless: 2, cluster_controller: 1}
steps: []
YAML
"$bin" simulate "$work/scenario.yaml" --serve 127.0.0.1:0 --kubeconfig "$work/kc" \
    --external-operator --fdb-tools-dir "$work/tools" --output "$work/result.json" \
    >/dev/null 2>"$work/world.log" &
world=$!
until [ -f "$work/kc" ]; do sleep 0.2; done
KUBECONFIG="$work/kc.operator" "$bin" run --metrics-address 127.0.0.1:0 \
    --work-dir "$work/operator" --fdb-binaries-dir "$work/tools" >"$work/operator.log" 2>&1 &
op=$!
started=$(date +%s)
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$op/stat"; }
export KUBECONFIG="$work/kc"
until [ "$(kubectl get fdb sample -o jsonpath='{.metadata.generation} {.status.generations}')" = '1 {"reconciled":1}' ]; do
    sleep 0.5
done
reconciled=$(( $(date +%s) - started ))
cpu_created=$(cpu)
sleep "$steady"
cpu_end=$(cpu)
peak=$(awk '/VmHWM/ {print $2}' "/proc/$op/status")
kill -TERM $op; wait $op || true
kill -TERM $world; wait $world || true
echo "cluster: $storage storage + 5 other process groups; Reconciled after ${reconciled}s"
echo "peak RSS: $((peak / 1024)) MiB"
echo "CPU to Reconciled: ${cpu_created}s; CPU in ${steady}s of steady state: $(echo "$cpu_end $cpu_created" | awk '{print $1 - $2}')s"
python3 - "$work/result.json" "$reconciled" "$steady" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
metrics = result["metrics"]
counts = metrics["apiRequests"]
print("API requests of the operator:", sum(counts.values()), json.dumps(counts, sort_keys=True))
print("status json reads:", metrics["statusJsonCalls"], "other admin commands:", metrics["adminCommands"])
print("violations:", len(result["violations"]))
PY
