import { Backoff, sleep } from './backoff.js';
import { HeraldError } from './errors.js';

const ACK_LINGER_MS = 5;
const MAX_IDS_PER_CALL = 1000;
const SETTLEMENT_PATHS = { ack: '/acks', nack: '/nacks', extend: '/extend' };

/**
 * One hand-out of an event. A handler may settle it itself (ack, nack, reject); if it resolves
 * without doing so the subscriber acks it, and if it throws the subscriber nacks it. Only the first
 * settlement counts.
 */
export class Delivery {
  #subscriber;
  #settled = false;

  constructor(event, subscriber) {
    this.eventId = event.eventId;
    this.topic = event.topic;
    this.key = event.key ?? null;
    this.headers = event.headers ?? {};
    this.payload = event.payload;
    this.publishedAt = event.publishedAt;
    this.deliveryCount = event.deliveryCount ?? 1;
    this.ackId = event.ackId ?? null;
    this.#subscriber = subscriber;
  }

  get settled() {
    return this.#settled;
  }

  ack() {
    if (this.#settle()) {
      this.#subscriber.ack(this);
    }
  }

  /** Comes again after the consumer's backoff, or after `delayMs` (0..86400000). */
  nack(reason = undefined, delayMs = undefined) {
    if (delayMs !== undefined && !(delayMs >= 0 && delayMs <= 86_400_000)) {
      throw new RangeError(`a nack's delayMs is 0..86400000, not ${delayMs}`);
    }
    if (this.#settle()) {
      this.#subscriber.nack(this, 'REQUEUE', reason, delayMs);
    }
  }

  /** To the consumer's error queue. */
  reject(reason = undefined) {
    if (this.#settle()) {
      this.#subscriber.nack(this, 'REJECT', reason, undefined);
    }
  }

  #settle() {
    if (this.#settled) {
      return false;
    }
    this.#settled = true;
    return this.ackId !== null;
  }
}

/**
 * Takes a consumer's events and runs a handler on each, over a WebSocket in push mode (transport
 * 'push') or by HTTP long polling ('poll'): acks what the handler finished, nacks what it failed,
 * extends the deadline of what it still works on, reconnects (to the next node) after failures with
 * jittered backoff, and waits out a blocked consumer.
 */
export class Subscriber {
  #gateway;
  #consumer;
  #handler;
  #settings;
  #backoff;
  /** Between tries of acks that no node took (Redis away): apart from the reconnects' backoff. */
  #ackBackoff;
  #closing = false;
  #started = false;
  #stopped;
  #stop;
  #socket = null;
  #waiting = [];
  #running = new Set();
  #leases = new Map();
  #acks = [];
  #ackTimer = null;
  #ackRetryTimer = null;
  /** Settlements sent over a socket: requestId → { socket, answered(frame, or null if the socket went) }. */
  #unanswered = new Map();
  #lastRequestId = 0;
  /** Settlements sent and not answered yet, over either transport: close() waits for them. */
  #settling = new Set();
  #leaseTimer = null;
  #ackTimeoutMs = 30_000;
  #window = 1;
  #roomWaiters = [];
  stats = { received: 0, acked: 0, nacked: 0, extensions: 0, connections: 0, throttled: 0 };

  constructor(gateway, consumer, handler, settings = {}) {
    this.#gateway = gateway;
    this.#consumer = consumer;
    this.#handler = handler;
    this.#settings = {
      transport: 'push',
      window: 100,
      parallelism: 4,
      ackTimeoutMs: null,
      maxLeaseMs: 3_600_000,
      pollWaitMs: 20_000,
      initialBackoffMs: 200,
      maxBackoffMs: 30_000,
      closeTimeoutMs: 30_000,
      beforeAck: null,
      ...settings,
    };
    if (!['push', 'poll'].includes(this.#settings.transport)) {
      throw new RangeError(`transport is push or poll, not ${this.#settings.transport}`);
    }
    // shorter, empty polls would follow each other without a pause and use up the consumer's rate limit
    if (!(this.#settings.pollWaitMs >= 1000 && this.#settings.pollWaitMs <= 20_000)) {
      throw new RangeError('pollWaitMs must be in 1000..20000');
    }
    if (this.#settings.ackTimeoutMs !== null && !(this.#settings.ackTimeoutMs >= 5000 && this.#settings.ackTimeoutMs <= 3_600_000)) {
      throw new RangeError('ackTimeoutMs must be in 5000..3600000, as a consumer\'s');
    }
    this.#backoff = new Backoff(this.#settings.initialBackoffMs, this.#settings.maxBackoffMs);
    this.#ackBackoff = new Backoff(this.#settings.initialBackoffMs, this.#settings.maxBackoffMs);
    this.#stopped = new Promise((resolve, reject) => {
      this.#stop = { resolve, reject };
    });
    // stopped is for those who ask; a refusal nobody awaits is not an unhandled rejection
    this.#stopped.catch(() => {});
  }

  /** Rejects with the HeraldError when the gateway refused the subscriber for good; resolves after close. */
  get stopped() {
    return this.#stopped;
  }

  #path(tail) {
    return `/v1/consumers/${this.#consumer}${tail}`;
  }

  start() {
    if (this.#started) {
      throw new Error('already started');
    }
    this.#started = true;
    this.#begin().catch((error) => this.#fail(error));
    return this;
  }

  async #begin() {
    const config = await this.#consumerConfig();
    this.#ackTimeoutMs = this.#settings.ackTimeoutMs ?? config.ackTimeoutMs;
    // a window over the consumer's maxUnacked would be refused
    this.#window = Math.min(this.#settings.window, config.maxUnacked ?? this.#settings.window);
    if (this.#closing) {
      return;
    }
    const everyMs = Math.max(250, this.#ackTimeoutMs / 4);
    this.#leaseTimer = setInterval(() => this.#extendLeases(), everyMs);
    if (this.#settings.transport === 'push') {
      this.#connect();
    } else {
      this.#pollLoop().catch((error) => this.#fail(error));
    }
  }

  /** The consumer's settings (ack timeout, maxUnacked), read again while the gateway is away. */
  async #consumerConfig() {
    for (;;) {
      try {
        const answer = await this.#gateway.call('GET', this.#path('/metadata'));
        if (answer.ok) {
          return answer.body.config;
        }
        if (answer.status < 500) {
          throw HeraldError.fromAnswer(answer.status, answer.body);
        }
      } catch (error) {
        if (!(error instanceof HeraldError) || !error.transient) {
          throw error;
        }
      }
      await sleep(this.#backoff.nextMs());
    }
  }

  // --- push ---------------------------------------------------------------------------------------

  #connect() {
    if (this.#closing) {
      return;
    }
    const node = this.#gateway.endpoint;
    const socket = this.#gateway.webSocket(this.#path('/ws'));
    let opened = false;
    socket.onopen = () => {
      opened = true;
      if (this.#closing) {
        // opened after close() or a stop: nothing may come to a subscriber that no longer takes events
        socket.close(1000, 'subscriber closed');
        return;
      }
      this.#socket = socket;
      // acks first: pushed before them, their events would be handed out again (their deadlines passed)
      this.#flushAcks();
      socket.send(JSON.stringify({ op: 'subscribe', window: this.#window }));
    };
    socket.onmessage = (message) => this.#receive(JSON.parse(message.data));
    // a refused upgrade fires only 'error' on some implementations, a lost socket 'error' then 'close'
    let ended = false;
    socket.onerror = socket.onclose = () => {
      if (ended) {
        return;
      }
      ended = true;
      if (this.#socket === socket) {
        this.#socket = null;
      }
      if (opened) {
        // dropped, or left after a 429 or 503: what its settlements retry over HTTP goes to the next node
        this.#gateway.failed(node);
      }
      for (const [requestId, sent] of this.#unanswered) {
        if (sent.socket === socket) {
          this.#unanswered.delete(requestId);
          sent.answered(null);
        }
      }
      if (this.#closing) {
        return;
      }
      if (opened) {
        setTimeout(() => this.#connect(), this.#backoff.nextMs());
      } else {
        this.#gateway.failed(node);
        this.#refusedUpgrade().catch((error) => this.#fail(error));
      }
    };
  }

  /**
   * A WebSocket that never opened says nothing of why (browsers hide the HTTP answer): the consumer's
   * metadata tells a refusal for good (401, 403, 404) or a block to wait out.
   */
  async #refusedUpgrade() {
    let waitMs = this.#backoff.nextMs();
    try {
      const answer = await this.#gateway.call('GET', this.#path('/metadata'));
      if (!answer.ok && answer.status < 500) {
        throw HeraldError.fromAnswer(answer.status, answer.body);
      }
      const blockedUntil = answer.body?.throttle?.blockedUntil;
      if (answer.ok && answer.body.throttle?.blocked && blockedUntil) {
        this.stats.throttled++;
        waitMs = Math.max(waitMs, blockedUntil - Date.now());
      }
    } catch (error) {
      if (!(error instanceof HeraldError) || !error.transient) {
        throw error;
      }
    }
    setTimeout(() => this.#connect(), waitMs);
  }

  #receive(message) {
    const settlement = this.#unanswered.get(message.requestId);
    if (settlement) {
      this.#unanswered.delete(message.requestId);
      settlement.answered(message);
    }
    switch (message.type) {
      case 'batch':
        message.events.forEach((event) => this.#dispatch(event));
        break;
      case 'subscribed':
        this.stats.connections++;
        this.#backoff.reset();
        break;
      case 'error':
        if (message.status === 429) {
          // the gateway drops a blocked consumer's sockets after their grace, and its upgrades wait for
          // the block's end: leave now, and come back once the metadata says the block is over
          this.stats.throttled++;
          this.#socket?.close(4000, 'consumer blocked');
        } else if (message.status === 503) {
          // the subscribe (or a settlement) met Redis away: start again on a new connection
          this.#socket?.close(4000, 'store unavailable');
        } else if (!settlement) {
          // a refused settlement leaves its events to their deadlines; anything else is for good
          this.#fail(new HeraldError(message.status, message.code, message.message, message.details ?? null));
        }
        break;
      default:
      // ackResult, nackResult, extendResult: answered above; pong, unsubscribed: nothing to do
    }
  }

  /**
   * Sends a settlement with a requestId; resolves with its answer, or with null when the socket went
   * first. Null at once when no socket is open.
   */
  #settleOverSocket(frame) {
    const socket = this.#socket;
    if (!socket || socket.readyState !== 1) {
      return null;
    }
    const requestId = ++this.#lastRequestId;
    socket.send(JSON.stringify({ ...frame, requestId }));
    return new Promise((answered) => this.#unanswered.set(requestId, { socket, answered }));
  }

  /** Counts `settlement` among those close() waits for, until it is answered or fails. */
  #track(settlement) {
    const done = settlement.then(() => {}, () => {});
    this.#settling.add(done);
    done.then(() => this.#settling.delete(done));
    return settlement;
  }

  #sendFrame(frame) {
    const socket = this.#socket;
    if (!socket || socket.readyState !== 1) {
      return false;
    }
    socket.send(JSON.stringify(frame));
    return true;
  }

  // --- poll ---------------------------------------------------------------------------------------

  async #pollLoop() {
    let failing = true;
    while (!this.#closing) {
      const free = await this.#room();
      if (this.#closing) {
        return;
      }
      let answer;
      try {
        answer = await this.#gateway.call('POST', this.#path('/poll'),
          { maxEvents: Math.min(free, 1000), waitMs: this.#settings.pollWaitMs }, this.#settings.pollWaitMs + 10_000);
      } catch {
        failing = true;
        await sleep(this.#backoff.nextMs());
        continue;
      }
      if (answer.ok) {
        if (failing) {
          this.stats.connections++;
          failing = false;
        }
        this.#backoff.reset();
        answer.body.events.forEach((event) => this.#dispatch(event));
      } else if (answer.status === 429) {
        this.stats.throttled++;
        await sleep(Math.max(answer.retryAfterMs, this.#backoff.nextMs()));
      } else if (answer.status >= 500) {
        // 503 (the gateway moved on to the next node), or a proxy's 502/504: transient
        failing = true;
        await sleep(this.#backoff.nextMs());
      } else {
        throw HeraldError.fromAnswer(answer.status, answer.body);
      }
    }
  }

  /** Resolves with the window's room once some is free. */
  #room() {
    const free = this.#window - this.#leases.size;
    if (free > 0 || this.#closing) {
      return Promise.resolve(Math.max(1, free));
    }
    return new Promise((resolve) => this.#roomWaiters.push(() => resolve(Math.max(1, this.#window - this.#leases.size))));
  }

  /**
   * Sends a settlement (op ack, nack or extend) over the open socket, else over HTTP: any node takes
   * it, and a blocked consumer's settlements are never refused, so one made while the socket is away
   * (a reconnect, a 429 block) does not wait for the next. One whose socket went before its answer,
   * or that met a 5xx, goes again over HTTP. Resolves with whether the gateway took it; never rejects.
   */
  #settle(op, body) {
    const answer = this.#settings.transport === 'push' ? this.#settleOverSocket({ op, ...body }) : null;
    if (!answer) {
      return this.#settleOverHttp(op, body);
    }
    return this.#track(answer.then((frame) => (frame !== null && !(frame.type === 'error' && frame.status >= 500))
      || this.#settleOverHttp(op, body)));
  }

  /** Taken unless no node answered or the answer was a 5xx: a 4xx refusal leaves its events to their deadlines, as on a socket. */
  #settleOverHttp(op, body) {
    return this.#track(this.#gateway.call('POST', this.#path(SETTLEMENT_PATHS[op]), body)
      .then((answer) => answer.status < 500, () => false));
  }

  // --- handling and settlement --------------------------------------------------------------------

  #dispatch(event) {
    const delivery = new Delivery(event, this);
    this.stats.received++;
    if (this.#closing) {
      // it came after the subscriber stopped taking events: it comes again at once elsewhere
      delivery.nack('the subscriber closed', 0);
      return;
    }
    if (delivery.ackId) {
      const now = Date.now();
      this.#leases.set(delivery, { receivedAt: now, extendedAt: now });
    }
    this.#waiting.push(delivery);
    this.#runNext();
  }

  #runNext() {
    while (this.#running.size < this.#settings.parallelism && this.#waiting.length) {
      const delivery = this.#waiting.shift();
      const run = this.#handle(delivery).finally(() => {
        this.#running.delete(run);
        this.#runNext();
      });
      this.#running.add(run);
    }
  }

  async #handle(delivery) {
    try {
      await this.#handler(delivery);
      if (!delivery.settled && this.#settings.beforeAck) {
        await this.#settings.beforeAck(delivery);
      }
      delivery.ack();
    } catch (error) {
      delivery.nack(String(error?.message ?? error).slice(0, 256));
    }
  }

  /** @internal called by Delivery */
  ack(delivery) {
    this.stats.acked++;
    this.#release(delivery);
    this.#acks.push(delivery.ackId);
    this.#ackTimer ??= setTimeout(() => this.#flushAcks(), ACK_LINGER_MS);
  }

  /** @internal called by Delivery */
  nack(delivery, action, reason, delayMs) {
    this.stats.nacked++;
    this.#release(delivery);
    const body = { ackIds: [delivery.ackId], action };
    if (reason !== undefined) {
      // the gateway keeps at most 1024 bytes of a reason
      body.reason = String(reason).slice(0, 256);
    }
    if (delayMs !== undefined) {
      body.delayMs = delayMs;
    }
    // a nack that is lost leaves the event to come again after its deadline
    this.#settle('nack', body);
  }

  #release(delivery) {
    if (this.#leases.delete(delivery)) {
      this.#roomWaiters.splice(0).forEach((wake) => wake());
    }
  }

  /**
   * Sends the acks gathered (an ackId is valid on any connection and any node). Those no node took
   * (Redis away) are tried again after a backoff, until close.
   */
  #flushAcks() {
    clearTimeout(this.#ackTimer);
    clearTimeout(this.#ackRetryTimer);
    this.#ackTimer = this.#ackRetryTimer = null;
    while (this.#acks.length) {
      const ackIds = this.#acks.splice(0, MAX_IDS_PER_CALL);
      this.#settle('ack', { ackIds }).then((taken) => {
        if (taken) {
          this.#ackBackoff.reset();
          return;
        }
        // back in the queue even while closing: close() flushes once its handlers are done
        this.#acks.push(...ackIds);
        if (!this.#closing) {
          this.#ackRetryTimer ??= setTimeout(() => this.#flushAcks(), this.#ackBackoff.nextMs());
        }
      });
    }
  }

  /** Pushes back the deadline of every unsettled delivery last extended half an ack timeout ago. */
  #extendLeases() {
    const now = Date.now();
    const due = [];
    for (const [delivery, lease] of this.#leases) {
      if (now - lease.extendedAt >= this.#ackTimeoutMs / 2 && now - lease.receivedAt < this.#settings.maxLeaseMs) {
        lease.extendedAt = now;
        due.push(delivery.ackId);
      }
    }
    for (let from = 0; from < due.length; from += MAX_IDS_PER_CALL) {
      const body = { ackIds: due.slice(from, from + MAX_IDS_PER_CALL), extendMs: this.#ackTimeoutMs };
      this.stats.extensions += body.ackIds.length;
      this.#settle('extend', body);
    }
  }

  /** Stops for good after a refusal (stopped rejects with it), settling what it holds as close() does. */
  #fail(error) {
    if (this.#closing) {
      return;
    }
    this.#stop.reject(error instanceof HeraldError ? error : HeraldError.unreachable(this.#consumer, error));
    this.close();
  }

  /**
   * Stops taking events; nacks what was received and not started (it comes again at once), lets the
   * running handlers finish (up to closeTimeoutMs), sends their acks and waits for the gateway to
   * answer every settlement (up to closeTimeoutMs again), then disconnects. Resolved, what it acked
   * is stored.
   */
  async close() {
    if (this.#closing) {
      return;
    }
    this.#closing = true;
    this.#sendFrame({ op: 'unsubscribe' });
    this.#roomWaiters.splice(0).forEach((wake) => wake());
    this.#waiting.splice(0).forEach((delivery) => delivery.nack('the subscriber closed', 0));
    await this.#within(this.#settings.closeTimeoutMs, Promise.allSettled([...this.#running]));
    this.#flushAcks();
    await this.#within(this.#settings.closeTimeoutMs, Promise.all([...this.#settling]));
    this.#shutDown();
    this.#stop.resolve();
  }

  /** Resolves when `promise` settles, or after `ms`. */
  async #within(ms, promise) {
    let timer;
    await Promise.race([promise, new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    })]);
    clearTimeout(timer);
  }

  #shutDown() {
    clearInterval(this.#leaseTimer);
    this.#socket?.close(1000, 'subscriber closed');
    this.#socket = null;
  }
}
