// The library in a real browser (Debian's Chromium, driven by playwright-core): a page of another
// origin, allowed by the gateway's http.allowedOrigins, publishes with fetch and takes the events
// over a WebSocket that carries the token as ?access_token=.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { startGateway, topic } from './gateway.js';

const LIBRARY = new URL('../src/', import.meta.url);

const PAGE = `<!doctype html><meta charset="utf-8"><title>herald-client in a browser</title>
<script type="module">
  import { HeraldClient } from '/src/index.js';
  const query = new URLSearchParams(location.search);
  const herald = new HeraldClient({ endpoints: [query.get('gateway')], token: query.get('token') });
  const handled = [];
  const subscriber = herald.subscriber(query.get('consumer'), (delivery) => {
    handled.push(delivery.payload);
  }, { transport: 'push', initialBackoffMs: 50, maxBackoffMs: 500 }).start();
  const publisher = herald.publisher();
  const confirmed = await Promise.all([1, 2, 3].map((n) => publisher.publish(query.get('topic'), { payload: { n } })));
  while (handled.length < 3) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await subscriber.close();
  window.result = { confirmed: confirmed.map((r) => r.matched), handled, stats: subscriber.stats };
</script>`;

let site;
let origin;
let gateway;
let browser;

before(async () => {
  site = createServer(async (request, response) => {
    const path = new URL(request.url, 'http://page').pathname;
    if (path.startsWith('/src/') && /^[a-z]+\.js$/.test(path.slice(5))) {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(await readFile(new URL(path.slice(5), LIBRARY)));
    } else if (path === '/') {
      response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    } else if (path === '/favicon.ico') {
      response.writeHead(204).end();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => site.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${site.address().port}`;
  gateway = await startGateway({ allowedOrigins: [origin] });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  site?.close();
});

test('a page of another origin publishes (fetch, CORS) and subscribes (WebSocket, ?access_token=) with the library', async () => {
  const name = topic('browser');
  const consumer = await gateway.consumer(name);
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  const query = new URLSearchParams({ gateway: gateway.url, token: gateway.token, consumer, topic: name });
  await page.goto(`${origin}/?${query}`);
  const result = await (await page.waitForFunction(() => window.result, null, { timeout: 30_000 })).jsonValue();
  assert.deepEqual(errors, []);
  assert.deepEqual(result.confirmed, [1, 1, 1]);
  assert.deepEqual(result.handled.map((p) => p.n).sort(), [1, 2, 3]);
  assert.equal(result.stats.acked, 3);
  const metadata = await gateway.metadata(consumer);
  assert.equal(metadata.totals.acked, 3);
  assert.equal(metadata.unacked, 0);
});
