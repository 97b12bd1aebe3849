import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HeraldClient, HeraldError } from '../src/index.js';
import { slowProxy, startGateway, topic, until } from './gateway.js';

let gateway;
let herald;

before(async () => {
  gateway = await startGateway();
  herald = new HeraldClient({ endpoints: [gateway.url], token: gateway.token });
});

after(() => gateway.stop());

const fast = { initialBackoffMs: 50, maxBackoffMs: 500 };

/** A proxy to the node (closed after the test) and a client that goes through it. */
async function throughProxy(t, delayMs) {
  const proxy = await slowProxy(gateway.url, delayMs);
  t.after(() => proxy.close());
  return { proxy, client: new HeraldClient({ endpoints: [proxy.url], token: gateway.token }) };
}

async function publish(name, count) {
  const publisher = herald.publisher();
  const results = Array.from({ length: count }, (_, n) => publisher.publish(name, { payload: { n } }));
  await publisher.close();
  return (await Promise.all(results)).map((r) => r.eventId);
}

for (const transport of ['push', 'poll']) {
  describe(`${transport} subscriber`, () => {
    test('every event reaches the handler and is acked when it resolves (push: the token as ?access_token=; window capped at maxUnacked)', async () => {
      const name = topic('handled');
      const consumer = await gateway.consumer(name, { maxUnacked: 10 });
      const seen = [];
      const subscriber = herald.subscriber(consumer, async (delivery) => {
        seen.push(delivery.eventId);
      }, { ...fast, transport, window: 20 }).start();
      const published = await publish(name, 100);
      await until(async () => (await gateway.metadata(consumer)).totals.acked === 100);
      await subscriber.close();
      assert.deepEqual(new Set(seen), new Set(published));
      assert.equal(seen.length, 100);
      assert.equal((await gateway.metadata(consumer)).unacked, 0);
      assert.equal(subscriber.stats.acked, 100);
    });

    test('a handler that throws: nacked with its message as the reason, and it comes again', async () => {
      const name = topic('nacked');
      const consumer = await gateway.consumer(name, { redelivery: { initialDelayMs: 0 } });
      const counts = [];
      const subscriber = herald.subscriber(consumer, async (delivery) => {
        counts.push(delivery.deliveryCount);
        if (delivery.deliveryCount === 1) {
          throw new Error('first time fails');
        }
      }, { ...fast, transport }).start();
      const [eventId] = await publish(name, 1);
      await until(async () => (await gateway.metadata(consumer)).totals.acked === 1);
      await subscriber.close();
      assert.deepEqual(counts, [1, 2]);
      assert.match(JSON.stringify(await gateway.history(consumer, eventId)), /first time fails/);
    });

    test('a handler slower than the ack timeout is extended while it runs, not redelivered', async () => {
      const name = topic('slow');
      const consumer = await gateway.consumer(name, { ackTimeoutMs: 5000, redelivery: { initialDelayMs: 0 } });
      let release;
      const released = new Promise((r) => {
        release = r;
      });
      let calls = 0;
      const subscriber = herald.subscriber(consumer, async () => {
        calls++;
        await released;
      }, { ...fast, transport }).start();
      const [eventId] = await publish(name, 1);
      // released once its deadline was pushed back three times: 2.5 ack timeouts past its hand-out
      await until(async () => {
        const delivery = (await gateway.history(consumer, eventId)).deliveries[0];
        return delivery?.ackDeadline >= delivery?.handedOutAt + 12_500;
      });
      release();
      await until(async () => (await gateway.metadata(consumer)).totals.acked === 1);
      await subscriber.close();
      assert.equal(calls, 1);
      assert.equal((await gateway.history(consumer, eventId)).deliveries.length, 1);
      assert.ok(subscriber.stats.extensions >= 2);
    });

    test('a blocked consumer (429): the subscriber waits out the block, then takes its events', async () => {
      const name = topic('blocked');
      const consumer = await gateway.consumer(name, { rateLimit: { tps: 1, blockMs: 2000, graceMs: 0 } });
      while ((await gateway.admin('POST', `/v1/consumers/${consumer}/poll`, {})).status !== 429) {
        // a consumer allowed one poll a second is blocked by the second
      }
      const handled = new Set();
      const subscriber = herald.subscriber(consumer, (delivery) => {
        handled.add(delivery.eventId);
      }, { ...fast, transport }).start();
      const published = await publish(name, 3);
      await until(() => published.every((id) => handled.has(id)));
      await subscriber.close();
      assert.ok(subscriber.stats.throttled >= 1);
    });

    test('an unknown consumer: the subscriber stops, saying why', async () => {
      const subscriber = herald.subscriber('no-such-consumer', () => {}, { ...fast, transport }).start();
      await assert.rejects(subscriber.stopped, (error) => error instanceof HeraldError && error.code === 'NOT_FOUND');
    });

    test('close nacks what waited for a handler, so it comes again at once', async () => {
      const name = topic('close');
      const consumer = await gateway.consumer(name, { ackTimeoutMs: 600_000 });
      let release;
      const released = new Promise((r) => {
        release = r;
      });
      const subscriber = herald.subscriber(consumer, () => released, { ...fast, transport, parallelism: 1, window: 5 }).start();
      await publish(name, 5);
      await until(() => subscriber.stats.received === 5);
      const closing = subscriber.close();
      assert.equal(subscriber.stats.nacked, 4);
      release();
      await closing;
      assert.equal(subscriber.stats.acked, 1);
      const again = [];
      const next = herald.subscriber(consumer, (delivery) => {
        again.push(delivery.deliveryCount);
      }, { ...fast, transport }).start();
      // long before their 10 min deadline
      await until(() => again.length === 4, 10_000);
      await next.close();
      assert.deepEqual(again, [2, 2, 2, 2]);
    });

    test('close resolves once the gateway has stored the acks, though the node hears them late', async (t) => {
      const name = topic('close-acks');
      const consumer = await gateway.consumer(name);
      const { client } = await throughProxy(t, 300);
      const subscriber = client.subscriber(consumer, () => {}, { ...fast, transport }).start();
      t.after(() => subscriber.close());
      await publish(name, 3);
      await until(() => subscriber.stats.acked === 3);
      await subscriber.close();
      const metadata = await gateway.metadata(consumer);
      assert.equal(metadata.totals.acked, 3);
      assert.equal(metadata.unacked, 0);
    });
  });
}

test('push: acks on their way when the socket goes are sent again on the next one, not left to their deadline', async (t) => {
  const name = topic('lost-acks');
  const consumer = await gateway.consumer(name, { ackTimeoutMs: 60_000 });
  const { proxy, client } = await throughProxy(t, 0);
  const handled = [];
  const subscriber = client.subscriber(consumer, (delivery) => {
    // from now on the proxy holds what the subscriber sends: its acks
    proxy.pause();
    handled.push(delivery.eventId);
  }, { ...fast, transport: 'push' }).start();
  t.after(() => subscriber.close());
  await until(() => subscriber.stats.connections === 1);
  await publish(name, 3);
  await until(() => subscriber.stats.acked === 3 && proxy.held > 0);
  proxy.cut();
  await until(async () => (await gateway.metadata(consumer)).totals.acked === 3, 20_000, 'acked on the next socket');
  await until(() => subscriber.stats.connections === 2);
  assert.equal(handled.length, 3);
});

test('push: close, with the socket gone before its acks were answered, sends them over HTTP', async (t) => {
  const name = topic('close-lost');
  const consumer = await gateway.consumer(name, { ackTimeoutMs: 60_000 });
  const { proxy, client } = await throughProxy(t, 0);
  const subscriber = client
    .subscriber(consumer, () => proxy.pause(), { ...fast, transport: 'push', initialBackoffMs: 10_000, maxBackoffMs: 10_000 })
    .start();
  t.after(() => subscriber.close());
  await until(() => subscriber.stats.connections === 1);
  await publish(name, 3);
  await until(() => subscriber.stats.acked === 3 && proxy.held > 0);
  proxy.cut();
  // no new socket comes within the close (the reconnect waits 10 s)
  await subscriber.close();
  const metadata = await gateway.metadata(consumer);
  assert.equal(metadata.totals.acked, 3);
  assert.equal(subscriber.stats.connections, 1);
});

test('push: what a handler finishes while the consumer is blocked (its socket gone) is acked over HTTP at once, not after the block', async (t) => {
  const name = topic('blocked-ack');
  const consumer = await gateway.consumer(name, { rateLimit: { tps: 1, blockMs: 60_000, graceMs: 0 } });
  let release;
  const released = new Promise((resolve) => {
    release = resolve;
  });
  let running = false;
  const subscriber = herald.subscriber(consumer, async () => {
    running = true;
    await released;
  }, { ...fast, transport: 'push' }).start();
  t.after(() => {
    release();
    return subscriber.close();
  });
  await until(() => subscriber.stats.connections === 1);
  await publish(name, 1);
  await until(() => running);
  while ((await gateway.admin('POST', `/v1/consumers/${consumer}/poll`, {})).status !== 429) {
    // a consumer allowed one poll a second is blocked by the second
  }
  await until(() => subscriber.stats.throttled >= 1, 10_000);
  release();
  await until(async () => (await gateway.metadata(consumer)).totals.acked === 1, 10_000, 'acked within the block');
  assert.equal((await gateway.metadata(consumer)).throttle.blocked, true);
});

test('push: blocked while connected, the subscriber is told (429 notice), leaves, and comes back after the block', async () => {
  const name = topic('notice');
  const consumer = await gateway.consumer(name, { rateLimit: { tps: 1, blockMs: 2000, graceMs: 0 } });
  const handled = new Set();
  const subscriber = herald.subscriber(consumer, (delivery) => {
    handled.add(delivery.eventId);
  }, { ...fast, transport: 'push' }).start();
  await until(() => subscriber.stats.connections === 1);
  while ((await gateway.admin('POST', `/v1/consumers/${consumer}/poll`, {})).status !== 429) {
    // a consumer allowed one poll a second is blocked by the second
  }
  await until(() => subscriber.stats.throttled >= 1, 10_000);
  const published = await publish(name, 3);
  await until(() => published.every((id) => handled.has(id)));
  await subscriber.close();
  assert.ok(subscriber.stats.connections >= 2);
});
