#!/usr/bin/env bash
# The packaged systemd units pass `systemd-analyze verify`, and `systemd-analyze security`
# rates each "OK" (an exposure of 2.0 or less). The programs they start are stand-ins in a
# temporary directory: the rest of each unit is checked as shipped.
set -euo pipefail

runfiles="${TEST_SRCDIR:-${RUNFILES_DIR:-$0.runfiles}}"
units="$runfiles/${TEST_WORKSPACE:-breaker}/packaging/systemd"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
mkdir -p "$tmp/bin" "$tmp/units"
for program in breakerd breaker-sidecar; do
  printf '#!/bin/sh\n' >"$tmp/bin/$program"
  chmod +x "$tmp/bin/$program"
done
for unit in breakerd.service breaker-sidecar@.service; do
  sed "s|/usr/bin/|$tmp/bin/|" "$units/$unit" >"$tmp/units/$unit"
done
cp "$tmp/units/breaker-sidecar@.service" "$tmp/units/breaker-sidecar@bn-1.service"

status=0
for unit in breakerd.service breaker-sidecar@bn-1.service; do
  if ! out=$(systemd-analyze verify "$tmp/units/$unit" 2>&1) || [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify $unit: $out" >&2
    status=1
  fi
  exposure=$(systemd-analyze security --offline=yes "$tmp/units/$unit" 2>&1 |
    sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
  if [ -z "$exposure" ] || ! awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }'; then
    echo "FAIL: $unit's exposure is '${exposure}', above 2.0 ('OK'): see" \
      "systemd-analyze security --offline=yes on it for the settings to tighten" >&2
    status=1
  else
    echo "$unit: verified, exposure $exposure"
  fi
done
exit "$status"
