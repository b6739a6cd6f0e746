'use strict';
// What the Node.js test clients share: flags, the lockfile check, named steps with deadlines,
// and a main() that bounds the whole run. Node's own modules only, so that it loads before any
// package does.

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');

// Per-step deadline: a step that hangs fails with its own name rather than the overall timeout.
const STEP_TIMEOUT_MS = 10_000;

// A logger whose lines start with `name`.
function logger(name) {
  return (line) => process.stderr.write(`${name}: ${line}\n`);
}

// --target=HOST:PORT --proto_root=DIR [--network=NAME] [--timeout_seconds=N].
function parseFlags(script) {
  const { values } = parseArgs({
    options: {
      target: { type: 'string' },
      proto_root: { type: 'string' },
      network: { type: 'string', default: '' },
      timeout_seconds: { type: 'string', default: '60' },
    },
  });
  if (!values.target || !values.proto_root) {
    throw new Error(`usage: ${script} --target=HOST:PORT --proto_root=DIR [--network=NAME]`);
  }
  return { ...values, timeout_seconds: Number(values.timeout_seconds) };
}

// The installed packages must be the locked ones: a node_modules left from an older lockfile
// would test other versions than the ones the lockfile promises. Checked before any package is
// loaded, so that a missing one gets this message, not a stack trace.
function checkNodeModulesMatchLockfile() {
  const lock = JSON.parse(fs.readFileSync(path.join(__dirname, 'package-lock.json'), 'utf8'));
  const stale = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where === '') continue;
    let installed;
    try {
      installed = JSON.parse(fs.readFileSync(path.join(__dirname, where, 'package.json'), 'utf8'));
    } catch {
      stale.push(`${where} is missing`);
      continue;
    }
    if (installed.version !== entry.version) {
      stale.push(`${where} is ${installed.version}, locked ${entry.version}`);
    }
  }
  if (stale.length > 0) {
    throw new Error(`tests/interop/node_modules does not match package-lock.json ` +
                    `(${stale.slice(0, 3).join('; ')}); run \`bash tools/setup.sh\``);
  }
}

// Runs one named step, logging its outcome with `log`; a failure names the step it happened in.
async function step(log, name, body) {
  const started = Date.now();
  try {
    const result = await body();
    log(`ok   ${name} (${Date.now() - started} ms)`);
    return result;
  } catch (error) {
    error.message = `${name}: ${error.message}`;
    throw error;
  }
}

function deadline(ms = STEP_TIMEOUT_MS) {
  return new Date(Date.now() + ms);
}

// The slot of `chain` (a breaker.v1.ChainConfig) now.
function currentSlot(chain) {
  return Math.floor((Date.now() / 1000 - Number(chain.genesis_time_unix)) /
                    Number(chain.seconds_per_slot));
}

// Parses the flags, checks the packages, and runs `run(flags)` within the overall timeout;
// exits 0 when it passes, 1 when it fails, 2 for bad flags or packages. process.exit rather
// than a natural end: the reflection client keeps a channel open and offers no way to close it.
function runMain(script, log, passed, run) {
  const main = async () => {
    let flags;
    try {
      flags = parseFlags(script);
      checkNodeModulesMatchLockfile();
    } catch (error) {
      log(`FAIL ${error.message}`);
      return 2;
    }
    const watchdog = setTimeout(() => {
      log(`FAIL overall timeout of ${flags.timeout_seconds} s`);
      process.exit(1);
    }, flags.timeout_seconds * 1000);
    try {
      await run(flags);
      log(`PASS ${passed}`);
      return 0;
    } catch (error) {
      log(`FAIL ${error.message}`);
      return 1;
    } finally {
      clearTimeout(watchdog);
    }
  };
  main().then((code) => process.exit(code));
}

module.exports = { STEP_TIMEOUT_MS, logger, step, deadline, currentSlot, runMain };
