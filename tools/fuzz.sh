#!/usr/bin/env bash
# Runs one of the fuzz targets under libFuzzer (docs/development.md, Fuzzing).
#
#   tools/fuzz.sh TARGET [SECONDS] [LIBFUZZER_FLAG...]   fuzz TARGET for SECONDS (default 60)
#   tools/fuzz.sh seeds                                  rewrite service/fuzz_corpus/fleet/ and service/rpc/fuzz_corpus/rpc/
#
# TARGET is engine (//core:engine_fuzzer), config (//proto/codec:config_file_fuzzer), batch
# (//proto/codec:received_batch_fuzzer), fleet
# (//service:fleet_fuzzer) or rpc (//service/rpc:rpc_fuzzer); or one of the sidecar's:
# block_root (//sidecar/ssz:block_root_fuzzer), block_root_differential
# (//sidecar/ssz:block_root_differential_fuzzer), builder_messages
# (//sidecar/builder:messages_fuzzer), beacon (//sidecar/beacon:beacon_fuzzer),
# sidecar_config (//sidecar:config_fuzzer) or block_production
# (//sidecar/validator:block_production_fuzzer). The build is --config=fuzz (.bazelrc): clang 14, -fsanitize=fuzzer,
# address. Choosing the compiler re-runs Bazel's toolchain configuration, so the build lives in
# an output base of its own under $BREAKER_FUZZ_DIR (default ~/.cache/breaker-fuzz), where it
# neither rebuilds nor disturbs the gcc builds. The inputs libFuzzer finds are kept there too
# (corpus/TARGET/), from one run to the next; the checked-in seed corpus is only read. A crash
# is saved as artifacts/TARGET/crash-*, and the script says how to replay it.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

usage() {
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- Seeds of the fleet target: text-format messages, encoded by protoc and framed. ---

byte() { printf "\\x$(printf %02x "$1")"; }

# A frame: OP, then for messages the length in two bytes (big-endian) and the bytes.
message_frame() {  # OP [STREAM] TYPE PROTO TEXT
  local op="$1"
  shift
  local stream=""
  if [ "$op" = n ]; then
    stream="$1"
    shift
  fi
  printf '%s' "$op"
  if [ -n "$stream" ]; then byte "$stream"; fi
  encoded "$@"
}

# The length in two bytes (big-endian), then TEXT encoded by protoc as TYPE of PROTO.
encoded() {  # TYPE PROTO TEXT
  local file
  file="$(mktemp)"
  printf '%s' "$3" | protoc -Iproto --encode="$1" "$2" >"$file"
  sized "$file"
}

# The length in two bytes (big-endian), then the bytes a printf FORMAT writes.
raw() {  # FORMAT
  local file
  file="$(mktemp)"
  # shellcheck disable=SC2059  # the format is the bytes
  printf "$1" >"$file"
  sized "$file"
}

sized() {  # FILE, removed
  local length
  length=$(stat -c %s "$1")
  byte $((length >> 8))
  byte $((length & 255))
  cat "$1"
  rm -f "$1"
}

node() { message_frame n "$1" breaker.v1.NodeMessage proto/breaker/v1/breaker.proto "$2"; }
admin() { message_frame a breaker.state.v1.AdminAction proto/breaker/state/v1/state.proto "$1"; }
tick() { printf t; byte "$1"; }

# 32-byte block roots, written as text so that the seeds stay readable in `protoc --decode`.
root_of() { printf 'root-%027d' "$1"; }
# 48-byte builder public keys, likewise.
key_of() { printf 'pk-%-45s' "$1" | tr ' ' '.'; }

# Observations of the fleet's start slot (fleet_fuzzer.cc: kStartSlot) and the ones after it.
write_fleet_seeds() {
  local dir=service/fuzz_corpus/fleet
  mkdir -p "$dir"
  rm -f "$dir"/*.bin
  local slot=10000000

  {
    byte 0  # Gloas from genesis, every default.
    node 0 'hello { node_id: "bn-1" client_version: "fuzz" network: "mainnet" }'
    node 1 'hello { node_id: "bn-2" }'
    node 0 "observations {
      observations { sequence: 1 slot: $slot bid_seen { builder_index: 10 relay: \"https://relay-c.example\" builder_pubkey: \"$(key_of 10)\" } }
      observations { sequence: 2 slot: $slot bid_seen { builder_index: 11 relay: \"relay-c.example:443\" } }
      observations { sequence: 3 slot: $slot payload_missing { builder_index: 10 block_root: \"$(root_of 1)\" attested_fraction: 0.9 } } }"
    printf s
    node 1 "observations {
      observations { sequence: 1 slot: $slot payload_missing { builder_index: 10 block_root: \"$(root_of 1)\" attested_fraction: 0.9 } }
      observations { sequence: 2 slot: $slot payload_delivered { builder_index: 12 block_root: \"$(root_of 2)\" } } }"
    node 0 'policy_ack { version: 2 }'
    tick 12
    node 1 "observations { observations { sequence: 3 slot: $((slot + 1)) payload_delivered { builder_index: 10 block_root: \"$(root_of 1)\" } } }"
    printf i
    tick 255
    tick 150
    printf r
    node 0 "observations { observations { sequence: 4 slot: $((slot + 33)) bid_seen { builder_index: 10 relay: \"https://relay-c.example\" builder_pubkey: \"$(key_of other)\" } } }"
  } >"$dir/01_failure_delivered.bin"

  {
    byte 0
    node 0 'hello { node_id: "bn-1" }'
    node 1 'hello { node_id: "bn-2" }'
    node 2 'hello { node_id: "bn-3" }'
    local b
    for b in 20 21 22 23 24 25 26; do
      node $((b % 3)) "observations { observations { sequence: $((b - 10)) slot: $slot payload_missing { builder_index: $b block_root: \"$(root_of "$b")\" attested_fraction: 0.75 } } }"
    done
    printf s
    admin 'ban { builder_index: 42 reason: "withheld twice" until_epoch: 312510 }'
    admin 'ban { builder_index: 43 reason: "" }'
    admin 'unban { builder_index: 42 }'
    admin 'unban { builder_index: 3 }'
    admin 'unban { builder_index: 99 }'
    admin 'builder_trust { builder_index: 20 trusted: true }'
    admin 'relay_trust { relay: "ftp://relay.example" trusted: true }'
    admin 'relay_trust { relay: "relay-b.example:18550" trusted: true }'
    admin 'ban_relay { relay: "relay-c.example:443" reason: "leaked bids" }'
    admin 'ban_relay { relay: "https://relay-d.example" reason: "" }'
    admin 'ban_relay { relay: "ftp://relay.example" reason: "x" until_epoch: 312510 }'
    admin 'unban_relay { relay: "https://relay-c.example/" }'
    admin 'unban_relay { relay: "https://relay-c.example" }'
    printf i
    admin 'reset { reason: "fuzz" }'
    printf s
    tick 200
    tick 200
  } >"$dir/02_modes_and_admin.bin"

  {
    byte 1  # Pre-Gloas, the latched missed-slot rule, two reporters, small caps.
    node 0 'hello { node_id: "bn-1" }'
    node 1 'hello { node_id: "bn-2" }'
    local i
    for i in 0 1 2 3 4 5 6 7 8; do
      local s=$((slot + i))
      if [ "$i" -eq 0 ]; then
        node 0 "observations { observations { sequence: $((i + 1)) slot: $s blocks_seen { block_roots: \"$(root_of $((100 + i)))\" } } }"
      else
        node 0 "observations { observations { sequence: $((i + 1)) slot: $s blocks_seen { } } observations { sequence: $((i + 100)) slot: $s finalized { epoch: 312400 } } }"
      fi
      tick 12
    done
    printf s
    node 1 "observations {
      observations { sequence: 1 slot: $((slot + 8)) relay_reveal_missing { relay: \"http://relay-d.example:9000\" block_root: \"$(root_of 7)\" } }
      observations { sequence: 2 slot: $((slot + 8)) bid_seen { builder_index: 18446744073709551615 } }
      observations { sequence: 2 slot: $((slot + 8)) bid_seen { builder_index: 5 } }
      observations { sequence: 0 slot: $((slot + 8)) bid_seen { builder_index: 5 } }
      observations { sequence: 3 slot: 1 bid_seen { builder_index: 5 } }
      observations { sequence: 4 slot: $((slot + 8)) payload_missing { builder_index: 5 block_root: \"short\" attested_fraction: 0.9 } }
      observations { sequence: 5 slot: $((slot + 8)) }
      observations { sequence: 6 slot: $((slot + 8)) payload_missing { builder_index: 5 block_root: \"$(root_of 8)\" attested_fraction: nan } } }"
    node 0 "observations { observations { sequence: 200 slot: $((slot + 8)) relay_reveal_missing { relay: \"relay-d.example:9000\" block_root: \"$(root_of 7)\" } } }"
    printf r
    admin 'reset { }'
    tick 40
    printf r
  } >"$dir/03_pre_gloas_missed_slots.bin"

  {
    byte 1
    node 0 'hello { node_id: "bn-1" network: "hoodi" }'
    node 0 'observations { observations { sequence: 1 slot: 10000000 bid_seen { builder_index: 1 } } }'
    node 0 'hello { node_id: "" }'
    node 1 'policy_ack { version: 1 }'
    node 2 'hello { node_id: "bn-3" policy_version: 7 fleet_id: "another" }'
    local i observations=""
    for i in $(seq 1 40); do
      observations+="observations { sequence: $i slot: $slot bid_seen { builder_index: $((i % 24)) relay: \"http://relay-$((i % 6)).example\" builder_pubkey: \"$(key_of $((i % 5)))\" } } "
    done
    node 2 "observations { $observations }"
    node 2 'observations { }'
    printf s
    printf i
  } >"$dir/04_streams_and_caps.bin"

  {
    byte 2  # Gloas, two reporters, small caps; restarted under the defaults and back.
    node 0 'hello { node_id: "bn-1" }'
    node 1 'hello { node_id: "bn-2" }'
    local b observations=""
    for b in $(seq 9 23); do
      observations+="observations { sequence: $b slot: $slot bid_seen { builder_index: $b relay: \"https://relay-$((b % 5)).example\" } } "
    done
    for b in $(seq 9 23) $(seq 59 73); do  # Two failures of each builder: banned.
      observations+="observations { sequence: $((b + 100)) slot: $slot payload_missing { builder_index: $((b % 50)) block_root: \"$(root_of "$b")\" attested_fraction: 0.8 } } "
    done
    node 0 "observations { $observations }"
    node 1 "observations { $observations }"
    printf s
    printf c
    node 1 "observations { observations { sequence: 200 slot: $slot payload_delivered { builder_index: 9 block_root: \"$(root_of 9)\" } } }"
    tick 100
    printf c
    printf i
  } >"$dir/05_restart_reconfigured.bin"
  ls -l "$dir"
}

# --- Seeds of the rpc target: method bytes, then requests or a stream's messages. ---

# A method's byte: its index in rpc_fuzzer.cc's Methods().
method() {
  local i=0 name
  for name in Report GetPolicy ListBuilders GetBuilder ListRelays ListNodes BanBuilder \
    UnbanBuilder SetBuilderTrust SetRelayTrust Reset GetConfig ReloadConfig Connect; do
    if [ "$name" = "$1" ]; then
      byte "$i"
      return
    fi
    i=$((i + 1))
  done
  echo "fuzz.sh: no method $1" >&2
  exit 1
}

# A unary call with a request written as text: Report's is a ReportRequest, each Admin
# rpc's the <rpc>Request.
call() {  # METHOD TEXT
  method "$1"
  encoded "breaker.v1.$1Request" proto/breaker/v1/breaker.proto "$2"
}
raw_call() { method "$1"; raw "$2"; }  # METHOD FORMAT
# A Connect stream: its message count, then each message (node_message or raw).
connect() { method Connect; byte "$1"; }  # COUNT
node_message() { encoded breaker.v1.NodeMessage proto/breaker/v1/breaker.proto "$1"; }

repeat() { head -c "$2" /dev/zero | tr '\0' "$1"; }  # CHARACTER COUNT

# Observations of the slot before the clock's (rpc_fuzzer.cc: kStartSlot).
write_rpc_seeds() {
  local dir=service/rpc/fuzz_corpus/rpc
  mkdir -p "$dir"
  rm -f "$dir"/*.bin
  local slot=9999999

  {
    call Report "node_id: \"rn-1\" observations {
      observations { sequence: 1 slot: $slot bid_seen { builder_index: 10 relay: \"https://relay.example\" builder_pubkey: \"$(repeat k 48)\" } }
      observations { sequence: 2 slot: $slot payload_missing { builder_index: 10 block_root: \"$(root_of 1)\" attested_fraction: 0.9 } } }"
    call Report "node_id: \"rn-1\" observations { observations { sequence: 3 slot: $slot payload_delivered { builder_index: 11 block_root: \"$(root_of 2)\" } } }"
    call Report "node_id: \"\" observations { observations { sequence: 1 slot: $slot bid_seen { builder_index: 1 } } }"
    call Report "node_id: \"rn-2\" observations {
      observations { sequence: 18446744073709551615 slot: $slot bid_seen { builder_index: 1 } }
      observations { sequence: 1 slot: $slot bid_seen { builder_index: 1 builder_pubkey: \"$(repeat k 47)\" } }
      observations { sequence: 2 slot: $slot relay_reveal_missing { relay: \"https://$(repeat r 505)\" block_root: \"short\" } }
      observations { sequence: 3 slot: $slot blocks_seen { block_roots: \"$(root_of 3)\" } }
      observations { sequence: 4 slot: $slot payload_missing { builder_index: 5 block_root: \"$(root_of 4)\" attested_fraction: nan } }
      observations { sequence: 5 slot: 1 finalized { epoch: 312400 } } }"
    raw_call Report '\x0a\x05x'
  } >"$dir/01_report.bin"

  {
    connect 4
    node_message 'hello { node_id: "cn-1" client_version: "fuzz" network: "mainnet" }'
    node_message "observations {
      observations { sequence: 1 slot: $slot bid_seen { builder_index: 20 relay: \"relay.example:443\" } }
      observations { sequence: 2 slot: $slot payload_missing { builder_index: 20 block_root: \"$(root_of 5)\" attested_fraction: 0.95 } } }"
    node_message 'policy_ack { version: 2 }'
    raw '\x1a\x00'
    connect 2
    node_message "observations { observations { sequence: 1 slot: $slot bid_seen { builder_index: 1 } } }"
    node_message 'hello { node_id: "cn-2" }'
    connect 1
    node_message "hello { node_id: \"$(repeat n 129)\" }"
    connect 2
    node_message 'hello { node_id: "cn-3" }'
    raw '\xff\xff\xff'
    connect 2
    node_message 'hello { node_id: "cn-4" network: "hoodi" policy_version: 18446744073709551615 }'
    node_message 'hello { node_id: "cn-4" }'
  } >"$dir/02_connect.bin"

  {
    call GetPolicy ''
    call ListBuilders 'banned_only: true'
    call ListBuilders 'page_size: 1'
    call ListBuilders 'page_token: "0:99999999999999999999999"'
    call GetBuilder 'builder_index: 10'
    call GetBuilder 'builder_index: 18446744073709551615'
    call ListRelays ''
    call ListNodes 'page_size: 2'
    call ListNodes "page_token: \"$(repeat t 40)\""
    call GetConfig ''
    raw_call GetConfig '\x08'
  } >"$dir/03_admin_reads.bin"

  {
    call BanBuilder 'builder_index: 42 reason: "withheld" until_epoch: 312510'
    call BanBuilder "builder_index: 43 reason: \"$(repeat r 1025)\""
    call BanBuilder 'builder_index: 44 reason: "x" until_epoch: 18446744073709551615'
    call UnbanBuilder 'builder_index: 42'
    call UnbanBuilder 'builder_index: 99'
    call SetBuilderTrust 'builder_index: 11 trusted: true'
    call SetRelayTrust 'relay: "https://relay.example" trusted: true'
    call SetRelayTrust 'relay: "ftp://relay example" trusted: true'
    call Reset 'reason: "fuzz"'
    call ReloadConfig ''
    raw_call BanBuilder '\xff\xff\xff'
    raw_call Reset '\x0a\x80\x80\x80\x80\x10'
  } >"$dir/04_admin_actions.bin"
  ls -l "$dir"
}

# --- Fuzzing ---

[ $# -ge 1 ] || usage
target="$1"
target_flags=()
shift
case "$target" in
  seeds)
    write_fleet_seeds
    write_rpc_seeds
    exit 0
    ;;
  engine)
    label=//core:engine_fuzzer
    seeds=core/fuzz_corpus/engine
    dict=""
    ;;
  batch)
    label=//proto/codec:received_batch_fuzzer
    seeds=proto/codec/fuzz_corpus/received_batch
    dict=""
    ;;
  config)
    label=//proto/codec:config_file_fuzzer
    seeds=proto/codec/fuzz_corpus/config
    dict=proto/codec/fuzz_corpus/config.dict
    ;;
  fleet)
    label=//service:fleet_fuzzer
    seeds=service/fuzz_corpus/fleet
    dict=""
    ;;
  rpc)
    label=//service/rpc:rpc_fuzzer
    seeds=service/rpc/fuzz_corpus/rpc
    dict=""
    # Its breakerd keeps state from one input to the next, so most inputs allocate more than
    # they free, and libFuzzer would take each for a leak and scan the whole heap: a fifth of
    # the speed. Leaks are still looked for at the end, after breakerd's clean shutdown.
    target_flags=(-detect_leaks=0)
    ;;
  block_root)
    label=//sidecar/ssz:block_root_fuzzer
    seeds=sidecar/ssz/fuzz_corpus/block_root
    dict=""
    ;;
  block_root_differential)
    label=//sidecar/ssz:block_root_differential_fuzzer
    seeds=sidecar/ssz/fuzz_corpus/block_root_differential
    dict=""
    ;;
  builder_messages)
    label=//sidecar/builder:messages_fuzzer
    seeds=sidecar/builder/fuzz_corpus/messages
    dict=""
    ;;
  beacon)
    label=//sidecar/beacon:beacon_fuzzer
    seeds=sidecar/beacon/fuzz_corpus/beacon
    dict=""
    ;;
  sidecar_config)
    label=//sidecar:config_fuzzer
    seeds=sidecar/fuzz_corpus/config
    dict=""
    ;;
  block_production)
    label=//sidecar/validator:block_production_fuzzer
    seeds=sidecar/validator/fuzz_corpus/block_production
    dict=""
    ;;
  *) usage ;;
esac
seconds=60
if [ $# -ge 1 ] && [[ "$1" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi

dir="${BREAKER_FUZZ_DIR:-$HOME/.cache/breaker-fuzz}"
bazel=(bazel --output_base="$dir/output_base")
mkdir -p "$dir/corpus/$target" "$dir/artifacts/$target"
"${bazel[@]}" build --config=fuzz "$label"
binary="$("${bazel[@]}" info --config=fuzz bazel-bin 2>/dev/null)/${label#//}"
binary="${binary/://}"

flags=(
  -max_total_time="$seconds"
  -print_final_stats=1
  -artifact_prefix="$dir/artifacts/$target/"
  # An input that takes this long is a hang worth a look, not a slow machine.
  -timeout=60
)
if [ -n "$dict" ]; then flags+=(-dict="$root/$dict"); fi
flags+=("${target_flags[@]}")

echo "fuzz.sh: $binary for $seconds s; new inputs go to $dir/corpus/$target" >&2
status=0
"$binary" "${flags[@]}" "$@" "$dir/corpus/$target" "$root/$seeds" || status=$?
if [ "$status" -ne 0 ]; then
  cat >&2 <<EOF
fuzz.sh: $target failed (exit $status). Its input is in $dir/artifacts/$target/.
  Replay it:            $binary $dir/artifacts/$target/crash-...
  or, built with gcc:   bazel run ${label} -- --runs=0 $dir/artifacts/$target/crash-...
  Once fixed, keep it:  cp $dir/artifacts/$target/crash-... $root/$seeds/crash-<what>
EOF
fi
exit "$status"
