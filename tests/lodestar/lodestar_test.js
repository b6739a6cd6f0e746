'use strict';
// breakerd and breaker-sidecar against a real beacon node: a one-node Capella dev chain of
// Lodestar (beacon node and validator client, interop validators, 2 s slots, the minimal
// preset's 8 slots per epoch), whose builder URL is a sidecar port with a fake relay behind it.
//
//   node lodestar_test.js --root=RUNFILES_ROOT --node_modules=DIR --tmp=DIR --outputs=DIR
//       --pids=FILE
//
// It proves, with the node's own requests and blocks:
//   (a) the node's getHeader calls pass through the sidecar to the relay while the policy
//       allows it, and the node publishes the block it builds itself when the relay has no bid;
//   (b) once an operator bans the relay, the sidecar answers the node's getHeader with 204, the
//       relay sees no more of them, and the node still publishes a block at every slot it asked
//       for; lifting the ban restores forwarding;
//   (c) the sidecar's Beacon API observer reports the node's chain to breakerd: block after
//       block, and the slots it misses (its engine withholds payloads for a while), so that
//       breakerd's missed-slot breaker puts the fleet in SELF_BUILD, in which the node's
//       getHeader calls are again answered 204 and the node keeps publishing its own blocks,
//       until an operator's reset;
//   (d) the block root the sidecar computes for a block (sidecar/ssz) is the node's own;
//   (e) the sidecar warms the relay before the node's proposals, from the node's own
//       registrations and duties, and the node's getHeader takes the warmed connection;
//   (f) the validator client, pointed at the sidecar's validator port (which forwards to the
//       beacon node), performs every duty through it for two whole epochs: a block at every
//       slot, an attestation published at every slot (at least half of them in the chain: see
//       expectDutiesThroughTheValidatorPort), and no error in the validator client's log.
//
// Every process listens on 127.0.0.1 at ports picked at run time; each child's pid is appended
// to --pids so that the calling script can kill what this one leaves behind. Logs go to
// --outputs. Waits poll a condition against a deadline; no sleep asserts anything.

const childProcess = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

const { FakeRelay } = require('./fake_relay.js');

const kSecondsPerSlot = 2;
const kSlotMs = kSecondsPerSlot * 1000;
const kSlotsPerEpoch = 8; // the minimal preset's
const kNetwork = 'lodestar-dev';
const kNodeId = 'lodestar-1';
// Lodestar dev's genesis execution block hash, given explicitly to both the node and the engine.
const kGenesisBlockHash = `0x${'0b'.repeat(32)}`;
// The whole run, start to end; Bazel's own timeout is longer.
const kOverallDeadlineMs = 330 * 1000;
const kPollMs = 250;
const kGenesisDelaySeconds = 40;

// --- arguments, logging, processes ------------------------------------------------------------

function flag(name) {
  const prefix = `--${name}=`;
  const arg = process.argv.find((a) => a.startsWith(prefix));
  if (arg === undefined) throw new Error(`--${name} is required`);
  return arg.slice(prefix.length);
}

const args = {
  root: flag('root'),
  nodeModules: flag('node_modules'),
  tmp: flag('tmp'),
  outputs: flag('outputs'),
  pids: flag('pids'),
};
const started = Date.now();

function note(message) {
  const at = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`lodestar_test [${at} s] ${message}\n`);
}

class TestFailure extends Error {}

function check(condition, message) {
  if (!condition) throw new TestFailure(message);
}

const children = [];

// Starts `command` with stdout and stderr appended to OUTPUTS/<name>.log, which begins with the
// command line.
function start(name, command, argv, options = {}) {
  const logPath = path.join(args.outputs, `${name}.log`);
  const log = fs.openSync(logPath, 'a');
  fs.writeSync(log, `# ${command} ${argv.join(' ')}\n`);
  const child = childProcess.spawn(command, argv, {
    cwd: options.cwd || args.tmp,
    env: { ...process.env, ...(options.env || {}) },
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  fs.appendFileSync(args.pids, `${child.pid}\n`);
  const entry = { name, child, logPath, exited: null };
  child.on('exit', (code, signal) => {
    entry.exited = signal ? `signal ${signal}` : `status ${code}`;
  });
  children.push(entry);
  note(`started ${name} (pid ${child.pid}; its command line heads ${name}.log)`);
  return entry;
}

function readLog(entry) {
  try {
    return fs.readFileSync(entry.logPath, 'utf8');
  } catch {
    return '';
  }
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Stops every child, newest first: SIGTERM, then SIGKILL after graceMs.
async function stopAll(graceMs) {
  for (const entry of [...children].reverse()) {
    if (entry.exited !== null) continue;
    entry.child.kill('SIGTERM');
    const until = Date.now() + graceMs;
    while (entry.exited === null && Date.now() < until) await sleep(100);
    if (entry.exited === null) entry.child.kill('SIGKILL');
  }
}

// Polls `probe` (async, returns a value or a falsy one) until it returns a truthy value, which
// it returns, or fails after timeoutMs naming `what` (and what `explain()` adds, if given). A
// probe that throws is retried; the last error is quoted. A child that exits fails the wait.
async function until(what, timeoutMs, probe, explain = null) {
  const deadline = Math.min(Date.now() + timeoutMs, started + kOverallDeadlineMs);
  let lastError = null;
  for (;;) {
    const dead = children.find((c) => c.exited !== null);
    if (dead) {
      throw new TestFailure(`${dead.name} exited (${dead.exited}) while waiting for ${what}`);
    }
    try {
      const value = await probe();
      if (value) return value;
    } catch (e) {
      if (e instanceof TestFailure) throw e;
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const why = lastError ? ` (last error: ${lastError.message})` : '';
      const more = explain ? `: ${explain()}` : '';
      throw new TestFailure(
        `timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}${why}${more}`,
      );
    }
    await sleep(kPollMs);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The port a child logged, matched by `pattern` (its first group).
async function loggedPort(entry, pattern) {
  const match = await until(`${entry.name}'s port`, 30000, () => pattern.exec(readLog(entry)));
  return Number(match[1]);
}

// --- the beacon node's REST API and breakerctl --------------------------------------------------

let restUrl = '';
// The node's process (beacon node and validator client).
let lodestarEntry = null;

// GET on the node's Beacon API: {status, body} with body parsed when it is JSON.
async function rest(urlPath) {
  const response = await fetch(`${restUrl}${urlPath}`, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

async function headSlot() {
  const head = await rest('/eth/v1/beacon/headers/head');
  if (head.status !== 200) throw new Error(`headers/head answered ${head.status}`);
  return Number(head.body.data.header.message.slot);
}

// Waits until the node's head is past `slot`; returns the head's slot.
async function awaitBlockAfter(slot) {
  return until(`a block after slot ${slot}`, 4 * kSlotMs, async () => {
    const head = await headSlot();
    return head > slot ? head : null;
  });
}

// A block at `slot` is in the node's chain; polls briefly, since it may be importing it.
async function expectBlockAt(slot, why) {
  await until(`the node's block at slot ${slot} (${why})`, 3 * kSlotMs, async () => {
    const header = await rest(`/eth/v1/beacon/headers/${slot}`);
    return header.status === 200 && Number(header.body.data.header.message.slot) === slot;
  });
}

let breakerdTarget = '';

// Runs breakerctl against breakerd; resolves with its stdout, parsed when --json is among argv.
function breakerctl(argv) {
  const binary = path.join(args.root, 'ctl/breakerctl');
  const full = [`--target=${breakerdTarget}`, '--timeout=10s', ...argv];
  return new Promise((resolve, reject) => {
    childProcess.execFile(binary, full, { timeout: 20000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`breakerctl ${argv.join(' ')} failed (${error.code}): ${stderr.trim()}`));
        return;
      }
      resolve(argv.includes('--json') ? JSON.parse(stdout) : stdout);
    });
  });
}

// `breakerctl status`: the policy, and the sidecar's node as breakerd knows it (or undefined).
async function fleetStatus() {
  const status = await breakerctl(['--json', 'status']);
  const node = (status.nodes.nodes || []).find((n) => n.nodeId === kNodeId);
  return { policy: status.policy, node };
}

// Waits until the sidecar acknowledged policy `version` (or a later one).
async function awaitAcked(version) {
  await until(`the sidecar to acknowledge policy version ${version}`, 20000, async () => {
    const { node } = await fleetStatus();
    return node && node.connected && Number(node.policyVersionAcked) >= version;
  });
}

// --- what the sidecar refused, and what the relay saw -------------------------------------------

// The getHeader calls the sidecar answered 204, from its log ("refused get_header slot N via
// RELAY: REASON"), in order.
function refusedHeaders(sidecar) {
  const refused = [];
  for (const m of readLog(sidecar).matchAll(/refused get_header slot (\d+) via (\S+): (.*)/g)) {
    refused.push({ slot: Number(m[1]), relay: m[2], reason: m[3] });
  }
  return refused;
}

// Once the sidecar runs a policy that refuses the relay: waits until it refused the node's
// getHeader at two slots, each for a reason that includes `reason`, then checks that the node
// published its own block at each of those slots, that the relay saw no getHeader since, and
// that the chain went on past them.
async function expectRefusedAndBuiltLocally(sidecar, relay, reason) {
  const since = Date.now();
  const before = refusedHeaders(sidecar).length;
  const what = `the sidecar to refuse two getHeader calls (${reason})`;
  const refused = await until(what, 30000, () => {
    const now = refusedHeaders(sidecar).slice(before);
    return now.length >= 2 ? now : null;
  });
  const slots = refused.map((r) => r.slot).join(', ');
  note(`refused at slots ${slots}: ${refused[0].reason}`);
  for (const r of refused) {
    check(r.reason.includes(reason), `the sidecar refused slot ${r.slot} because ${r.reason}`);
    await expectBlockAt(r.slot, `built locally, its getHeader refused: ${reason}`);
  }
  const leaked = relay.headers().filter((h) => h.time >= since);
  check(
    leaked.length === 0,
    `the relay saw ${leaked.length} getHeader calls while the policy refused it (${reason}), ` +
      `slots ${leaked.map((h) => h.slot).join(', ')}`,
  );
  await awaitBlockAfter(Math.max(...refused.map((r) => r.slot)));
}

// --- the processes ------------------------------------------------------------------------------

function nodeScript(script, scriptArgs) {
  return ['--preserve-symlinks', '--preserve-symlinks-main', script, ...scriptArgs];
}

// The engine, then the node, whose chain begins at `genesisTime` (the sidecar already runs, so
// that the node's validator client performs its duties through it from the first slot);
// resolves with the engine's port.
async function startChain(sidecarPort, validatorPort, genesisTime) {
  const engine = start(
    'engine',
    process.execPath,
    nodeScript(path.join(__dirname, 'engine_server.js'), [
      `--node_modules=${args.nodeModules}`,
      `--genesis_block_hash=${kGenesisBlockHash}`,
    ]),
  );
  const enginePort = await loggedPort(engine, /engine listening on port (\d+)/);

  // Chosen before the sidecar started, which forwards to it.
  const restPort = Number(new URL(restUrl).port);
  const p2pPort = await freePort();
  const dir = path.join(args.tmp, 'lodestar');
  fs.mkdirSync(dir, { recursive: true });
  lodestarEntry = start(
    'lodestar',
    process.execPath,
    nodeScript(path.join(args.nodeModules, '@chainsafe/lodestar/lib/index.js'), [
      'dev',
      '--preset=minimal',
      `--genesisTime=${genesisTime}`,
      `--dataDir=${path.join(dir, 'data')}`,
      '--genesisValidators=8',
      '--startValidators=0..7',
      `--genesisEth1Hash=${kGenesisBlockHash}`,
      '--params.ALTAIR_FORK_EPOCH=0',
      '--params.BELLATRIX_FORK_EPOCH=0',
      '--params.CAPELLA_FORK_EPOCH=0',
      '--terminal-total-difficulty-override=0',
      `--params.SECONDS_PER_SLOT=${kSecondsPerSlot}`,
      '--rest.address=127.0.0.1',
      `--rest.port=${restPort}`,
      '--rest.namespace=*',
      // The validator client's beacon node (its default is port 9596): the sidecar's validator
      // port, which forwards to the node's REST API. Until the sidecar runs, the validator
      // client retries.
      `--server=http://127.0.0.1:${validatorPort}`,
      '--listenAddress=127.0.0.1',
      `--port=${p2pPort}`,
      `--execution.urls=http://127.0.0.1:${enginePort}`,
      '--builder',
      `--builder.urls=http://127.0.0.1:${sidecarPort}`,
    ]),
    // It writes genesis.ssz into its working directory.
    { cwd: dir },
  );

  const genesis = await until("the node's genesis (/eth/v1/beacon/genesis)", 90000, async () => {
    const answer = await rest('/eth/v1/beacon/genesis');
    return answer.status === 200 ? answer.body.data : null;
  });
  const spec = (await rest('/eth/v1/config/spec')).body.data;
  check(
    Number(spec.SECONDS_PER_SLOT) === kSecondsPerSlot &&
      Number(spec.SLOTS_PER_EPOCH) === kSlotsPerEpoch,
    `the node's spec: SECONDS_PER_SLOT ${spec.SECONDS_PER_SLOT}, ` +
      `SLOTS_PER_EPOCH ${spec.SLOTS_PER_EPOCH}`,
  );
  check(Number(genesis.genesis_time) === genesisTime,
        `the node's genesis time is ${genesis.genesis_time}, not ${genesisTime}`);
  const ahead = genesisTime - Math.floor(Date.now() / 1000);
  note(`the node serves its chain, whose genesis is ${ahead} s from now`);
  return { enginePort };
}

function breakerdConfig(genesisTime, extra) {
  return [
    'chain {',
    `  network: "${kNetwork}"`,
    `  genesis_time_unix: ${genesisTime}`,
    `  seconds_per_slot: ${kSecondsPerSlot}`,
    `  slots_per_epoch: ${kSlotsPerEpoch}`,
    '}',
    ...extra,
    '',
  ].join('\n');
}

// breakerd on the node's chain, then the sidecar: the node's Beacon API, breakerd, and the
// relay behind the port the node's builder URL names. Resolves with the sidecar's entry and
// breakerd's configuration file.
async function startFleet(genesisTime, sidecarPort, relayUrl, metricsPort, validatorPort) {
  const configPath = path.join(args.tmp, 'breakerd.textproto');
  fs.writeFileSync(configPath, breakerdConfig(genesisTime, []));
  const stateDir = path.join(args.tmp, 'breakerd-state');
  fs.mkdirSync(stateDir);
  const breakerd = start('breakerd', path.join(args.root, 'service/breakerd'), [
    '--listen=127.0.0.1:0',
    `--state_dir=${stateDir}`,
    `--config=${configPath}`,
  ]);
  const port = await loggedPort(breakerd, /breakerd listening on .* \(port (\d+)\)/);
  breakerdTarget = `127.0.0.1:${port}`;

  const sidecarConfig = path.join(args.tmp, 'sidecar.textproto');
  fs.writeFileSync(
    sidecarConfig,
    [
      `beacon_node_url: "${restUrl}"`,
      `breakerd_addresses: "${breakerdTarget}"`,
      `node_id: "${kNodeId}"`,
      `network: "${kNetwork}"`,
      `fallback_config_file: "${configPath}"`,
      'upstream_timeout_ms: 5000',
      `metrics_listen: "127.0.0.1:${metricsPort}"`,
      `validator_listen: "127.0.0.1:${validatorPort}"`,
      `upstreams { listen_port: ${sidecarPort} url: "${relayUrl}" }`,
      '',
    ].join('\n'),
  );
  const sidecar = start('sidecar', path.join(args.root, 'sidecar/breaker-sidecar'), [
    `--config=${sidecarConfig}`,
  ]);
  await until('the sidecar to be ready', 30000, () => readLog(sidecar).includes('sidecar ready'));
  await awaitAcked(1);
  return { sidecar, configPath };
}

// --- the checks -------------------------------------------------------------------------------

// (a) The node's getHeader calls reach the relay through the sidecar, and the node builds its
// own block when the relay has none.
async function expectForwarded(sidecar, relay) {
  const forwarded = await until('two getHeader calls of the node at the relay', 120000, () => {
    const headers = relay.headers();
    return headers.length >= 2 ? headers : null;
  });
  const first = forwarded[0];
  note(`(a) forwarded: getHeader at slots ${forwarded.map((h) => h.slot).join(', ')}`);
  // A request of the real chain: its parent hash is the payload hash of an earlier block (the
  // one before, unless that one was imported after the node asked, as on a loaded machine).
  const earlier = [];
  for (let slot = first.slot - 1; slot >= Math.max(1, first.slot - 8); --slot) {
    const block = await rest(`/eth/v2/beacon/blocks/${slot}`);
    if (block.status === 200) earlier.push(block.body.data.message.body.execution_payload.block_hash);
  }
  check(
    earlier.length === 0 || earlier.includes(first.parentHash),
    `getHeader at slot ${first.slot} named parent ${first.parentHash}, the payload of no ` +
      `block of the 8 slots before (${earlier.join(', ')})`,
  );
  await expectBlockAt(first.slot, 'built locally, the relay had no bid');
  check(refusedHeaders(sidecar).length === 0, 'the sidecar refused a getHeader of a good relay');
}

// The sum of a metric's samples on the sidecar's /metrics, over its labels: `filter` selects
// the label sets (their text between the braces).
async function sidecarMetric(metricsPort, name, filter = () => true) {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    if (filter(m[1] || '')) sum += Number(m[2]);
  }
  return sum;
}

// (e) The warm-up at the proposal, driven by the node's own registrations (Lodestar's
// validator client registers through the sidecar) and its proposer duties: the sidecar warms
// the relay in the slot before a proposal of the node's validators (the relay sees the
// status request), and the node's getHeader at the proposal takes the warmed connection.
async function expectWarmedForProposals(relay, metricsPort) {
  const used = await until(
    "a getHeader of the node on a connection the sidecar warmed for its proposal",
    60000,
    async () => {
      const n = await sidecarMetric(metricsPort, 'breaker_sidecar_upstream_warmed_used_total');
      return n >= 1 ? n : null;
    },
  );
  const keys = await sidecarMetric(metricsPort, 'breaker_sidecar_validator_keys_indexed');
  const warmed = await sidecarMetric(metricsPort, 'breaker_sidecar_proposal_warmups_total', (l) =>
    l.includes('outcome="warmed"'),
  );
  const statuses = relay.requests.filter((r) => r.path === '/eth/v1/builder/status').length;
  check(keys >= 1, 'the sidecar indexed none of the keys the node registered');
  check(statuses >= 1, 'the relay saw no warming status request');
  note(`(e) warmed: ${keys} keys indexed, ${warmed} warm-ups, ${statuses} status requests at ` +
       `the relay, ${used} getHeader calls on a warmed connection`);
}

// (b) An operator bans the relay: 204 from the sidecar, nothing reaches the relay, blocks go
// on. Lifting the ban forwards again.
async function expectBanEnforced(sidecar, relay, relayUrl) {
  const banned = await breakerctl([
    '--json',
    'ban',
    `--relay=${relayUrl}`,
    '--reason=lodestar test: banned relay',
  ]);
  await awaitAcked(Number(banned.version));
  await expectRefusedAndBuiltLocally(sidecar, relay, `relay ${relayUrl} is banned`);
  note('(b) banned relay: refused, built locally, nothing reached the relay');

  const unbanned = await breakerctl(['--json', 'unban', `--relay=${relayUrl}`]);
  await awaitAcked(Number(unbanned.version));
  const since = Date.now();
  const again = await until('a getHeader at the relay once the ban is lifted', 30000, () =>
    relay.headers().find((h) => h.time >= since),
  );
  note(`(b) ban lifted: getHeader at slot ${again.slot} forwarded again`);
}

// (c) The observer's reports of the node's chain reach breakerd: for each of three blocks in a
// row, breakerd takes an observation from the sidecar once the node has the block (not before
// a quarter slot ahead of the test seeing it; the report of the block before is a slot older).
async function expectBlocksReported() {
  let head = await headSlot();
  let previous = 0;
  let latest = null;
  const lastObservation = () => {
    if (latest === null) return 0;
    return latest.node && latest.node.lastObservation ? Date.parse(latest.node.lastObservation) : 0;
  };
  for (let i = 0; i < 3; ++i) {
    head = await awaitBlockAfter(head);
    const seen = Date.now() - kSlotMs / 4;
    previous = await until(
      `breakerd to take the sidecar's report of the node's block at slot ${head}`,
      10000,
      async () => {
        latest = await fleetStatus();
        const at = lastObservation();
        return at >= seen && at > previous ? at : null;
      },
      () =>
        `breakerd's latest observation from ${kNodeId} came ` +
        `${latest && latest.node ? latest.node.lastObservation || 'never' : '(no such node)'}; ` +
        "the sidecar's Beacon API observer does not report the node's blocks to breakerd",
    );
  }
  const missed = latest.policy.missedSlots;
  note(`(c) breakerd took the reports of three blocks in a row`);
  note(`(c) the missed-slot breaker: ${JSON.stringify(missed)}`);
  check(
    missed.active && !missed.tripped,
    `the missed-slot breaker is not clear on the node's own chain: ${JSON.stringify(missed)}`,
  );
}

// (d) The block root sidecar/ssz computes (//sidecar/ssz:block_root, the root the sidecar reports
// a failed reveal by) is the node's own, for the last few blocks of its chain.
async function expectBlockRootsAgree() {
  const binary = path.join(args.root, 'sidecar/ssz/block_root');
  const head = await headSlot();
  let compared = 0;
  for (let slot = head; slot > 0 && compared < 3; --slot) {
    const block = await fetch(`${restUrl}/eth/v2/beacon/blocks/${slot}`, {
      signal: AbortSignal.timeout(5000),
    });
    if (block.status === 404) continue; // an empty slot
    check(block.status === 200, `blocks/${slot} answered ${block.status}`);
    const json = await block.text();
    const root = await rest(`/eth/v1/beacon/blocks/${slot}/root`);
    check(root.status === 200, `blocks/${slot}/root answered ${root.status}`);
    const computed = childProcess
      .execFileSync(binary, ['--kind=full', '--preset=minimal'], { input: json, timeout: 20000 })
      .toString()
      .trim();
    check(
      computed === root.body.data.root,
      `block_root of the node's block at slot ${slot} is ${computed}; the node's root is ` +
        `${root.body.data.root}`,
    );
    compared += 1;
  }
  check(compared === 3, `only ${compared} blocks at or before slot ${head} to compare`);
  note(`(d) block roots: the last ${compared} blocks' roots up to slot ${head} are the node's`);
}

// Makes the engine fail every getPayload (`withhold`) or serve them again.
async function setPayloads(enginePort, withhold) {
  const control = withhold ? 'withhold_payloads' : 'serve_payloads';
  const response = await fetch(`http://127.0.0.1:${enginePort}/${control}`, {
    method: 'POST',
    signal: AbortSignal.timeout(5000),
  });
  check(response.status === 204, `the engine answered ${control} with ${response.status}`);
}

// (c) and (b) in SELF_BUILD: the node misses slots for real (its engine withholds payloads),
// the observer reports them empty, and breakerd's seed rule (more than 1 missed slot since the
// last present one, latched) puts the fleet in SELF_BUILD. With payloads back, the sidecar
// refuses the relay and the node builds its own blocks, until an operator's reset.
async function expectSelfBuildFromMissedSlots(sidecar, relay, configPath, genesisTime, engine) {
  const rule = 'missed_slots { preset: "custom" latched_rule: true max_allowed_missing_slots: 1 }';
  fs.writeFileSync(configPath, breakerdConfig(genesisTime, [rule]));
  await breakerctl(['--json', 'reload']);
  const head = await headSlot();
  await setPayloads(engine, true);
  let policy = null;
  const selfBuild = await until(
    'breakerd in SELF_BUILD from the slots the node missed',
    30000,
    async () => {
      policy = (await fleetStatus()).policy;
      return policy.mode === 'MODE_SELF_BUILD' ? policy : null;
    },
    () =>
      `mode ${policy && policy.mode}, ` +
      `missed slots ${JSON.stringify(policy && policy.missedSlots)} (the node's head was at ` +
      `slot ${head} when its payloads stopped): the observer reported no empty slot`,
  );
  await setPayloads(engine, false);
  const missed = selfBuild.missedSlots;
  note(`(c) SELF_BUILD at slot ${selfBuild.computedAtSlot}: ${missed.rule}`);
  check(
    missed.latched && /missed slots since the last present slot/.test(missed.rule),
    `SELF_BUILD for another reason: ${selfBuild.modeReason}; ${JSON.stringify(missed)}`,
  );
  await awaitAcked(Number(selfBuild.version));
  // The first block with payloads back: every getHeader from now on can end in a block.
  await awaitBlockAfter(await headSlot());
  await expectRefusedAndBuiltLocally(sidecar, relay, 'mode SELF_BUILD');
  note('(b) SELF_BUILD: refused, built locally, nothing reached the relay');

  const reset = await breakerctl(['--json', 'reset', '--reason=lodestar test: slots back']);
  check(reset.mode === 'MODE_ALL_BUILDERS', `after the reset, mode ${reset.mode}`);
  await awaitAcked(Number(reset.version));
  const since = Date.now();
  const again = await until('a getHeader at the relay after the reset', 30000, () =>
    relay.headers().find((h) => h.time >= since),
  );
  note(`(b) reset: getHeader at slot ${again.slot} forwarded again`);
}

// (f) The validator client performs its duties through the validator port: over the first two
// whole epochs (slots 8 to 23), the node has a block at every slot (all 8 validators are the
// validator client's, so every proposer is), the validator client's attestations are in the
// chain, and its log has no error. Attestations: one validator a slot (the minimal preset's
// committees, 8 validators over 8 slots). The duty is the publication: the validator client
// must log one through the port for every slot. Inclusion is the chain's: a loaded machine
// delays the node's single thread, which runs the validator client too, and some slots'
// attestations then come too late for the next blocks, as they do with the validator client
// pointed at the node directly (seen: one slot of 26 at a load average of 9). At least half of
// the slots' attestations must be in the chain, and the count is logged; a port that lost
// attestations would leave none.
async function expectDutiesThroughTheValidatorPort() {
  const first = kSlotsPerEpoch;
  const end = first + 2 * kSlotsPerEpoch;
  note(`(f) the duties of slots ${first} to ${end - 1}, through the validator port`);
  await until(`the node's head past slot ${end}`, (end + 6) * kSlotMs,
              async () => (await headSlot()) > end);
  const attested = new Set();
  for (let slot = first; slot <= end; ++slot) {
    const header = await rest(`/eth/v1/beacon/headers/${slot}`);
    check(header.status === 200 && Number(header.body.data.header.message.slot) === slot,
          `(f) no block at slot ${slot}: its proposal went through the validator port`);
    const block = await rest(`/eth/v2/beacon/blocks/${slot}`);
    check(block.status === 200, `(f) the block at slot ${slot}: ${block.status}`);
    for (const attestation of block.body.data.message.body.attestations) {
      // One validator a slot: the aggregation bits are 0x03 (one bit, and the list's end bit).
      if (attestation.aggregation_bits === '0x03') attested.add(Number(attestation.data.slot));
    }
  }
  const missing = [];
  for (let slot = first; slot < end; ++slot) if (!attested.has(slot)) missing.push(slot);
  check(2 * missing.length <= end - first,
        `(f) no attestation in the chain for slots ${missing.join(', ')}`);
  const log = readLog(lodestarEntry);
  const published = new Set();
  for (const match of log.matchAll(/Published attestations[^\n]*?\bslot=(\d+)/g)) {
    published.add(Number(match[1]));
  }
  const unpublished = [];
  for (let slot = first; slot < end; ++slot) if (!published.has(slot)) unpublished.push(slot);
  check(unpublished.length === 0,
        `(f) the validator client published no attestation for slots ${unpublished.join(', ')}`);
  // The validator client's lines have no module ("[]"), the node's name theirs ("[rest]", ...).
  // Lodestar 1.5.1's validator client asks for a builder block at each proposal, and logs an
  // error when there is none: its node's builder is disabled until its status check passed,
  // and then the relay has no bid (a 204, which 1.5.1 reads as invalid JSON). It then builds
  // locally. Both happen alike without the sidecar; any other error is the port's.
  const errors = log
    .split('\n')
    .filter((line) => /\[\]\s+\S*error/.test(line) && !line.includes('Failed to produce builder block'));
  check(errors.length === 0, `(f) the validator client logged errors:\n${errors.join('\n')}`);
  note(`(f) a block and a published attestation at every slot ${first} to ${end - 1}; ` +
       'attestations of ' +
       `${end - first - missing.length} of those ${end - first} slots in the chain` +
       `${missing.length ? ` (none for ${missing.join(', ')})` : ''}; no error in the validator ` +
       "client's log");
}

async function run() {
  const relay = new FakeRelay(path.join(args.outputs, 'relay.log'));
  try {
    const relayUrl = `http://127.0.0.1:${await relay.listen()}`;
    note(`fake relay at ${relayUrl}`);
    // The node's builder URL names the sidecar's port before the sidecar runs: the sidecar
    // needs breakerd, which needs the chain's genesis time, which the node gives.
    const sidecarPort = await freePort();
    const validatorPort = await freePort();
    const metricsPort = await freePort();
    restUrl = `http://127.0.0.1:${await freePort()}`;
    // Far enough ahead for breakerd, the sidecar and the node to start on a loaded machine: a
    // node whose validators missed the first slots takes itself for syncing and never proposes.
    const genesisTime = Math.floor(Date.now() / 1000) + kGenesisDelaySeconds;
    const { sidecar, configPath } = await startFleet(genesisTime, sidecarPort, relayUrl,
                                                     metricsPort, validatorPort);
    const { enginePort } = await startChain(sidecarPort, validatorPort, genesisTime);

    await expectForwarded(sidecar, relay);
    await expectWarmedForProposals(relay, metricsPort);
    await expectBanEnforced(sidecar, relay, relayUrl);
    await expectBlocksReported();
    await expectBlockRootsAgree();
    await expectDutiesThroughTheValidatorPort();
    await expectSelfBuildFromMissedSlots(sidecar, relay, configPath, genesisTime, enginePort);
  } finally {
    relay.close();
  }
}

async function main() {
  let status = 0;
  try {
    await run();
    note('PASS');
  } catch (e) {
    status = 1;
    note(`FAIL: ${e instanceof TestFailure ? e.message : e.stack}`);
    for (const entry of children) {
      const lines = readLog(entry).trimEnd().split('\n').slice(-15);
      process.stderr.write(
        `--- the last lines of ${entry.name}.log (the test's outputs keep it all) ---\n` +
          `${lines.join('\n')}\n`,
      );
    }
  }
  await stopAll(10000);
  process.exit(status);
}

main();
