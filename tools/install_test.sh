#!/usr/bin/env bash
# Installs and runs what tools/package.sh ships, on clean systems, as an operator and a client
# developer would (.ci/run runs it; docs/operations.md, "Install"):
#   1. builds the packages, tarballs and image (tools/package.sh --image); lintian passes them;
#   2. in a minimal Debian 12 root and a minimal Debian 13 root (mmdebstrap, cached under
#      ~/.cache/breaker/install-test for a week), `apt-get install ./*.deb`; starts breakerd and
#      a sidecar from the installed units' ExecStart lines, as the units' user; runs the
#      README's breakerctl tour lines with the installed breakerctl: a ban reaches the sidecar,
#      which then answers 204; builds a C program with the installed libbreaker-client-dev
#      (pkg-config only), which dials breakerd, reports, and reads the ban from the policy; in
#      the Debian 12 root also a Go and a Rust program, from the Go package and the crate that
#      libbreaker-client-dev installs, which do the same;
#   3. loads the image into podman, runs it, checks its health check, bans a builder with the
#      image's breakerctl, and stops it with SIGTERM, within a second.
# Every program runs in a network namespace of its own: the fixed ports of the units and the
# tour clash with nothing on the machine. Needs root, Debian's archive, mmdebstrap, podman,
# runc and lintian (tools/setup.sh).
# Usage: tools/install_test.sh [--dist=DIR]   (DIR: what `tools/package.sh --image` wrote; by
#        default the script runs it)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
if [ "$(id -u)" -ne 0 ]; then
  echo "install_test: needs root (chroot, network namespaces, podman); run it as root" >&2
  exit 1
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/breaker/install-test"
work="$(mktemp -d /tmp/breaker-install-test.XXXXXX)"
netns="breaker-install-$$"
container="breaker-install-$$"
pids=()
mounts=()
started=$(date +%s)

cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  podman rm --force --ignore "$container" >/dev/null 2>&1 || true
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
  ip netns del "$netns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

step() { echo "install_test: [$(($(date +%s) - started)) s] $*"; }
fail() {
  echo "install_test: FAIL: $*" >&2
  exit 1
}
# wait_for FILE TEXT SECONDS: until FILE holds TEXT.
wait_for() {
  local deadline=$((SECONDS + $3))
  until grep -q -- "$2" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "'$2' did not appear in $1 within $3 s:
$(tail -n 20 "$1" 2>/dev/null)"
    sleep 0.2
  done
}
# succeeds_within SECONDS COMMAND...: until COMMAND succeeds; fails after SECONDS with its last
# output. For a server that has said it listens but may not answer its first call yet.
succeeds_within() {
  local deadline=$((SECONDS + $1)) output
  shift
  until output="$("$@" 2>&1)"; do
    [ $SECONDS -lt $deadline ] || fail "'$*' did not succeed within the time: $output"
    echo "  not yet: ${output//$'\n'/ }"
    sleep 0.5
  done
}
# Runs a command in the network namespace. (A program to run in the background is started with
# `ip netns exec` itself, so that its pid is the program's, not a subshell's.)
in_netns() { ip netns exec "$netns" "$@"; }
# header_answer_within CODE SECONDS: until the sidecar answers the tour's header request with
# CODE; fails after SECONDS.
header_answer_within() {
  local code="" deadline=$((SECONDS + $2))
  while [ "$code" != "$1" ] && [ $SECONDS -lt "$deadline" ]; do
    code=$(in_netns curl -s -o /dev/null -w '%{http_code}' -H 'X-Timeout-Ms: 950' \
      http://127.0.0.1:18601/eth/v1/builder/header/1/0x11/0xaa || true)
    [ "$code" = "$1" ] || sleep 0.2
  done
  [ "$code" = "$1" ]
}

ip netns add "$netns"
in_netns ip link set lo up

dist="$work/dist"
for arg; do
  case "$arg" in
    --dist=*) dist="$(realpath "${arg#--dist=}")" ;;
    *) fail "unknown argument '$arg'; usage: tools/install_test.sh [--dist=DIR]" ;;
  esac
done
if [ "$dist" = "$work/dist" ]; then
  step "building the packages and the image"
  bash tools/package.sh --image --out="$dist" >"$work/package.log" 2>&1 ||
    fail "tools/package.sh failed: $(tail -n 30 "$work/package.log")"
fi
version="$(cat packaging/version)"
arch="$(dpkg --print-architecture)"
(cd "$dist" && sha256sum --check --quiet SHA256SUMS) || fail "SHA256SUMS does not match"

step "lintian"
lintian --fail-on error,warning --tag-display-limit 0 "$dist"/*.deb ||
  fail "lintian found errors or warnings in the packages above"

# The packages a client developer's root has besides the minimal one: C, Go and Rust with
# pkg-config, from Debian's archive.
toolchains=gcc,pkg-config,golang-go,rustc,cargo
# make_root SUITE [INCLUDE]: $work/SUITE, a fresh copy of the cached minimal root (with the
# packages INCLUDE lists, comma-separated, in a root cached apart), with /proc, /dev and a
# cache of downloaded packages mounted.
make_root() {
  local suite="$1" include="ca-certificates${2:+,$2}" root="$work/$1"
  local tar="$cache/$1${2:+-$(echo "$2" | md5sum | cut -c1-8)}.tar"
  mkdir -p "$cache"
  if [ ! -s "$tar" ] || [ -n "$(find "$tar" -mtime +7)" ]; then
    step "mmdebstrap $suite with $include (cached in $cache)"
    mmdebstrap --quiet --variant=apt --format=tar --include="$include" "$suite" "$tar.part" ||
      fail "mmdebstrap $suite failed (is Debian's archive reachable?)"
    mv "$tar.part" "$tar"
  fi
  mkdir -p "$root" "$cache/apt-$suite/partial"
  tar -xf "$tar" -C "$root"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount --bind /proc "$root/proc" && mounts+=("$root/proc")
  mount --bind /dev "$root/dev" && mounts+=("$root/dev")
  mount --bind "$cache/apt-$suite" "$root/var/cache/apt/archives" &&
    mounts+=("$root/var/cache/apt/archives")
}

# exec_start ROOT UNIT INSTANCE: the unit's ExecStart line, %i replaced by INSTANCE.
exec_start() {
  sed -n 's/^ExecStart=//p' "$1/lib/systemd/system/$2" | sed "s/%i/$3/g"
}

# bindings_programs SUITE ROOT: builds the Go and the Rust program against the installed
# libbreaker-client-dev (its Go package and crate, the library through pkg-config), offline,
# and runs each against the running breakerd: each reads the README's ban of builder 42.
bindings_programs() {
  local suite="$1" root="$2"
  step "$suite: a Go and a Rust program built against libbreaker-client-dev"
  # shellcheck disable=SC2016 # pkg-config runs in the root
  chroot "$root" sh -c 'cd /tmp/go && export GOPROXY=off GOFLAGS=-mod=mod GOPATH=/tmp/gopath \
    GOCACHE=/tmp/gocache CGO_CFLAGS="$(pkg-config --cflags breaker-client)" \
    CGO_LDFLAGS="$(pkg-config --libs breaker-client)" && go build -o /tmp/go-node .' \
    >"$work/$suite-go.log" 2>&1 ||
    fail "$suite: building the Go program failed: $(tail -n 30 "$work/$suite-go.log")"
  chroot "$root" sh -c 'cd /tmp/rust && CARGO_HOME=/tmp/cargo-home cargo build --offline \
    --quiet && cp target/debug/installed-node /tmp/rust-node' \
    >"$work/$suite-rust.log" 2>&1 ||
    fail "$suite: building the Rust program failed: $(tail -n 30 "$work/$suite-rust.log")"
  local program
  for program in go-node rust-node; do
    if readelf -d "$root/tmp/$program" | grep 'RPATH\|RUNPATH' >/dev/null; then
      fail "$suite: /tmp/$program has an rpath; the installed library needs none"
    fi
    in_netns chroot --userspec=nobody "$root" "/tmp/$program" 127.0.0.1:50051 42 ||
      fail "$suite: the $program program did not read the fleet's ban"
  done
}

# A stand-in relay, as in the README's tour: every request gets one header. Started once, for
# the sidecars of both roots.
relay_pid=""
start_relay() {
  [ -z "$relay_pid" ] || return 0
  ip netns exec "$netns" python3 -c '
import http.server
class Relay(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"{\"version\":\"deneb\",\"data\":{\"message\":{\"header\":{\"block_hash\":\"0x22\"},\"value\":\"1\"},\"signature\":\"0x00\"}}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", 28545), Relay).serve_forever()' 2>"$work/relay.log" &
  relay_pid=$!
  pids+=("$relay_pid")
}

# try_suite SUITE BINDINGS PACKAGE...: installs the packages in a fresh SUITE root and runs the
# tour; with BINDINGS 1, the Go and Rust programs too.
try_suite() {
  local suite="$1" bindings="$2" root="$work/$1"
  shift 2
  if [ "$bindings" -eq 1 ]; then make_root "$suite" "$toolchains"; else make_root "$suite"; fi
  step "$suite: apt-get install $*"
  mkdir -p "$root/tmp/debs"
  for name; do cp "$dist/${name}_${version}_${arch}.deb" "$root/tmp/debs/"; done
  cp -r packaging/install_test/dial_report_read.c packaging/install_test/go \
    packaging/install_test/rust "$root/tmp/"
  {
    chroot "$root" apt-get update -q &&
      chroot "$root" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends /tmp/debs/*.deb gcc pkg-config'
  } >"$work/$suite-apt.log" 2>&1 || fail "$suite: installing failed: $(tail -n 30 "$work/$suite-apt.log")"

  step "$suite: breakerd from breakerd.service's ExecStart, as user breaker"
  local breakerd_cmd
  breakerd_cmd="$(exec_start "$root" breakerd.service "")"
  ip netns exec "$netns" chroot --userspec=breaker:breaker "$root" \
    sh -c "cd /var/lib/breakerd && exec $breakerd_cmd" 2>"$work/$suite-breakerd.log" &
  local breakerd_pid=$!
  pids+=("$breakerd_pid")
  wait_for "$work/$suite-breakerd.log" "breakerd listening on 127.0.0.1:50051" 30
  succeeds_within 15 in_netns chroot "$root" /usr/bin/breakerctl status

  local sidecar=0 sidecar_pid=""
  if [ -f "$root/usr/bin/breaker-sidecar" ]; then
    sidecar=1
    step "$suite: breaker-sidecar@bn-2 from its unit's ExecStart, as user breaker"
    start_relay
    cat >"$root/etc/breaker/sidecar-bn-2.textproto" <<'CONFIG'
breakerd_addresses: "127.0.0.1:50051"
node_id: "bn-2"
network: "mainnet"
metrics_listen: "127.0.0.1:18650"
upstreams { listen_port: 18601 url: "http://127.0.0.1:28545" }
CONFIG
    ip netns exec "$netns" chroot --userspec=breaker:breaker "$root" \
      sh -c "exec $(exec_start "$root" "breaker-sidecar@.service" bn-2)" \
      >"$work/$suite-sidecar.log" 2>&1 &
    sidecar_pid=$!
    pids+=("$sidecar_pid")
    wait_for "$work/$suite-sidecar.log" "sidecar ready" 30
    header_answer_within 200 15 ||
      fail "$suite: the sidecar did not pass the relay's header through before the ban:
$(tail -n 20 "$work/$suite-sidecar.log") $(cat "$work/relay.log")"
  fi

  step "$suite: the README's breakerctl lines, with the installed breakerctl"
  local line
  : >"$work/$suite-ctl.log"
  while IFS= read -r line; do
    if [ "$sidecar" -eq 0 ] && [[ "$line" == *--relay=* ]]; then continue; fi
    line="${line/bazel-bin\/ctl\/breakerctl/}"
    echo "  breakerctl$line"
    eval "in_netns chroot \"\$root\" /usr/bin/breakerctl $line" >>"$work/$suite-ctl.log" 2>&1 ||
      fail "$suite: breakerctl$line: $(cat "$work/$suite-ctl.log")"
  done < <(grep '^bazel-bin/ctl/breakerctl ' README.md)
  grep -q "operator: withheld twice" "$work/$suite-ctl.log" ||
    fail "$suite: builders --banned does not list the README's ban: $(cat "$work/$suite-ctl.log")"

  if [ "$sidecar" -eq 1 ]; then
    header_answer_within 204 10 || fail "$suite: the sidecar did not answer 204 within 10 s of" \
      "the relay's ban: $(tail -n 20 "$work/$suite-sidecar.log")"
    echo "  the banned relay's header: 204 No Content"
  fi

  step "$suite: a C program built with pkg-config against libbreaker-client-dev"
  # shellcheck disable=SC2016 # pkg-config runs in the root
  chroot "$root" sh -c 'gcc -std=c11 -O2 -o /tmp/dial_report_read /tmp/dial_report_read.c \
    $(pkg-config --cflags --libs breaker-client)' >"$work/$suite-cc.log" 2>&1 ||
    fail "$suite: building against the installed library failed: $(cat "$work/$suite-cc.log")"
  in_netns chroot --userspec=nobody "$root" /tmp/dial_report_read 127.0.0.1:50051 42 ||
    fail "$suite: the installed library did not read the fleet's ban"
  [ "$bindings" -eq 0 ] || bindings_programs "$suite" "$root"

  [ -z "$sidecar_pid" ] || kill -TERM "$sidecar_pid"
  kill -TERM "$breakerd_pid"
  wait "$breakerd_pid" || fail "$suite: breakerd exited with $? at SIGTERM"
  [ -z "$sidecar_pid" ] || wait "$sidecar_pid" || fail "$suite: the sidecar exited with $? at SIGTERM"
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}"; done
  mounts=()
  rm -rf "$root"
}

try_suite bookworm 1 breakerd breaker-sidecar breakerctl libbreaker-client libbreaker-client-dev
try_suite trixie 0 breakerd breaker-sidecar breakerctl libbreaker-client libbreaker-client-dev

step "the image under podman"
image_tar="$dist/breaker-image-$version-$arch.tar"
loaded=$(podman load --quiet --input "$image_tar") || fail "podman load $image_tar failed"
image="${loaded##*: }"
podman run --detach --name "$container" --runtime=/usr/sbin/runc \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --network="ns:/run/netns/$netns" \
  --volume "$container-state:/var/lib/breakerd" "$image" >/dev/null 2>"$work/podman.log" ||
  fail "podman run failed: $(cat "$work/podman.log")"
deadline=$((SECONDS + 30))
until podman healthcheck run "$container" >/dev/null 2>&1; do
  [ $SECONDS -lt $deadline ] || fail "the image's health check did not pass within 30 s:
$(podman logs "$container" 2>&1 | tail -n 20)"
  sleep 0.5
done
echo "  health check: healthy; user $(podman exec "$container" id -un)"
podman exec "$container" breakerctl ban 42 --reason="from the image" >/dev/null ||
  fail "the image's breakerctl could not ban"
podman exec "$container" breakerctl builders --banned | grep "from the image" >/dev/null ||
  fail "the image's breakerd does not list the ban"
# The stop is timed by breakerd's own log, from the signal's arrival to its last line: podman's
# commands alone take a second or more on a loaded machine.
podman kill --signal=TERM "$container" >/dev/null || fail "podman kill --signal=TERM failed"
exit_code=$(podman wait "$container") || fail "podman wait failed"
[ "$exit_code" = 0 ] || fail "the image's breakerd exited with $exit_code at SIGTERM"
# log_ms TEXT: the time of day, in ms, of breakerd's log line holding TEXT (glog's format).
# Every command reads its whole input, and no match is an empty answer: one that stopped at the
# first match (grep -m1) could end `podman logs` by SIGPIPE, and a failed pipeline would end
# the script silently.
log_ms() {
  podman logs "$container" 2>&1 | { grep -- "$1" || true; } |
    sed -n 's/^[IWEF][0-9]\{8\} \([0-9]*\):\([0-9]*\):\([0-9]*\)\.\([0-9]\{3\}\).*/\1 \2 \3 \4/p' |
    awk 'NR == 1 { print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'
}
# The container's last lines may reach its log a moment after it exits.
for _ in $(seq 25); do
  received=$(log_ms "signal 15 received")
  stopped=$(log_ms "breakerd stopped")
  if [ -n "$received" ] && [ -n "$stopped" ]; then break; fi
  sleep 0.2
done
if [ -z "$received" ] || [ -z "$stopped" ]; then
  fail "the image's breakerd did not log its stop: $(podman logs "$container" 2>&1 | tail -n 5)"
fi
stop_ms=$(((stopped - received + 86400000) % 86400000))  # across midnight too
[ "$stop_ms" -lt 1000 ] || fail "the image's breakerd took $stop_ms ms to stop after SIGTERM"
echo "  stopped $stop_ms ms after SIGTERM, exit code 0"
podman rm --force "$container" >/dev/null 2>&1
podman volume rm --force "$container-state" >/dev/null 2>&1 || true

step "PASS"
