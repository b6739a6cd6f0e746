'use strict';
// A relay that never bids: it answers every getHeader with 204 No Content (so the beacon node
// builds its own block), accepts validator registrations and status checks, and records every
// request it is sent, in order, for the test to inspect.

const fs = require('node:fs');
const http = require('node:http');

const kHeaderPath = /^\/eth\/v1\/builder\/header\/(\d+)\/(0x[0-9a-fA-F]{64})\/(0x[0-9a-fA-F]{96})$/;
// Validator registrations of eight validators are under 4 KiB; anything far larger is refused.
const kMaxBodyBytes = 1024 * 1024;

class FakeRelay {
  // Every request is appended to logPath as it arrives: method, path, body size, status.
  constructor(logPath) {
    this.requests = [];
    this.log = fs.openSync(logPath, 'a');
    this.server = http.createServer((request, response) => this.handle(request, response));
  }

  // Resolves with the port once the relay listens on 127.0.0.1.
  listen() {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve(this.server.address().port));
    });
  }

  close() {
    this.server.closeAllConnections();
    this.server.close();
    fs.closeSync(this.log);
  }

  // The getHeader requests seen, each {time (ms), slot, parentHash, pubkey}.
  headers() {
    return this.requests
      .filter((r) => r.header !== null)
      .map((r) => ({ time: r.time, ...r.header }));
  }

  handle(request, response) {
    let size = 0;
    request.on('data', (chunk) => {
      size += chunk.length;
      if (size > kMaxBodyBytes) request.destroy();
    });
    request.on('end', () => {
      const match = kHeaderPath.exec(request.url);
      let status = 404;
      if (match !== null && request.method === 'GET') {
        status = 204;
      } else if (request.url === '/eth/v1/builder/status' && request.method === 'GET') {
        status = 200;
      } else if (request.url === '/eth/v1/builder/validators' && request.method === 'POST') {
        status = 200;
      }
      const record = {
        time: Date.now(),
        method: request.method,
        path: request.url,
        bytes: size,
        status,
        header:
          match === null
            ? null
            : { slot: Number(match[1]), parentHash: match[2], pubkey: match[3] },
      };
      this.requests.push(record);
      const at = new Date(record.time).toISOString();
      fs.writeSync(this.log, `${at} ${record.method} ${record.path} ${size}B -> ${status}\n`);
      response.writeHead(status);
      response.end();
    });
  }
}

module.exports = { FakeRelay };
