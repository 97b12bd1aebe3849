// Compiled by `npm test` (tsc --noEmit): the declarations describe the library as it is used.
import { HeraldClient, HeraldError, type Delivery, type PublishResult } from 'herald-client';

const herald = new HeraldClient({ endpoints: ['http://localhost:8080'], token: 'hk_example' });
const publisher = herald.publisher({ maxBatchEvents: 100, lingerMs: 5 });

async function example(): Promise<void> {
  await publisher.room();
  const result: PublishResult = await publisher.publish('orders/eu/created', { payload: { total: 12.5 }, key: 'c-7' });
  console.log(result.eventId, result.duplicate);
  const subscriber = herald.subscriber<{ total: number }>('billing', async (delivery: Delivery<{ total: number }>) => {
    if (delivery.payload.total < 0) {
      delivery.reject('negative total');
    }
  }, { transport: 'poll', window: 50, beforeAck: async () => {} }).start();
  try {
    await subscriber.stopped;
  } catch (error) {
    if (error instanceof HeraldError && error.code === 'NOT_FOUND') {
      console.log(subscriber.stats.received);
    }
  }
  await subscriber.close();
  await publisher.close();
}

void example;
