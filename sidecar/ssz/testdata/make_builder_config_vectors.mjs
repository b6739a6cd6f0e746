// Writes the test vectors of //sidecar/ssz:builder_config_test: random but valid BuilderConfig
// bodies of produceBlockV4 (ethereum/beacon-APIs, types/gloas; the request auth of
// ethereum/builder-specs' Gloas validator.md), each with the hash_tree_root that @chainsafe/ssz
// computes, in the Beacon API's JSON and in SSZ.
//
//   node sidecar/ssz/testdata/make_builder_config_vectors.mjs \
//       [--node_modules=tests/lodestar/node_modules]
//
// (from the repository's top; tests/lodestar's node_modules comes from tools/setup.sh). The
// containers are defined here with @chainsafe/ssz's types, as Lodestar 1.5.1 predates Gloas. A
// BuilderEntry's url is a ByteList in SSZ and a string in JSON, so the JSON written here carries
// it as text. The values are random from a fixed seed, so a rerun writes the same files.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const flag = process.argv.find((a) => a.startsWith('--node_modules='));
const nodeModules = path.resolve(
  flag ? flag.slice('--node_modules='.length) : path.join(here, '../../../tests/lodestar/node_modules'),
);
const s = await import(pathToFileURL(path.join(nodeModules, '@chainsafe/ssz/lib/index.js')).href);

// Limits: MAX_BUILDER_ENTRIES and MAX_BUILDER_PUBKEYS of beacon-APIs, MAX_DATA_SIZE of
// builder-specs, and a url of at most 2048 bytes.
const MAX_BUILDER_ENTRIES = 64;
const MAX_BUILDER_PUBKEYS = 64;
const MAX_URL_BYTES = 2048;
const MAX_DATA_SIZE = 4096;

const eth2 = { jsonCase: 'eth2' };
const Uint64 = new s.UintBigintType(8);
const container = (fields) => new s.ContainerType(fields, eth2);

const RequestAuth = container({ data: new s.ByteListType(MAX_DATA_SIZE), slot: Uint64 });
const SignedRequestAuth = container({ message: RequestAuth, signature: new s.ByteVectorType(96) });
const BuilderEntry = container({
  url: new s.ByteListType(MAX_URL_BYTES),
  auth: SignedRequestAuth,
  builderPubkeys: new s.ListCompositeType(new s.ByteVectorType(48), MAX_BUILDER_PUBKEYS),
  maxExecutionPayment: Uint64,
  minBid: Uint64,
  builderBoostFactor: Uint64,
});
const BuilderConfig = container({
  minBid: Uint64,
  builderBoostFactor: Uint64,
  builders: new s.ListCompositeType(BuilderEntry, MAX_BUILDER_ENTRIES),
});

// --- random values -------------------------------------------------------------------------------
let seed = 20261204;
function random() {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const below = (n) => Math.floor(random() * n);
const bytes = (n) => Uint8Array.from({ length: n }, () => below(256));
// Both ends of the range, and values between.
function uint64() {
  const pick = below(4);
  if (pick === 0) return (1n << 64n) - 1n;
  if (pick === 1) return 0n;
  return BigInt(`0x${Buffer.from(bytes(8)).toString('hex')}`);
}
function url() {
  const host = Array.from({ length: 3 + below(20) }, () => 'abcdefghijklmnopqrstuvwxyz'[below(26)]);
  return Buffer.from(`https://0x${Buffer.from(bytes(48)).toString('hex')}@${host.join('')}.example:${1 + below(65535)}/`);
}
function entry(keys) {
  return {
    url: Uint8Array.from(url()),
    auth: { message: { data: bytes(below(80)), slot: uint64() }, signature: bytes(96) },
    builderPubkeys: Array.from({ length: keys }, () => bytes(48)),
    maxExecutionPayment: uint64(),
    minBid: uint64(),
    builderBoostFactor: uint64(),
  };
}

// No entry; one entry with no key (any builder); entries with several keys; the limits' worth.
const configs = {
  empty: [],
  any_builder: [0],
  three: [1, 0, 5],
  full: Array.from({ length: MAX_BUILDER_ENTRIES }, (_, i) => (i === 0 ? MAX_BUILDER_PUBKEYS : below(4))),
};

const hex = (u8) => `0x${Buffer.from(u8).toString('hex')}`;
for (const [name, keys] of Object.entries(configs)) {
  const value = { minBid: uint64(), builderBoostFactor: uint64(), builders: keys.map(entry) };
  const json = BuilderConfig.toJson(value);
  // The Beacon API writes a url as the string it is.
  for (const [i, builder] of json.builders.entries()) {
    builder.url = Buffer.from(value.builders[i].url).toString('utf8');
  }
  const vector = {
    root: hex(BuilderConfig.hashTreeRoot(value)),
    json,
    ssz: hex(BuilderConfig.serialize(value)),
    entry_roots: value.builders.map((b) => hex(BuilderEntry.hashTreeRoot(b))),
  };
  const file = path.join(here, `builder_config_${name}.json`);
  fs.writeFileSync(file, `${JSON.stringify(vector)}\n`);
  process.stdout.write(`${file}: ${vector.root}\n`);
}
