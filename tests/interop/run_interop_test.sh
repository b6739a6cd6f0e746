#!/usr/bin/env bash
# Starts breakerd from the test's runfiles on a free loopback port, with a fresh state
# directory and a custom chain, runs a Node.js client against it, stops breakerd, and exits
# with the client's status.
#
#   run_interop_test.sh [CLIENT]   CLIENT: interop_test.js (the default) or hostile_test.js
set -euo pipefail

client="${1:-interop_test.js}"

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
root="$runfiles/${TEST_WORKSPACE:-breaker}"
here="$root/tests/interop"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"

fail() {
  echo "interop: FAIL $*" >&2
  exit 1
}

command -v node >/dev/null || fail "node is not installed; run \`bash tools/setup.sh\`"
# node_modules is not in git: tools/setup.sh installs it from package-lock.json. It reaches the
# runfiles as a data dependency (a glob), so Bazel reruns this test when it changes.
[ -d "$here/node_modules/@grpc/grpc-js" ] ||
  fail "tests/interop/node_modules is missing; run \`bash tools/setup.sh\`"

# A custom chain whose clock puts the current slot at the second slot of epoch 100: the
# builder's one-epoch ban starts well before the epoch ends and outlasts the test, and the
# client derives the slot from the Config breakerd sends. Gloas from epoch 0: per-builder rules.
network="interop-devnet"
seconds_per_slot=12
slots_per_epoch=32
start_slot=$((100 * slots_per_epoch + 1))
genesis=$(($(date +%s) - start_slot * seconds_per_slot - seconds_per_slot / 2))
config="$tmp/breakerd.textproto"
cat >"$config" <<EOF
chain {
  network: "$network"
  genesis_time_unix: $genesis
  seconds_per_slot: $seconds_per_slot
  slots_per_epoch: $slots_per_epoch
  gloas_fork_epoch: 0
}
EOF

state_dir=$(mktemp -d "$tmp/state.XXXXXX")
log="$tmp/breakerd.log"
# Created here, not only by breakerd's redirection: that one happens in the background job,
# which the port loop below could otherwise outrun and fail on a missing file.
: >"$log"
"$root/service/breakerd" --listen=127.0.0.1:0 --state_dir="$state_dir" --config="$config" \
  2>"$log" &
breakerd_pid=$!

# shellcheck disable=SC2317  # called by the EXIT trap
stop_breakerd() {
  if kill -0 "$breakerd_pid" 2>/dev/null; then
    kill -TERM "$breakerd_pid" 2>/dev/null || true
    # breakerd ends streams and flushes its state on SIGTERM; give it a few seconds.
    for _ in $(seq 50); do
      kill -0 "$breakerd_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$breakerd_pid" 2>/dev/null || true
  fi
  wait "$breakerd_pid" 2>/dev/null || true
}
trap stop_breakerd EXIT

# breakerd logs "breakerd listening on 127.0.0.1:0 (port N)" once it serves.
port=""
for _ in $(seq 300); do
  # The first match only, from sed itself: a head closing the pipe early would fail it.
  port=$(sed -n 's/.*breakerd listening on .* (port \([0-9][0-9]*\)).*/\1/;T;p;q' "$log")
  [ -n "$port" ] && break
  if ! kill -0 "$breakerd_pid" 2>/dev/null; then
    cat "$log" >&2
    fail "breakerd exited before listening"
  fi
  sleep 0.1
done
if [ -z "$port" ]; then
  cat "$log" >&2
  fail "breakerd did not log its port within 30 s"
fi
echo "interop: breakerd (pid $breakerd_pid) listening on port $port" >&2

# --preserve-symlinks: resolve packages inside the runfiles tree (whose files are symlinks),
# not beside the source files the symlinks point to, so that the test uses the node_modules
# Bazel handed it.
status=0
node --preserve-symlinks --preserve-symlinks-main "$here/$client" \
  --target="127.0.0.1:$port" --proto_root="$root/proto" --network="$network" \
  --timeout_seconds=45 || status=$?

if [ "$status" -ne 0 ]; then
  echo "interop: breakerd's log follows" >&2
  cat "$log" >&2
fi
exit "$status"
