// Writes the block-root test vectors of //sidecar/ssz:beacon_block_test: random but valid
// signed blinded blocks of every fork the builder API serves, in the mainnet preset and in the
// minimal preset of test chains, each with the block root that @chainsafe/ssz computes, in the
// builder API's JSON and in SSZ; and a Gloas block of each preset in SSZ, as produceBlockV4
// answers a builder's win, with its bid's builder index.
//
//   node sidecar/ssz/testdata/make_vectors.mjs [--node_modules=tests/lodestar/node_modules]
//
// (from the repository's top; tests/lodestar's node_modules comes from tools/setup.sh). Bellatrix
// and Capella are @lodestar/types' containers (Lodestar 1.5.1, mainnet preset); Deneb, Electra,
// Fulu and Gloas are defined here from ethereum/consensus-specs with @chainsafe/ssz's types, as
// Lodestar 1.5.1 predates them. The values are random from a fixed seed, so a rerun writes the
// same files.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const flag = process.argv.find((a) => a.startsWith('--node_modules='));
const nodeModules = path.resolve(
  flag ? flag.slice('--node_modules='.length) : path.join(here, '../../../tests/lodestar/node_modules'),
);
const load = (file) => import(pathToFileURL(path.join(nodeModules, file)).href);
// The same copy of @chainsafe/ssz as @lodestar/types', so that `instanceof` sees its types.
const s = await load('@chainsafe/ssz/lib/index.js');
const { ssz } = await load('@lodestar/types/lib/index.js');

// --- presets (presets/{mainnet,minimal}/*.yaml): the limits a block's types depend on ----------
const presets = {
  mainnet: {
    MAX_VALIDATORS_PER_COMMITTEE: 2048,
    MAX_COMMITTEES_PER_SLOT: 64,
    SYNC_COMMITTEE_SIZE: 512,
    PTC_SIZE: 512,
    MAX_BLOB_COMMITMENTS_PER_BLOCK: 4096,
    MAX_DEPOSIT_REQUESTS_PER_PAYLOAD: 8192,
    MAX_WITHDRAWAL_REQUESTS_PER_PAYLOAD: 16,
    MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD: 2,
  },
  minimal: {
    MAX_VALIDATORS_PER_COMMITTEE: 2048,
    MAX_COMMITTEES_PER_SLOT: 4,
    SYNC_COMMITTEE_SIZE: 32,
    PTC_SIZE: 16,
    MAX_BLOB_COMMITMENTS_PER_BLOCK: 4096,
    MAX_DEPOSIT_REQUESTS_PER_PAYLOAD: 8192,
    MAX_WITHDRAWAL_REQUESTS_PER_PAYLOAD: 16,
    MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD: 2,
  },
};
const MAX_ATTESTER_SLASHINGS_ELECTRA = 1;
const MAX_ATTESTATIONS_ELECTRA = 8;
const MAX_PAYLOAD_ATTESTATIONS = 4;

const eth2 = { jsonCase: 'eth2' };
const Uint64 = new s.UintBigintType(8);
const Bytes20 = new s.ByteVectorType(20);
const Bytes32 = new s.ByteVectorType(32);
const Bytes48 = new s.ByteVectorType(48);
const Bytes96 = new s.ByteVectorType(96);
const container = (fields) => new s.ContainerType(fields, eth2);
const signed = (message) => container({ message, signature: Bytes96 });

// The blinded blocks of Capella to Fulu under preset `p`. Capella's is @lodestar/types' (mainnet)
// with the preset's sync aggregate; the later forks are defined here.
function blindedBlocks(p) {
  const capellaBody = container({
    ...ssz.capella.BlindedBeaconBlockBody.fields,
    syncAggregate: container({
      syncCommitteeBits: new s.BitVectorType(p.SYNC_COMMITTEE_SIZE),
      syncCommitteeSignature: Bytes96,
    }),
  });
  // Deneb (specs/deneb/beacon-chain.md, builder.md)
  const denebHeader = container({
    ...ssz.capella.ExecutionPayloadHeader.fields,
    blobGasUsed: Uint64,
    excessBlobGas: Uint64,
  });
  const denebBody = container({
    ...capellaBody.fields,
    executionPayloadHeader: denebHeader,
    blobKzgCommitments: new s.ListCompositeType(Bytes48, p.MAX_BLOB_COMMITMENTS_PER_BLOCK),
  });
  // Electra (specs/electra/beacon-chain.md); Fulu's blinded block is Electra's
  const attesters = p.MAX_VALIDATORS_PER_COMMITTEE * p.MAX_COMMITTEES_PER_SLOT;
  const electraIndexedAttestation = container({
    attestingIndices: new s.ListBasicType(Uint64, attesters),
    data: ssz.phase0.AttestationData,
    signature: Bytes96,
  });
  const electraAttestation = container({
    aggregationBits: new s.BitListType(attesters),
    data: ssz.phase0.AttestationData,
    signature: Bytes96,
    committeeBits: new s.BitVectorType(p.MAX_COMMITTEES_PER_SLOT),
  });
  const executionRequests = container({
    deposits: new s.ListCompositeType(
      container({
        pubkey: Bytes48,
        withdrawalCredentials: ssz.phase0.DepositData.fields.withdrawalCredentials,
        amount: Uint64,
        signature: Bytes96,
        index: Uint64,
      }),
      p.MAX_DEPOSIT_REQUESTS_PER_PAYLOAD,
    ),
    withdrawals: new s.ListCompositeType(
      container({ sourceAddress: Bytes20, validatorPubkey: Bytes48, amount: Uint64 }),
      p.MAX_WITHDRAWAL_REQUESTS_PER_PAYLOAD,
    ),
    consolidations: new s.ListCompositeType(
      container({ sourceAddress: Bytes20, sourcePubkey: Bytes48, targetPubkey: Bytes48 }),
      p.MAX_CONSOLIDATION_REQUESTS_PER_PAYLOAD,
    ),
  });
  const electraBody = container({
    ...denebBody.fields,
    attesterSlashings: new s.ListCompositeType(
      container({ attestation1: electraIndexedAttestation, attestation2: electraIndexedAttestation }),
      MAX_ATTESTER_SLASHINGS_ELECTRA,
    ),
    attestations: new s.ListCompositeType(electraAttestation, MAX_ATTESTATIONS_ELECTRA),
    executionRequests,
  });
  const blindedBlock = (body) => container({ ...ssz.capella.BlindedBeaconBlock.fields, body });
  // Gloas (specs/gloas/beacon-chain.md): the full block produceBlockV4 answers without its
  // payload, whose body carries the builder's bid in place of the payload. Its progressive lists
  // and containers are encoded as lists and containers are.
  const bid = signed(
    container({
      parentBlockHash: Bytes32,
      parentBlockRoot: Bytes32,
      blockHash: Bytes32,
      prevRandao: Bytes32,
      feeRecipient: Bytes20,
      gasLimit: Uint64,
      builderIndex: Uint64,
      slot: Uint64,
      value: Uint64,
      executionPayment: Uint64,
      blobKzgCommitments: new s.ListCompositeType(Bytes48, p.MAX_BLOB_COMMITMENTS_PER_BLOCK),
      executionRequestsRoot: Bytes32,
    }),
  );
  const payloadAttestation = container({
    aggregationBits: new s.BitVectorType(p.PTC_SIZE),
    data: container({
      beaconBlockRoot: Bytes32,
      slot: Uint64,
      payloadPresent: new s.BooleanType(),
      blobDataAvailable: new s.BooleanType(),
    }),
    signature: Bytes96,
  });
  const { executionPayloadHeader, blobKzgCommitments, ...kept } = electraBody.fields;
  const gloasBody = container({
    ...Object.fromEntries(Object.entries(kept).filter(([name]) => name !== 'executionRequests')),
    signedExecutionPayloadBid: bid,
    payloadAttestations: new s.ListCompositeType(payloadAttestation, MAX_PAYLOAD_ATTESTATIONS),
    parentExecutionRequests: executionRequests,
  });
  return {
    gloas: container({ ...ssz.capella.BeaconBlock.fields, body: gloasBody }),
    capella: blindedBlock(capellaBody),
    deneb: blindedBlock(denebBody),
    electra: blindedBlock(electraBody),
    fulu: blindedBlock(electraBody),
  };
}

const mainnet = blindedBlocks(presets.mainnet);
const minimal = blindedBlocks(presets.minimal);
const forks = {
  bellatrix: { kind: 'blinded', block: ssz.bellatrix.BlindedBeaconBlock },
  capella: { kind: 'blinded', block: ssz.capella.BlindedBeaconBlock },
  deneb: { kind: 'blinded', block: mainnet.deneb },
  electra: { kind: 'blinded', block: mainnet.electra },
  fulu: { kind: 'blinded', block: mainnet.fulu },
  // A full block (transactions and withdrawals in place of their roots).
  capella_full: { fork: 'capella', kind: 'full', block: ssz.capella.BeaconBlock },
  // The minimal preset of test chains.
  capella_minimal: { fork: 'capella', preset: 'minimal', kind: 'blinded', block: minimal.capella },
  deneb_minimal: { fork: 'deneb', preset: 'minimal', kind: 'blinded', block: minimal.deneb },
  electra_minimal: { fork: 'electra', preset: 'minimal', kind: 'blinded', block: minimal.electra },
  fulu_minimal: { fork: 'fulu', preset: 'minimal', kind: 'blinded', block: minimal.fulu },
};

// --- random values -------------------------------------------------------------------------------
let seed = 20260501;
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
// At least one element, at most `most` (and the limit).
const count = (limit, most) => 1 + below(Math.min(limit, most));

// A random value of `type`; lists hold 1 to `most` elements, so that none is empty.
function value(type, most) {
  if (type instanceof s.UintBigintType) {
    // Both ends of the range, and values between.
    const pick = below(4);
    const max = (1n << BigInt(8 * type.byteLength)) - 1n;
    if (pick === 0) return max;
    if (pick === 1) return 0n;
    return BigInt(`0x${Buffer.from(bytes(type.byteLength)).toString('hex')}`);
  }
  if (type instanceof s.UintNumberType) return below(2 ** 32) * 2 ** 20 + below(2 ** 20);
  if (type instanceof s.BooleanType) return random() < 0.5;
  if (type instanceof s.ByteVectorType) return bytes(type.lengthBytes);
  if (type instanceof s.ByteListType) return bytes(below(Math.min(type.limitBytes, 40) + 1));
  if (type instanceof s.BitListType) {
    const n = below(Math.min(type.limitBits, 70) + 1);
    return s.BitArray.fromBoolArray(Array.from({ length: n }, () => random() < 0.5));
  }
  if (type instanceof s.BitVectorType) {
    return s.BitArray.fromBoolArray(Array.from({ length: type.lengthBits }, () => random() < 0.5));
  }
  if (type instanceof s.ListBasicType || type instanceof s.ListCompositeType) {
    return Array.from({ length: count(type.limit, most) }, () => value(type.elementType, most));
  }
  if (type instanceof s.VectorBasicType || type instanceof s.VectorCompositeType) {
    return Array.from({ length: type.length }, () => value(type.elementType, most));
  }
  if (type instanceof s.ContainerType) {
    const out = {};
    for (const [name, field] of Object.entries(type.fields)) out[name] = value(field, most);
    return out;
  }
  throw new Error(`no random value for ${type.typeName}`);
}

const hex = (u8) => `0x${Buffer.from(u8).toString('hex')}`;

for (const [name, { fork = name, preset = 'mainnet', kind, block }] of Object.entries(forks)) {
  const signedType = signed(block);
  // The first with one element in every list, the second with one or two.
  for (const [index, most] of [1, 2].entries()) {
    const message = value(block, most);
    const signedBlock = { message, signature: bytes(96) };
    const vector = {
      fork,
      kind,
      preset,
      root: hex(block.hashTreeRoot(message)),
      block: signedType.toJson(signedBlock),
      ssz: hex(signedType.serialize(signedBlock)),
    };
    const file = path.join(here, `${name}_${index}.json`);
    fs.writeFileSync(file, `${JSON.stringify(vector)}\n`);
    process.stdout.write(`${file}: ${vector.root}\n`);
  }
}

// Gloas blocks as produceBlockV4 answers them in SSZ, with their bid's builder index (of
// //sidecar/ssz:builder_messages_test). After the blocks above, so that theirs stay the same.
for (const [preset, types] of Object.entries({ mainnet, minimal })) {
  const block = value(types.gloas, 2);
  const vector = {
    preset,
    builder_index: block.body.signedExecutionPayloadBid.message.builderIndex.toString(),
    ssz: hex(types.gloas.serialize(block)),
  };
  const file = path.join(here, `gloas_block_${preset}.json`);
  fs.writeFileSync(file, `${JSON.stringify(vector)}\n`);
  process.stdout.write(`${file}: builder ${vector.builder_index}\n`);
}
