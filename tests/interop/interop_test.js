'use strict';
// Cross-stack interoperability test: a Node.js client built on @grpc/grpc-js and
// @grpc/proto-loader, sharing nothing with breakerd but the .proto files, drives a running
// breakerd through reflection, health, the Admin API and a full Connect stream.
//
// Usage: node interop_test.js --target=HOST:PORT --proto_root=DIR [--network=NAME]
//        [--timeout_seconds=N]
// run_interop_test.sh starts breakerd and runs this. It expects a breakerd with fresh state:
// it checks that builder BANNED_BUILDER is not banned, then gets it banned.

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const harness = require('./harness');

const { STEP_TIMEOUT_MS, deadline, currentSlot, runMain } = harness;
const log = harness.logger('interop');
const step = (name, body) => harness.step(log, name, body);

const NODE_ID = 'interop-node';
// Builder indices: one that fails (and must end up banned), one that only bids (must not).
const BANNED_BUILDER = 7001;
const BIDDING_BUILDER = 7002;

// 64-bit fields come back as JS numbers: every such value this test reads (versions, slots,
// sequences, genesis time) is far below 2^53.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

// grpc.health.v1 in protobuf.js JSON form. breakerd's health service is gRPC C++'s built-in
// one, whose messages are not in the server's descriptor pool: reflection lists the service
// but cannot return its descriptor, and the project ships no health.proto.
const HEALTH_JSON = {
  nested: { grpc: { nested: { health: { nested: { v1: { nested: {
    HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
    HealthCheckResponse: {
      fields: { status: { type: 'ServingStatus', id: 1 } },
      nested: {
        ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } },
      },
    },
    Health: {
      methods: {
        Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' },
      },
    },
  } } } } } } },
};

// Promise form of a unary call, with a per-call deadline.
function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: deadline() }, (error, response) => {
      if (error) reject(new Error(`${method} failed: ${error.code} ${error.details}`));
      else resolve(response);
    });
  });
}

// Polls `probe` until it returns a truthy value or `ms` pass. For state that the server
// updates after it answers (a policy ack, a closed stream), which no message announces.
async function eventually(what, probe, ms = STEP_TIMEOUT_MS) {
  const until = Date.now() + ms;
  let last;
  for (;;) {
    last = await probe();
    if (last.ok) return last.value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}; last seen: ${last.seen}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function loadBreakerApi(grpc, protoLoader, protoRoot) {
  const definition = protoLoader.loadSync('breaker/v1/breaker.proto', {
    ...LOADER_OPTIONS,
    includeDirs: [protoRoot],
  });
  return grpc.loadPackageDefinition(definition).breaker.v1;
}

function loadHealthApi(grpc, protoLoader) {
  const definition = protoLoader.fromJSON(HEALTH_JSON, LOADER_OPTIONS);
  return grpc.loadPackageDefinition(definition).grpc.health.v1;
}

async function checkReflection(grpc, GrpcReflection, target) {
  const reflection = new GrpcReflection(target, grpc.credentials.createInsecure());
  const services = await reflection.listServices();
  for (const wanted of ['breaker.v1.Breaker', 'breaker.v1.Admin', 'grpc.health.v1.Health']) {
    assert.ok(services.includes(wanted), `reflection lists ${services.join(', ')}; no ${wanted}`);
  }
  // The listing alone proves little: fetch and decode a descriptor (with its imports,
  // config.proto and timestamp.proto) through the JS protobuf stack.
  const methods = (await reflection.listMethods('breaker.v1.Breaker')).map((m) => m.name);
  assert.deepEqual(methods.sort(), ['Connect', 'Report'],
                   'reflection descriptor of breaker.v1.Breaker has other methods');
  return services;
}

async function checkHealth(health) {
  // breakerd registers the overall status and each of its two services.
  for (const service of ['', 'breaker.v1.Breaker', 'breaker.v1.Admin']) {
    const response = await unary(health, 'Check', { service });
    assert.equal(response.status, 'SERVING', `health of '${service}' is ${response.status}`);
  }
  // A service the server does not know: gRPC's standard answer is NOT_FOUND.
  const unknown = await unary(health, 'Check', { service: 'no.such.Service' })
    .then(() => 'OK', (error) => error.message);
  assert.match(unknown, /failed: 5 /, `health of an unknown service answered ${unknown}`);
}

async function checkInitialPolicy(admin) {
  const policy = await unary(admin, 'GetPolicy', {});
  assert.ok(policy.version >= 1, `policy version is ${policy.version}, expected >= 1`);
  assert.equal(policy.mode, 'MODE_ALL_BUILDERS', `fresh policy mode is ${policy.mode}`);
  assert.ok(!isBanned(policy, BANNED_BUILDER), `builder ${BANNED_BUILDER} is banned already`);
  return policy;
}

function isBanned(policy, builder) {
  return policy.banned_builders.some((ban) => ban.builder_index === builder);
}

// Collects a Connect stream's server messages so that steps can wait for one of a kind in
// whatever order the server interleaves them (acks and policies race by design).
class StreamInbox {
  constructor(call) {
    this.call = call;
    this.messages = [];
    this.consumed = new Set();  // indices into messages already taken
    this.waiters = [];
    this.failure = null;
    this.status = null;
    call.on('data', (message) => {
      this.messages.push(message);
      this.wake();
    });
    call.on('error', (error) => {
      this.failure = new Error(`stream failed: ${error.code} ${error.details}`);
      this.wake();
    });
    call.on('status', (status) => {
      this.status = status;
      this.wake();
    });
  }

  wake() {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  // Takes the first unconsumed message for which `match` holds, waiting for it if need be.
  take(what, match, ms = STEP_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no ${what} within ${ms} ms; received: ${this.describe()}`));
      }, ms);
      const look = () => {
        const index = this.messages.findIndex((m, i) => !this.consumed.has(i) && match(m));
        if (index >= 0) {
          clearTimeout(timer);
          this.consumed.add(index);
          resolve(this.messages[index]);
        } else if (this.failure || this.status) {
          clearTimeout(timer);
          reject(this.failure ||
                 new Error(`stream ended (${this.status.code}) before ${what}`));
        } else {
          this.waiters.push(look);
        }
      };
      look();
    });
  }

  // Waits for the server to end the stream; resolves with its status.
  ended(ms = STEP_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`stream not ended within ${ms} ms`)), ms);
      const look = () => {
        if (this.failure) {
          clearTimeout(timer);
          reject(this.failure);
        } else if (this.status) {
          clearTimeout(timer);
          resolve(this.status);
        } else {
          this.waiters.push(look);
        }
      };
      look();
    });
  }

  describe() {
    return this.messages.map((m) => m.kind).join(', ') || 'nothing';
  }
}

// Observations 1..n of one slot's story: two bids, the block, then its payload missing,
// attested well above the default 0.6 threshold: the failing builder's first failure.
function makeObservations(slot) {
  const blockRoot = crypto.createHash('sha256').update(`interop block ${slot}`).digest();
  assert.equal(blockRoot.length, 32);
  return [
    { sequence: 1, slot: slot - 1, bid_seen: { builder_index: BIDDING_BUILDER, relay: '' } },
    { sequence: 2, slot, bid_seen: { builder_index: BANNED_BUILDER, relay: '' } },
    { sequence: 3, slot, blocks_seen: { block_roots: [blockRoot] } },
    {
      sequence: 4,
      slot,
      payload_missing: { builder_index: BANNED_BUILDER, block_root: blockRoot, attested_fraction: 0.9 },
    },
  ];
}

async function openStream(breaker, network, overallDeadline) {
  const call = breaker.Connect({ deadline: overallDeadline });
  const stream = new StreamInbox(call);
  call.write({ hello: { node_id: NODE_ID, client_version: 'interop-grpc-js', network } });
  // The NodeState comes first, once: a node never seen has no sequence number handled.
  const first = await stream.take('first message', () => true);
  assert.equal(first.kind, 'node_state',
               `first message after the hello is ${first.kind}, not node_state`);
  assert.equal(first.node_state.last_sequence, 0,
               `a new node's last sequence is ${first.node_state.last_sequence}`);
  // Then the Config, once, so that a node can run the same rules alone.
  const second = await stream.take('second message', () => true);
  assert.equal(second.kind, 'config',
               `second message after the hello is ${second.kind}, not config`);
  const config = second.config;
  if (network) {
    assert.equal(config.chain.network, network, `config names network ${config.chain.network}`);
  }
  assert.ok(config.chain.genesis_time_unix > 0 && config.chain.seconds_per_slot > 0,
            `config carries no usable chain: ${JSON.stringify(config.chain)}`);
  const policy = (await stream.take('initial policy', (m) => m.kind === 'policy')).policy;
  assert.ok(policy.version >= 1, `initial policy version ${policy.version}`);
  // Acknowledge it: the server holds back newer policies until the last one is acknowledged.
  call.write({ policy_ack: { version: policy.version } });
  return { call, stream, config, policy };
}

async function reportAndAwaitAck(session) {
  const { config, stream, call } = session;
  const slot = currentSlot(config.chain);
  const observations = makeObservations(slot);
  const n = observations.length;
  call.write({ observations: { observations } });
  const ack = await stream.take(`observation ack of sequence ${n}`,
                                (m) => m.kind === 'observation_ack' && m.observation_ack.sequence >= n);
  // Acks may be merged, so check every ack received so far for refusals.
  for (const m of stream.messages.filter((x) => x.kind === 'observation_ack')) {
    assert.deepEqual(m.observation_ack.refused, [],
                     `observations refused (slot ${slot}): ${JSON.stringify(m.observation_ack.refused)}`);
  }
  assert.equal(ack.observation_ack.sequence, n, `ack sequence ${ack.observation_ack.sequence}`);
  return n;
}

// Waits for the policy that bans the failing builder, acknowledging every policy on the way
// (the server sends the next version only once the previous one is acknowledged).
async function awaitBanAndAck(session) {
  const { call, stream } = session;
  let previous = session.policy.version;
  for (;;) {
    const { policy } = await stream.take('policy banning the failing builder',
                                         (m) => m.kind === 'policy');
    assert.ok(policy.version > previous, `policy version ${policy.version} after ${previous}`);
    previous = policy.version;
    call.write({ policy_ack: { version: policy.version } });
    if (!isBanned(policy, BANNED_BUILDER)) continue;
    const ban = policy.banned_builders.find((b) => b.builder_index === BANNED_BUILDER);
    assert.equal(ban.ban.kind, 'BAN_KIND_FAILURE', `ban kind ${ban.ban.kind}`);
    assert.ok(!isBanned(policy, BIDDING_BUILDER), `builder ${BIDDING_BUILDER} banned too`);
    assert.equal(policy.mode, 'MODE_ALL_BUILDERS', `one failed builder changed mode to ${policy.mode}`);
    return policy;
  }
}

async function findNode(admin) {
  const response = await unary(admin, 'ListNodes', {});
  return { response, node: response.nodes.find((n) => n.node_id === NODE_ID) };
}

async function checkNodeAcked(admin, version, lastSequence) {
  const node = await eventually(`ListNodes to show ${NODE_ID} acknowledging ${version}`, async () => {
    const { node } = await findNode(admin);
    return {
      ok: node !== undefined && node.policy_version_acked === version,
      value: node,
      seen: JSON.stringify(node),
    };
  });
  assert.equal(node.connected, true, `${NODE_ID} is not connected`);
  assert.equal(node.last_sequence, lastSequence, `last_sequence ${node.last_sequence}`);
  assert.equal(node.client_version, 'interop-grpc-js', `client_version ${node.client_version}`);
}

async function closeStream(admin, session) {
  session.call.end();
  const status = await session.stream.ended();
  assert.equal(status.code, 0, `stream ended with ${status.code} ${status.details}`);
  await eventually(`ListNodes to show ${NODE_ID} disconnected`, async () => {
    const { node } = await findNode(admin);
    return { ok: node !== undefined && !node.connected, seen: JSON.stringify(node) };
  });
}

async function run(flags) {
  // Loaded only after the lockfile check, so a missing install gets a clear message.
  const grpc = require('@grpc/grpc-js');
  const protoLoader = require('@grpc/proto-loader');
  const { GrpcReflection } = require('grpc-js-reflection-client');
  const overallDeadline = deadline(flags.timeout_seconds * 1000);

  const api = loadBreakerApi(grpc, protoLoader, flags.proto_root);
  const credentials = grpc.credentials.createInsecure();
  const admin = new api.Admin(flags.target, credentials);
  const breaker = new api.Breaker(flags.target, credentials);
  const health = new (loadHealthApi(grpc, protoLoader).Health)(flags.target, credentials);

  await step('reflection lists Breaker, Admin and Health',
             () => checkReflection(grpc, GrpcReflection, flags.target));
  await step('health is SERVING (overall, Breaker, Admin)', () => checkHealth(health));
  await step('Admin.GetPolicy: version >= 1, MODE_ALL_BUILDERS', () => checkInitialPolicy(admin));
  const session = await step('Connect: hello, then NodeState, Config and Policy',
                             () => openStream(breaker, flags.network, overallDeadline));
  const n = await step('ObservationBatch acknowledged without refusals',
                       () => reportAndAwaitAck(session));
  const banned = await step(`new Policy bans builder ${BANNED_BUILDER}; PolicyAck sent`,
                            () => awaitBanAndAck(session));
  await step(`Admin.ListNodes: ${NODE_ID} connected, acknowledged version ${banned.version}`,
             () => checkNodeAcked(admin, banned.version, n));
  await step('Admin.GetPolicy agrees with the stream', async () => {
    const policy = await unary(admin, 'GetPolicy', {});
    assert.equal(policy.version, banned.version, `GetPolicy version ${policy.version}`);
    assert.ok(isBanned(policy, BANNED_BUILDER), 'GetPolicy does not ban the builder');
  });
  await step('stream closed cleanly (OK), node disconnected', () => closeStream(admin, session));
  for (const client of [admin, breaker, health]) client.close();
}

runMain('interop_test.js', log, 'all steps', run);
