#!/bin/bash
# Runs the load harness at ten nodes in quick mode and checks that it completes and prints every
# table. No figure is checked: benchmarks are not timed tests.
set -euo pipefail

output="${TEST_TMPDIR}/fleet_load.out"
if ! bench/fleet_load --nodes=10 --quick --trials=1 >"${output}"; then
  echo "fleet_load failed; its output:" >&2
  cat "${output}" >&2
  exit 1
fi
cat "${output}"
for table in "Fan-out latency" "Sustained ingestion" "Memory" "Reconnect storm" "Goals"; do
  if ! grep -q "^### ${table}\$" "${output}"; then
    echo "the table '${table}' is missing" >&2
    exit 1
  fi
done
# One row per figure, breakerd beside the baseline with their ratio.
grep -q '^| 10 | p99 (ms) | [0-9.]* | [0-9.]* | [0-9.–]* |$' "${output}"
