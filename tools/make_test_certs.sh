#!/bin/bash
# Writes the TLS test fixtures in tests/support/testdata/tls: a test CA, breakerd's certificate (for
# localhost and 127.0.0.1), client certificates for each role, and one from a CA that breakerd
# does not trust. They are valid for 100 years and for tests only: their keys are public.
#
#   tools/make_test_certs.sh
set -euo pipefail

out="$(cd "$(dirname "$0")/.." && pwd)/tests/support/testdata/tls"
mkdir -p "${out}"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
days=36500

# $1: name, $2: CA name, $3: subject CN, $4: subjectAltName
issue() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "${out}/$1.key" -subj "/CN=$3" -out "${work}/$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$4" >"${work}/$1.ext"
  openssl x509 -req -in "${work}/$1.csr" -CA "${work}/$2.pem" -CAkey "${work}/$2.key" \
    -CAcreateserial -days "${days}" -extfile "${work}/$1.ext" -out "${out}/$1.pem" 2>/dev/null
}

# $1: CA name
new_ca() {
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "${work}/$1.key" -subj "/CN=breaker test $1" -days "${days}" \
    -out "${work}/$1.pem" 2>/dev/null
}

new_ca ca
new_ca rogue_ca
cp "${work}/ca.pem" "${out}/ca.pem"
issue server ca breakerd "DNS:localhost,IP:127.0.0.1"
issue node_a ca node-a "DNS:node-a.pool.test"
issue node_b ca node-b "DNS:node-b.pool.test"
issue viewer ca viewer "DNS:viewer.pool.test"
issue admin ca admin "DNS:admin.pool.test"
# Trusted by nobody: its CA is not in ca.pem.
issue rogue rogue_ca admin "DNS:admin.pool.test"
echo "wrote ${out}"
