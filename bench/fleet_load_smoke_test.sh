#!/bin/bash
# Runs the load harness at ten nodes in quick mode and checks that it completes and prints every
# table. No figure is checked: benchmarks are not timed tests. With the argument "etcd",
# breakerd runs on three etcd members the harness starts, and one failover trial runs too.
set -euo pipefail

store="${1:-sqlite}"
flags=(--nodes=10 --quick --trials=1)
tables=("Fan-out latency" "Sustained ingestion" "Memory" "Reconnect storm" "Goals")
nodes="10"
if [[ "${store}" == "etcd" ]]; then
  # The shortest lease breakerd takes, so that the failover trial is short.
  flags+=(--store=etcd --failover_trials=1 --etcd_lease_ttl=2)
  tables+=("Failover")
  nodes="10 etcd"
fi

output="${TEST_TMPDIR}/fleet_load.out"
if ! bench/fleet_load "${flags[@]}" >"${output}"; then
  echo "fleet_load failed; its output:" >&2
  cat "${output}" >&2
  exit 1
fi
cat "${output}"
for table in "${tables[@]}"; do
  if ! grep -q "^### ${table}\$" "${output}"; then
    echo "the table '${table}' is missing" >&2
    exit 1
  fi
done
# One row per figure, breakerd beside the baseline with their ratio.
grep -q "^| ${nodes} | p99 (ms) | [0-9.]* | [0-9.]* | [0-9.–]* |\$" "${output}"
if [[ "${store}" == "etcd" ]]; then
  for signal in SIGKILL SIGTERM; do
    grep -q "^| 10 | ${signal} | 1 | \*\*time to failover\*\* (s) | [0-9.]* | [0-9.]* | [0-9.]* |\$" "${output}"
  done
fi
