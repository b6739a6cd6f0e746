#!/usr/bin/env bash
# Runs lodestar_test.js from the test's runfiles: a Lodestar dev chain, breakerd, a sidecar and
# a fake relay, all on loopback. Logs (the node's, breakerd's, the sidecar's, the engine's and
# the relay's requests) are kept in $TEST_UNDECLARED_OUTPUTS_DIR. Whatever happens, every
# process the test started is killed on exit.
set -euo pipefail

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
root="$runfiles/${TEST_WORKSPACE:-breaker}"
here="$root/tests/lodestar"
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/lodestar.XXXXXX")
outputs="${TEST_UNDECLARED_OUTPUTS_DIR:-$tmp/outputs}"
mkdir -p "$outputs"
pids="$tmp/pids"
: >"$pids"

fail() {
  echo "lodestar: FAIL $*" >&2
  exit 1
}

# shellcheck disable=SC2317  # called by the EXIT trap
kill_leftovers() {
  local pid
  while read -r pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done <"$pids"
  for _ in $(seq 50); do
    local alive=0
    while read -r pid; do
      kill -0 "$pid" 2>/dev/null && alive=1
    done <"$pids"
    [ "$alive" -eq 0 ] && return
    sleep 0.1
  done
  while read -r pid; do
    kill -KILL "$pid" 2>/dev/null || true
  done <"$pids"
}
trap kill_leftovers EXIT

command -v node >/dev/null || fail "node is not installed; run \`bash tools/setup.sh\`"
# node_modules is not in git: tools/setup.sh installs it from package-lock.json. It reaches the
# runfiles as a data dependency (a glob), so Bazel reruns this test when it changes.
[ -f "$here/node_modules/@chainsafe/lodestar/package.json" ] ||
  fail "tests/lodestar/node_modules is missing; run \`bash tools/setup.sh\`"

# --preserve-symlinks: resolve packages inside the runfiles tree (whose files are symlinks), so
# that the node, the engine and the test use the node_modules Bazel handed the test.
status=0
node --preserve-symlinks --preserve-symlinks-main "$here/lodestar_test.js" \
  --root="$root" --node_modules="$here/node_modules" --tmp="$tmp" --outputs="$outputs" \
  --pids="$pids" || status=$?
exit "$status"
