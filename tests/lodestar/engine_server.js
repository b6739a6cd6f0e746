'use strict';
// A loopback Engine API (JSON-RPC over HTTP, no JWT) for the beacon node of the Lodestar test:
// every call is answered by the mock execution backend that ships inside Lodestar's own
// package, so that the node builds and imports real Capella blocks with empty payloads.
//
//   node engine_server.js --node_modules=DIR --genesis_block_hash=0x.. [--port=0]
//
// Prints "engine listening on port N" on stdout once it serves. Lodestar's own
// `--execution.engineMock` is not used: on a chain that starts after the merge it never leaves
// "execution layer syncing"; the same backend behind a real HTTP server does.
//
// The test makes the node miss slots on purpose: after `POST /withhold_payloads` every
// engine_getPayload call fails, so the node has no block to propose, until
// `POST /serve_payloads`. Every other call is answered as always, so the node stays synced.

const http = require('node:http');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

// A JSON-RPC request is a few kilobytes; newPayload with an empty payload stays well under this.
const kMaxBodyBytes = 4 * 1024 * 1024;
// The test's controls: each path, and whether getPayload fails after it.
const kControls = { '/withhold_payloads': true, '/serve_payloads': false };
const kGetPayload = /^engine_getPayloadV\d+$/;

let withholdPayloads = false;

function flag(name, fallback) {
  const prefix = `--${name}=`;
  const arg = process.argv.find((a) => a.startsWith(prefix));
  if (arg !== undefined) return arg.slice(prefix.length);
  if (fallback !== undefined) return fallback;
  console.error(`engine_server: --${name} is required`);
  process.exit(2);
}

function rpcError(id, code, message) {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

async function answer(backend, call) {
  if (call === null || typeof call !== 'object' || typeof call.method !== 'string') {
    return rpcError(null, -32600, 'not a JSON-RPC request');
  }
  if (withholdPayloads && kGetPayload.test(call.method)) {
    // The Engine API's "Unknown payload".
    return rpcError(call.id, -38001, 'payloads withheld by the test');
  }
  const handler = backend.handlers[call.method];
  if (handler === undefined) return rpcError(call.id, -32601, `method ${call.method} not found`);
  try {
    const result = await handler(...(Array.isArray(call.params) ? call.params : []));
    return { jsonrpc: '2.0', id: call.id, result: result === undefined ? null : result };
  } catch (e) {
    return rpcError(call.id, -32000, String(e && e.message ? e.message : e));
  }
}

async function main() {
  const nodeModules = flag('node_modules');
  const genesisBlockHash = flag('genesis_block_hash');
  const port = Number(flag('port', '0'));
  // The package's exports map does not list this file, so it is imported by path.
  const mockPath = path.join(nodeModules, '@lodestar/beacon-node/lib/execution/engine/mock.js');
  const { ExecutionEngineMockBackend } = await import(pathToFileURL(mockPath).href);
  const backend = new ExecutionEngineMockBackend({ genesisBlockHash, capellaForkTimestamp: 0 });

  const server = http.createServer((request, response) => {
    const chunks = [];
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > kMaxBodyBytes) {
        response.writeHead(413).end();
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', async () => {
      if (size > kMaxBodyBytes) return;
      if (request.method === 'POST' && Object.hasOwn(kControls, request.url)) {
        withholdPayloads = kControls[request.url];
        console.log(`${request.url}: getPayload ${withholdPayloads ? 'fails' : 'served'}`);
        response.writeHead(204).end();
        return;
      }
      let body;
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        // A batch is answered call by call, in order.
        body = Array.isArray(parsed)
          ? await Promise.all(parsed.map((call) => answer(backend, call)))
          : await answer(backend, parsed);
      } catch (e) {
        body = rpcError(null, -32700, `parse error: ${e.message}`);
      }
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(body));
    });
  });
  server.listen(port, '127.0.0.1', () => {
    console.log(`engine listening on port ${server.address().port}`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

main().catch((e) => {
  console.error(`engine_server: ${e.stack || e}`);
  process.exit(1);
});
