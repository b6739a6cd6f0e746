'use strict';
// Hostile probes from a client that is not breakerd's: a Node.js program on @grpc/grpc-js and
// @grpc/proto-loader, sharing nothing with breakerd but the .proto files, sends what an
// attacker would: strings past their bounds, control characters, numbers at 2^64-1, a page
// token breakerd never gave out, and bytes that are no message at all. Each probe must get its
// status code and a message naming what was wrong; afterwards breakerd must still answer, be
// healthy, and hold the policy it held before the probes.
//
// Usage: node hostile_test.js --target=HOST:PORT --proto_root=DIR [--network=NAME]
//        [--timeout_seconds=N]
// run_interop_test.sh starts breakerd with fresh state and runs this.

const assert = require('node:assert/strict');
const harness = require('./harness');

const { STEP_TIMEOUT_MS, deadline, currentSlot, runMain } = harness;
const log = harness.logger('hostile');
const step = (name, body) => harness.step(log, name, body);

const NODE_ID = 'hostile-node';
// Refusals name the field and its bound and quote at most a short prefix of what was sent.
const MAX_MESSAGE_BYTES = 1024;
const UINT64_MAX = '18446744073709551615';  // 2^64-1
// Status codes (grpc.status), by name.
const OK = 0;
const INVALID_ARGUMENT = 3;

// 64-bit fields as decimal strings, both ways: 2^64-1 is no JavaScript number.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

// A unary call's outcome, never a rejection: { code, details, response }.
function call(client, method, request) {
  return new Promise((resolve) => {
    client[method](request, { deadline: deadline() }, (error, response) => {
      resolve(error ? { code: error.code, details: error.details } : { code: OK, details: '', response });
    });
  });
}

// A unary call of `method` (its full path) with `bytes` as its serialized request, answered as
// raw bytes too: what a client that builds no messages at all sends and gets.
function rawCall(raw, method, bytes) {
  return new Promise((resolve) => {
    raw.makeUnaryRequest(method, (buffer) => buffer, (buffer) => buffer, bytes,
                         { deadline: deadline() }, (error, response) => {
                           resolve(error ? { code: error.code, details: error.details }
                                         : { code: OK, details: '', response });
                         });
  });
}

// `outcome` is `code` with a message holding `substring`, and a short one.
function expectRefused(outcome, code, substring) {
  assert.equal(outcome.code, code,
               `answered ${outcome.code} "${outcome.details}", expected ${code} with "${substring}"`);
  assert.ok(outcome.details.includes(substring),
            `message "${outcome.details}" does not say "${substring}"`);
  assert.ok(Buffer.byteLength(outcome.details) <= MAX_MESSAGE_BYTES,
            `a message of ${Buffer.byteLength(outcome.details)} bytes`);
}

// A Connect stream's server messages, taken in order of arrival by kind.
class Stream {
  constructor(breaker, overallDeadline) {
    this.call = breaker.Connect({ deadline: overallDeadline });
    this.messages = [];
    this.status = null;
    this.waiters = [];
    this.call.on('data', (message) => {
      this.messages.push(message);
      this.wake();
    });
    // The status comes as 'status', and also as 'error' when it is not OK.
    this.call.on('error', () => {});
    this.call.on('status', (status) => {
      this.status = status;
      this.wake();
    });
  }

  wake() {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  // Resolves with the first message `match` takes, removed; rejects when the stream ends first.
  take(what, match, ms = STEP_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
      const look = () => {
        const index = this.messages.findIndex(match);
        if (index >= 0) {
          clearTimeout(timer);
          resolve(this.messages.splice(index, 1)[0]);
        } else if (this.status) {
          clearTimeout(timer);
          reject(new Error(`stream ended (${this.status.code} "${this.status.details}") ` +
                           `before ${what}`));
        } else {
          this.waiters.push(look);
        }
      };
      look();
    });
  }

  // Resolves with the status the server ends the stream with.
  ended(ms = STEP_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`stream not ended within ${ms} ms`)), ms);
      const look = () => {
        if (this.status) {
          clearTimeout(timer);
          resolve(this.status);
        } else {
          this.waiters.push(look);
        }
      };
      look();
    });
  }
}

// A hello breakerd must refuse: the stream's status.
async function refusedHello(breaker, overallDeadline, hello) {
  const stream = new Stream(breaker, overallDeadline);
  stream.call.write({ hello });
  const status = await stream.ended();
  stream.call.end();
  return { code: status.code, details: status.details };
}

// A payload missing that changes nothing: attested below any threshold, the block untimely.
function noEffect(sequence, slot, root) {
  return {
    sequence,
    slot: String(slot),
    payload_missing: { builder_index: '7100', block_root: root, attested_fraction: 0.1 },
  };
}

// Sends one batch on a connected stream and returns its acknowledgement, acknowledging any
// policy on the way.
async function observe(stream, observations, sequence) {
  stream.call.write({ observations: { observations } });
  for (;;) {
    const message = await stream.take(`acknowledgement of ${sequence}`,
                                      (m) => m.kind !== 'config' && m.kind !== 'node_state');
    if (message.kind === 'policy') {
      stream.call.write({ policy_ack: { version: message.policy.version } });
      continue;
    }
    assert.equal(message.kind, 'observation_ack');
    assert.equal(message.observation_ack.sequence, sequence,
                 `acknowledged ${message.observation_ack.sequence}, the batch's highest is ${sequence}`);
    return message.observation_ack;
  }
}

// The first refusal of `ack`, as an outcome.
function refusal(ack) {
  assert.equal(ack.refused.length, 1, `refusals: ${JSON.stringify(ack.refused)}`);
  return { code: ack.refused[0].code, details: ack.refused[0].message };
}

async function checkHealth(raw) {
  // grpc.health.v1.HealthCheckRequest {service}: field 1; the answer {status: SERVING} is 08 01.
  for (const service of ['', 'breaker.v1.Breaker', 'breaker.v1.Admin']) {
    const request = service === '' ? Buffer.alloc(0)
      : Buffer.concat([Buffer.from([0x0a, service.length]), Buffer.from(service)]);
    const outcome = await rawCall(raw, '/grpc.health.v1.Health/Check', request);
    assert.equal(outcome.code, OK, `health of '${service}': ${outcome.code} ${outcome.details}`);
    assert.ok(outcome.response.equals(Buffer.from([0x08, 0x01])),
              `health of '${service}' answered ${outcome.response.toString('hex')}, not SERVING`);
  }
}

// The policy's serialized bytes, as breakerd sends them.
async function policyBytes(raw) {
  const outcome = await rawCall(raw, '/breaker.v1.Admin/GetPolicy', Buffer.alloc(0));
  assert.equal(outcome.code, OK, `GetPolicy: ${outcome.code} ${outcome.details}`);
  return outcome.response;
}

async function run(flags) {
  const grpc = require('@grpc/grpc-js');
  const protoLoader = require('@grpc/proto-loader');
  const overallDeadline = deadline(flags.timeout_seconds * 1000);
  const definition = protoLoader.loadSync('breaker/v1/breaker.proto', {
    ...LOADER_OPTIONS,
    includeDirs: [flags.proto_root],
  });
  const api = grpc.loadPackageDefinition(definition).breaker.v1;
  const credentials = grpc.credentials.createInsecure();
  const admin = new api.Admin(flags.target, credentials);
  const breaker = new api.Breaker(flags.target, credentials);
  // A client of no service: its calls take and give raw bytes.
  const raw = new grpc.Client(flags.target, credentials);
  const decodePolicy = api.Admin.service.GetPolicy.responseDeserialize;

  const before = await step('GetPolicy before the probes', async () => {
    await checkHealth(raw);
    return policyBytes(raw);
  });
  const config = await step('GetConfig: the chain, for the observations\' slots', async () => {
    const outcome = await call(admin, 'GetConfig', {});
    assert.equal(outcome.code, OK, `GetConfig: ${outcome.code} ${outcome.details}`);
    return outcome.response;
  });

  // --- Connect: hellos refused ---
  await step('hello with a 129-byte node id: INVALID_ARGUMENT', async () => {
    const outcome = await refusedHello(breaker, overallDeadline,
                                       { node_id: 'n'.repeat(129), network: flags.network });
    expectRefused(outcome, INVALID_ARGUMENT, 'hello.node_id is 129 bytes');
  });
  await step('hello with a newline in the node id: INVALID_ARGUMENT', async () => {
    const outcome = await refusedHello(breaker, overallDeadline,
                                       { node_id: 'bn-1\nE1201 00:00:00 forged', network: flags.network });
    expectRefused(outcome, INVALID_ARGUMENT, 'has byte 0x0a at offset 4');
    expectRefused(outcome, INVALID_ARGUMENT, 'printable ASCII');
    assert.ok(!outcome.details.includes('\n'), 'the refusal repeats the newline');
  });
  await step('hello with a 200 KB network name: INVALID_ARGUMENT, a short message', async () => {
    const outcome = await refusedHello(breaker, overallDeadline,
                                       { node_id: 'bn-2', network: 'n'.repeat(200 << 10) });
    expectRefused(outcome, INVALID_ARGUMENT, 'hello.network is 204800 bytes');
    assert.ok(outcome.details.length < 200, `a message of ${outcome.details.length} characters`);
  });

  // --- Connect: observations refused one by one; the stream survives them ---
  const stream = await step('Connect: a valid hello, then NodeState, Config and Policy', async () => {
    const opened = new Stream(breaker, overallDeadline);
    opened.call.write({ hello: { node_id: NODE_ID, client_version: 'hostile-grpc-js', network: flags.network } });
    await opened.take('node_state', (m) => m.kind === 'node_state');
    await opened.take('config', (m) => m.kind === 'config');
    const { policy } = await opened.take('policy', (m) => m.kind === 'policy');
    opened.call.write({ policy_ack: { version: policy.version } });
    return opened;
  });
  const slot = currentSlot(config.chain) - 1;
  const root = Buffer.alloc(32, 0x68);
  await step('a bid with a 47-byte builder_pubkey: refused INVALID_ARGUMENT', async () => {
    const ack = await observe(stream, [{
      sequence: '1',
      slot: String(slot),
      bid_seen: { builder_index: '7101', relay: '', builder_pubkey: Buffer.alloc(47, 0x6b) },
    }], '1');
    expectRefused(refusal(ack), INVALID_ARGUMENT, 'bid_seen.builder_pubkey is 47 bytes');
  });
  await step('a bid through a 513-byte relay: refused INVALID_ARGUMENT', async () => {
    const relay = `https://relay.example/${'p'.repeat(513 - 'https://relay.example/'.length)}`;
    assert.equal(relay.length, 513);
    const ack = await observe(stream, [{
      sequence: '2',
      slot: String(slot),
      bid_seen: { builder_index: '7101', relay },
    }], '2');
    expectRefused(refusal(ack), INVALID_ARGUMENT, 'is 513 bytes; accepted: at most 512');
  });
  await step('sequence 2^64-1: refused INVALID_ARGUMENT', async () => {
    const ack = await observe(stream, [noEffect(UINT64_MAX, slot, root)], UINT64_MAX);
    expectRefused(refusal(ack), INVALID_ARGUMENT, 'accepted: 1..4611686018427387904');
  });
  await step('then a normal sequence number: applied, not taken as a replay', async () => {
    const ack = await observe(stream, [noEffect('3', slot, root)], '3');
    assert.deepEqual(ack.refused, [], `refused: ${JSON.stringify(ack.refused)}`);
    const outcome = await call(admin, 'ListNodes', {});
    assert.equal(outcome.code, OK, `ListNodes: ${outcome.code} ${outcome.details}`);
    const node = outcome.response.nodes.find((n) => n.node_id === NODE_ID);
    assert.ok(node !== undefined, `${NODE_ID} is not listed`);
    assert.equal(node.last_sequence, '3', `last_sequence is ${node.last_sequence}`);
  });
  await step('the stream survives the refusals and ends OK', async () => {
    stream.call.end();
    const status = await stream.ended();
    assert.equal(status.code, OK, `stream ended with ${status.code} ${status.details}`);
  });

  // --- Admin ---
  await step('BanBuilder with a 1025-byte reason: INVALID_ARGUMENT', async () => {
    const outcome = await call(admin, 'BanBuilder',
                               { builder_index: '7102', reason: 'r'.repeat(1025) });
    expectRefused(outcome, INVALID_ARGUMENT, 'reason is 1025 bytes');
  });
  await step('BanBuilder until epoch 2^64-1: INVALID_ARGUMENT', async () => {
    const outcome = await call(admin, 'BanBuilder',
                               { builder_index: '7102', reason: 'forever', until_epoch: UINT64_MAX });
    expectRefused(outcome, INVALID_ARGUMENT, `ban until epoch ${UINT64_MAX}`);
    expectRefused(outcome, INVALID_ARGUMENT, 'or none for a ban until unbanned');
  });
  await step('ListNodes with a bogus page token past its bound (257 bytes): INVALID_ARGUMENT',
             async () => {
               const token = `bogus-${'t'.repeat(251)}`;
               assert.equal(token.length, 257);
               const outcome = await call(admin, 'ListNodes', { page_token: token });
               expectRefused(outcome, INVALID_ARGUMENT, 'page_token is 257 bytes');
             });
  await step('ListNodes with a short bogus page token: INVALID_ARGUMENT', async () => {
    // breakerd's page tokens are signed by the process that gave them out: any other string is
    // refused.
    const outcome = await call(admin, 'ListNodes', { page_token: 'bogus-token' });
    expectRefused(outcome, INVALID_ARGUMENT, 'is not one this breakerd gave out');
  });
  await step('garbage bytes as BanBuilder\'s request: INVALID_ARGUMENT', async () => {
    const outcome = await rawCall(raw, '/breaker.v1.Admin/BanBuilder', Buffer.from([0xff, 0xff, 0xff]));
    expectRefused(outcome, INVALID_ARGUMENT, '/breaker.v1.Admin/BanBuilder could not be parsed');
  });
  await step('garbage bytes as Report\'s request: INVALID_ARGUMENT', async () => {
    // Field 1 (node_id) declared 5 bytes long, holding one.
    const outcome = await rawCall(raw, '/breaker.v1.Breaker/Report', Buffer.from([0x0a, 0x05, 0x78]));
    expectRefused(outcome, INVALID_ARGUMENT, '/breaker.v1.Breaker/Report could not be parsed');
  });

  // --- Afterwards ---
  await step('health is SERVING (overall, Breaker, Admin)', () => checkHealth(raw));
  await step('GetPolicy answers the policy held before the probes', async () => {
    const outcome = await call(admin, 'GetPolicy', {});
    assert.equal(outcome.code, OK, `GetPolicy: ${outcome.code} ${outcome.details}`);
    const after = await policyBytes(raw);
    assert.ok(after.equals(before),
              `policy was ${JSON.stringify(decodePolicy(before))}, ` +
              `is ${JSON.stringify(decodePolicy(after))}`);
  });
  for (const client of [admin, breaker, raw]) client.close();
}

runMain('hostile_test.js', log, 'all probes', run);
