import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HeraldClient, HeraldError } from '../src/index.js';
import { startGateway, topic } from './gateway.js';

let gateway;
let herald;

before(async () => {
  gateway = await startGateway();
  herald = new HeraldClient({ endpoints: [gateway.url], token: gateway.token });
});

after(() => gateway.stop());

test('events are batched, each promise resolves with its eventId, and a topic keeps publish order', async () => {
  const name = topic('publish');
  const consumer = await gateway.consumer(name, { maxPollRecords: 1000 });
  const publisher = herald.publisher({ maxBatchEvents: 100 });
  const results = [];
  for (let i = 0; i < 250; i++) {
    results.push(publisher.publish(name, { payload: { n: i }, key: `k-${i % 3}`, headers: { source: 'test' } }));
  }
  await publisher.close();
  const confirmed = await Promise.all(results);
  const eventIds = confirmed.map((r) => r.eventId);
  assert.equal(new Set(eventIds).size, 250);
  assert.deepEqual(eventIds, [...eventIds].sort(), 'eventIds sort in publish order');
  assert.ok(confirmed.every((r) => r.matched === 1 && !r.duplicate));
  assert.equal((await gateway.metadata(consumer)).backlog, 250);
});

test('a refused event rejects its own promise with the code; a refused request rejects all, without retries', async () => {
  const name = topic('refused');
  await gateway.consumer(name);
  assert.equal((await gateway.admin('PUT', `/v1/admin/topics/${name}`, { maxEventBytes: 1024 })).status, 200);
  const publisher = herald.publisher();
  const small = publisher.publish(name, { payload: 'small' });
  const large = publisher.publish(name, { payload: 'x'.repeat(2000) });
  assert.equal((await small).matched, 1);
  await assert.rejects(large, (error) => error instanceof HeraldError && error.code === 'MESSAGE_TOO_LARGE' && error.status === 413 && !error.transient);

  assert.equal((await gateway.admin('PUT', `/v1/admin/topics/${name}`, { enabled: false })).status, 200);
  await assert.rejects(publisher.publish(name, { payload: 1 }), (error) => error.code === 'TOPIC_DISABLED' && error.status === 409);
  await assert.rejects(publisher.publish(name, { noPayload: 1 }), TypeError);
});

test('a node that does not answer: the next endpoint gets the batch; a wrong token is refused, not retried', async () => {
  const name = topic('failover');
  const consumer = await gateway.consumer(name);
  const twoNodes = new HeraldClient({ endpoints: ['http://127.0.0.1:9', gateway.url], token: gateway.token });
  assert.equal((await twoNodes.publisher().publish(name, { payload: 'to the second node' })).matched, 1);
  assert.equal((await gateway.metadata(consumer)).backlog, 1);

  const stranger = new HeraldClient({ endpoints: [gateway.url], token: 'hk_wrong' });
  await assert.rejects(stranger.publisher().publish(name, { payload: 1 }), (error) => error.code === 'UNAUTHENTICATED' && error.status === 401);
});

test('the same idempotencyKey twice is one event; room() waits while maxInFlight events are unanswered', async () => {
  const name = topic('dedup');
  const consumer = await gateway.consumer(name);
  const publisher = herald.publisher({ maxInFlight: 2, lingerMs: 50 });
  const first = publisher.publish(name, { payload: 'once', idempotencyKey: 'order-42' });
  const again = publisher.publish(name, { payload: 'once', idempotencyKey: 'order-42' });
  assert.equal(publisher.inFlight, 2);
  let roomy = false;
  const room = publisher.room().then(() => {
    roomy = true;
  });
  assert.equal(roomy, false);
  const [a, b] = await Promise.all([first, again]);
  await room;
  assert.equal(a.eventId, b.eventId);
  assert.equal(b.duplicate, true);
  assert.equal((await gateway.metadata(consumer)).backlog, 1);
});
