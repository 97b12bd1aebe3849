import { Backoff, sleep } from './backoff.js';
import { HeraldError } from './errors.js';

const STATUS_OF_REFUSAL = { MESSAGE_TOO_LARGE: 413, QUOTA_EXCEEDED: 507, CONSUMER_DISABLED: 409 };
const ENVELOPE_BYTES = 16;

/**
 * Publishes events in batches and resolves each event's promise once the gateway stored it (for every
 * matching consumer), or rejects it with a HeraldError saying why not.
 *
 * A topic's batches go out one after the other, so its events are stored in the order publish was
 * called; other topics' batches go out meanwhile. A batch is sent when full, when its linger time
 * has passed, or as soon as its topic is idle. A batch that failed for a transient reason (Redis or
 * the node away, OUTCOME_UNKNOWN, no answer) is sent again, to the next node, with the same
 * idempotencyKeys, so each event is stored once.
 */
export class Publisher {
  #gateway;
  #settings;
  #topics = new Map();
  #inFlight = 0;
  #waitingForRoom = [];
  #unfinished = new Set();
  #closed = false;

  constructor(gateway, settings = {}) {
    this.#gateway = gateway;
    this.#settings = {
      maxBatchEvents: 100,
      maxBatchBytes: 1 << 20,
      lingerMs: 5,
      maxInFlight: 1000,
      retryTimeoutMs: 120_000,
      initialBackoffMs: 100,
      maxBackoffMs: 5000,
      ...settings,
    };
    if (this.#settings.maxBatchEvents < 1 || this.#settings.maxBatchEvents > 1000) {
      throw new RangeError(`maxBatchEvents must be in 1..1000, not ${this.#settings.maxBatchEvents}`);
    }
  }

  /** Events published and not yet confirmed or refused. */
  get inFlight() {
    return this.#inFlight;
  }

  /** Resolves once fewer than maxInFlight events wait for their answer: await it to bound memory. */
  room() {
    if (this.#inFlight < this.#settings.maxInFlight) {
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waitingForRoom.push(resolve));
  }

  /**
   * Publishes `event` ({payload, key?, headers?, ttlMs?, deliverAt?, delayMs?, correlationId?,
   * idempotencyKey?}) on `topic`. Resolves with {eventId, matched, duplicate, correlationId}.
   */
  publish(topic, event) {
    if (this.#closed) {
      return Promise.reject(new Error('the publisher is closed'));
    }
    if (event === null || typeof event !== 'object' || !('payload' in event)) {
      return Promise.reject(new TypeError('an event is an object with a payload: {payload: ...}'));
    }
    const json = JSON.stringify({ ...event, idempotencyKey: event.idempotencyKey ?? globalThis.crypto.randomUUID() });
    let resolve;
    let reject;
    const result = new Promise((yes, no) => {
      resolve = yes;
      reject = no;
    });
    const pending = { json, resolve, reject };
    this.#inFlight++;
    const done = () => {
      this.#inFlight--;
      this.#unfinished.delete(result);
      while (this.#waitingForRoom.length && this.#inFlight < this.#settings.maxInFlight) {
        this.#waitingForRoom.shift()();
      }
    };
    result.then(done, done);
    this.#unfinished.add(result);

    let state = this.#topics.get(topic);
    if (!state) {
      state = { name: topic, full: [], filling: null, linger: null, sending: false };
      this.#topics.set(topic, state);
    }
    if (state.filling && !this.#fits(state.filling, json)) {
      this.#closeBatch(state);
    }
    if (!state.filling) {
      state.filling = { events: [], bytes: ENVELOPE_BYTES };
      const lingering = state.filling;
      state.linger = setTimeout(() => {
        if (state.filling === lingering) {
          this.#closeBatch(state);
          this.#sendNext(state);
        }
      }, this.#settings.lingerMs);
    }
    state.filling.events.push(pending);
    state.filling.bytes += json.length + 1;
    if (state.filling.events.length >= this.#settings.maxBatchEvents) {
      this.#closeBatch(state);
      this.#sendNext(state);
    }
    return result;
  }

  /** Sends every batch now; resolves when every event published so far has its answer. */
  async flush() {
    for (const state of this.#topics.values()) {
      this.#closeBatch(state);
      this.#sendNext(state);
    }
    await Promise.allSettled([...this.#unfinished]);
  }

  /** Refuses new events, sends what is left and waits for every answer (retries included). */
  async close() {
    this.#closed = true;
    await this.flush();
  }

  #fits(batch, json) {
    return batch.events.length < this.#settings.maxBatchEvents && batch.bytes + json.length + 1 <= this.#settings.maxBatchBytes;
  }

  #closeBatch(state) {
    if (state.filling) {
      clearTimeout(state.linger);
      state.full.push(state.filling);
      state.filling = null;
    }
  }

  #sendNext(state) {
    if (state.sending) {
      return;
    }
    if (!state.full.length) {
      this.#closeBatch(state);
    }
    const batch = state.full.shift();
    if (!batch) {
      return;
    }
    state.sending = true;
    this.#send(state.name, batch).finally(() => {
      state.sending = false;
      this.#sendNext(state);
    });
  }

  async #send(topic, batch) {
    const body = `{"events":[${batch.events.map((e) => e.json).join(',')}]}`;
    const backoff = new Backoff(this.#settings.initialBackoffMs, this.#settings.maxBackoffMs);
    const until = Date.now() + this.#settings.retryTimeoutMs;
    for (;;) {
      let problem;
      try {
        const answer = await this.#gateway.call('POST', `/v1/topics/${topic}/events`, body);
        if (answer.ok) {
          settle(batch, answer.body?.results ?? []);
          return;
        }
        problem = HeraldError.fromAnswer(answer.status, answer.body);
      } catch (error) {
        problem = error instanceof HeraldError ? error : HeraldError.unreachable('publish', error);
      }
      const waitMs = backoff.nextMs();
      if (!problem.transient || Date.now() + waitMs >= until) {
        batch.events.forEach((pending) => pending.reject(problem));
        return;
      }
      // the same body, the same idempotencyKeys: whatever the last try stored is stored once
      await sleep(waitMs);
    }
  }
}

function settle(batch, results) {
  for (const result of results) {
    const pending = batch.events[result.index];
    if (!pending) {
      continue;
    }
    if (result.status === 'CONFIRMED') {
      pending.resolve({
        eventId: result.eventId,
        matched: result.matched,
        duplicate: result.duplicate === true,
        correlationId: result.correlationId ?? null,
      });
    } else {
      pending.reject(new HeraldError(STATUS_OF_REFUSAL[result.code] ?? 400, result.code, result.message, result.details ?? null));
    }
  }
  // an answer without a row for an event (never expected) must not leave its caller waiting
  const missing = new HeraldError(500, 'NO_RESULT', "the gateway's answer had no result for this event");
  batch.events.forEach((pending) => pending.reject(missing));
}
