#!/usr/bin/env bash
# Runs Debian's promtool (package prometheus) on the example Prometheus files, as an operator
# would before loading them.
#
#   promtool_test.sh check PROMETHEUS_YML ALERTS_YML
#       the configuration and the rule files it loads, and the rules alone;
#   promtool_test.sh test ALERTS_YML TEST_YML...
#       every alert's unit test, one file per alert named after it (tests/<alert>.yml).
#
# promtool reads the rule files a test names relative to the test file, so the files keep the
# layout they have in the tree.
set -euo pipefail

readonly PROMTOOL=/usr/bin/promtool
if [[ ! -x "$PROMTOOL" ]]; then
  echo "$PROMTOOL is missing: install Debian's prometheus package (bash tools/setup.sh does)" >&2
  exit 1
fi

usage() {
  echo "usage: $0 check PROMETHEUS_YML ALERTS_YML | test ALERTS_YML TEST_YML..." >&2
  exit 2
}

# Every alert of the rule file has its test file, which evaluates that alert.
check_one_test_per_alert() {
  local alerts="$1"
  shift
  local alert each missing=0 test_file
  for alert in $(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$alerts"); do
    test_file=""
    for each in "$@"; do
      [[ "$(basename "$each")" == "$alert.yml" ]] && test_file="$each"
    done
    if [[ -z "$test_file" ]]; then
      echo "alert $alert has no unit test: add tests/$alert.yml (see the others)" >&2
      missing=1
    elif ! grep -q "alertname: *$alert *$" "$test_file"; then
      echo "$test_file does not evaluate alert $alert: give it alert_rule_test entries for it" >&2
      missing=1
    fi
  done
  return "$missing"
}

case "${1:-}" in
  check)
    [[ $# -eq 3 ]] || usage
    "$PROMTOOL" check config "$2"
    "$PROMTOOL" check rules "$3"
    ;;
  test)
    [[ $# -ge 3 ]] || usage
    alerts="$2"
    shift 2
    check_one_test_per_alert "$alerts" "$@"
    "$PROMTOOL" test rules "$@"
    ;;
  *)
    usage
    ;;
esac
