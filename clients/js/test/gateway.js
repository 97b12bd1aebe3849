// A real gateway node for the tests: the server's jar (built at the repository's root), with its
// embedded Redis and an API key, in a process of its own.
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, connect } from 'node:net';
import { join, resolve } from 'node:path';

const JAR = resolve(process.env.HERALD_JAR ?? new URL('../../../target/herald.jar', import.meta.url).pathname);

/** Starts a node; `http` settings go beside the test's own (e.g. allowedOrigins). */
export async function startGateway(http = {}) {
  if (!existsSync(JAR)) {
    throw new Error(`${JAR} is missing: run \`mvn -q package -DskipTests\` at the repository's root first`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'herald-js-test-'));
  const token = `hk_${randomBytes(24).toString('base64url')}`;
  const config = join(dir, 'herald.json');
  writeFileSync(config, JSON.stringify({
    http: { port: 0, drainMs: 0, ...http },
    redis: { embedded: { port: 0, dataDir: dir } },
    auth: { keys: { tests: { sha256: createHash('sha256').update(token).digest('hex'), publish: ['>'], consume: ['*'], admin: true } } },
  }));
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HERALD_') && !name.endsWith('JAVA_OPTIONS')));
  const node = spawn('java', ['-jar', JAR, '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`the node did not start: ${output}`)), 60_000);
    const read = (chunk) => {
      output += chunk;
      const listening = /Herald listens on http:\/\/[0-9.]+:([0-9]+)/.exec(output);
      if (listening) {
        clearTimeout(timer);
        resolveUrl(`http://127.0.0.1:${listening[1]}`);
      }
    };
    node.stdout.on('data', read);
    node.stderr.on('data', read);
    node.on('exit', () => reject(new Error(`the node ended: ${output}`)));
  });

  const admin = async (method, path, body) => {
    const response = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: await response.json().catch(() => null) };
  };

  return {
    url,
    token,
    admin,
    /** A new consumer of `topic` with these settings. */
    async consumer(topic, settings = {}) {
      const name = `c-${randomUUID().slice(0, 8)}`;
      const created = await admin('PUT', `/v1/admin/consumers/${name}`, { topics: [topic], ...settings });
      if (created.status !== 201) {
        throw new Error(`consumer not created: ${JSON.stringify(created.body)}`);
      }
      return name;
    },
    metadata: async (consumer) => (await admin('GET', `/v1/consumers/${consumer}/metadata`)).body,
    history: async (consumer, eventId) => (await admin('GET', `/v1/consumers/${consumer}/events/${eventId}`)).body,
    stop() {
      return new Promise((done) => {
        node.once('exit', done);
        node.kill('SIGTERM');
      });
    },
  };
}

export const topic = (prefix) => `${prefix}/${randomUUID().slice(0, 8)}`;

/** Resolves once `condition()` holds, checking every 50 ms; rejects after `timeoutMs`. */
export async function until(condition, timeoutMs = 30_000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} not met within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A TCP proxy to `url` that holds what clients send for `delayMs` before passing it on (what the node
 * sends comes back at once): a client's frames reach the node late. `pause()` holds what clients send
 * until `cut()`, which drops every connection with what it still holds and passes on again; `held`
 * counts the chunks of data held now.
 */
export async function slowProxy(url, delayMs) {
  const target = new URL(url);
  const connections = new Set();
  let paused = false;
  const proxy = {
    held: 0,
    url: null,
    pause() {
      paused = true;
    },
    cut() {
      for (const connection of connections) {
        connection.drop();
      }
      paused = false;
    },
    close() {
      proxy.cut();
      return new Promise((done) => server.close(done));
    },
  };
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const queue = [];
    const connection = {
      drop() {
        connections.delete(connection);
        proxy.held -= queue.filter((item) => item.data).length;
        queue.length = 0;
        client.destroy();
        upstream.destroy();
      },
    };
    connections.add(connection);
    // passes on the oldest held chunk (or the client's end, or its close) once its time came
    const passOn = () => {
      if (paused || !queue.length || queue[0].at > Date.now()) {
        if (queue.length && !paused) {
          setTimeout(passOn, queue[0].at - Date.now());
        }
        return;
      }
      const { pass, data } = queue.shift();
      if (data) {
        proxy.held--;
      }
      pass();
      passOn();
    };
    const later = (pass, data = false) => {
      queue.push({ at: Date.now() + delayMs, pass, data });
      if (data) {
        proxy.held++;
      }
      if (queue.length === 1) {
        setTimeout(passOn, delayMs);
      }
    };
    client.on('data', (chunk) => later(() => upstream.write(chunk), true));
    client.on('end', () => later(() => upstream.end()));
    client.on('close', () => later(() => connection.drop()));
    client.on('error', () => {});
    upstream.pipe(client);
    upstream.on('error', () => connection.drop());
  });
  await new Promise((resolveListening) => server.listen(0, '127.0.0.1', resolveListening));
  proxy.url = `http://127.0.0.1:${server.address().port}`;
  return proxy;
}
