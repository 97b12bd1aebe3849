/** Herald's client for browsers and Node 20+. */

export interface ClientOptions {
  /** Gateway nodes, e.g. ['http://localhost:8080']; the client moves to the next when one fails. */
  endpoints: string[];
  /** An API key or a JWT: `Authorization: Bearer` on HTTP, `?access_token=` on WebSockets. */
  token?: string | null;
  /** How long a call waits for its answer (default 30 s). */
  requestTimeoutMs?: number;
  /** A WebSocket class where there is no global one (Node 20 without --experimental-websocket). */
  WebSocket?: new (url: string) => WebSocket;
}

export interface OutgoingEvent<P = unknown> {
  payload: P;
  key?: string;
  headers?: Record<string, string>;
  ttlMs?: number;
  deliverAt?: number;
  delayMs?: number;
  correlationId?: string;
  /** Makes a publish safe to repeat; a random one is set when absent. */
  idempotencyKey?: string;
}

export interface PublishResult {
  eventId: string;
  matched: number;
  duplicate: boolean;
  correlationId: string | null;
}

export interface PublisherSettings {
  maxBatchEvents?: number;
  maxBatchBytes?: number;
  lingerMs?: number;
  maxInFlight?: number;
  retryTimeoutMs?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
}

export class HeraldError extends Error {
  constructor(status: number, code: string, message: string, details?: Record<string, unknown> | null, options?: ErrorOptions);
  /** The HTTP status (0 when the gateway was not reached). */
  readonly status: number;
  /** The protocol's stable code, e.g. QUOTA_EXCEEDED, or UNREACHABLE. */
  readonly code: string;
  readonly details: Record<string, unknown> | null;
  /** Whether the same request may succeed later (the library retries these). */
  readonly transient: boolean;
}

/** Made by HeraldClient.publisher(). */
export class Publisher {
  private constructor();
  readonly inFlight: number;
  /** Resolves once fewer than maxInFlight events wait for their answer. */
  room(): Promise<void>;
  publish<P>(topic: string, event: OutgoingEvent<P>): Promise<PublishResult>;
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Made by a subscriber for each hand-out. */
export class Delivery<P = unknown> {
  private constructor();
  readonly eventId: string;
  readonly topic: string;
  readonly key: string | null;
  readonly headers: Record<string, string>;
  readonly payload: P;
  readonly publishedAt: number;
  readonly deliveryCount: number;
  /** null for a consumer with ackMode auto. */
  readonly ackId: string | null;
  readonly settled: boolean;
  ack(): void;
  nack(reason?: string, delayMs?: number): void;
  reject(reason?: string): void;
}

export type EventHandler<P = unknown> = (delivery: Delivery<P>) => unknown | Promise<unknown>;

export interface SubscriberSettings {
  /** 'push' (a WebSocket, the default) or 'poll' (HTTP long polling). */
  transport?: 'push' | 'poll';
  /** Most deliveries unsettled at once (default 100). */
  window?: number;
  /** Handlers running at once (default 4). */
  parallelism?: number;
  /** The consumer's ack timeout (5000..3600000); read from its settings when absent. */
  ackTimeoutMs?: number | null;
  maxLeaseMs?: number;
  /** How long a long poll waits, 1000..20000 (default 20000). */
  pollWaitMs?: number;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** How long close() waits for running handlers and the answers to their settlements (default 30000). */
  closeTimeoutMs?: number;
  /** Runs after the handler and before the ack; a failure nacks instead. */
  beforeAck?: ((delivery: Delivery) => unknown | Promise<unknown>) | null;
}

export interface SubscriberStats {
  received: number;
  acked: number;
  nacked: number;
  extensions: number;
  connections: number;
  throttled: number;
}

/** Made by HeraldClient.subscriber(). */
export class Subscriber {
  private constructor();
  readonly stats: SubscriberStats;
  /** Rejects with a HeraldError when the gateway refused the subscriber for good; resolves after close. */
  readonly stopped: Promise<void>;
  start(): this;
  /**
   * Stops taking events: what waited for a handler is nacked, running handlers finish (up to
   * closeTimeoutMs), and it resolves once the gateway has answered every ack and nack sent (up to
   * closeTimeoutMs again).
   */
  close(): Promise<void>;
}

export class HeraldClient {
  constructor(options: ClientOptions);
  publisher(settings?: PublisherSettings): Publisher;
  subscriber<P = unknown>(consumer: string, handler: EventHandler<P>, settings?: SubscriberSettings): Subscriber;
}
