import { HeraldError } from './errors.js';

/**
 * The gateway nodes a client talks to: calls go to the current node and move on to the next one when
 * it does not answer (the nodes are stateless: any of them serves any request).
 */
export class Gateway {
  #endpoints;
  #current = 0;
  #token;
  #requestTimeoutMs;
  #WebSocket;

  constructor({ endpoints, token = null, requestTimeoutMs = 30_000, WebSocket = globalThis.WebSocket }) {
    if (!endpoints?.length) {
      throw new TypeError('at least one endpoint is needed');
    }
    this.#endpoints = endpoints.map((url) => (url.endsWith('/') ? url.slice(0, -1) : url));
    this.#token = token;
    this.#requestTimeoutMs = requestTimeoutMs;
    this.#WebSocket = WebSocket;
  }

  get endpoint() {
    return this.#endpoints[this.#current % this.#endpoints.length];
  }

  /** Moves on from `failed` to the next node, unless another call already did. */
  failed(failed) {
    if (this.endpoint === failed) {
      this.#current++;
    }
  }

  /**
   * Sends a request to the current node; resolves with {status, body, retryAfterMs} whatever the
   * status, rejects with an UNREACHABLE HeraldError when no answer came (and moves to the next node).
   */
  async call(method, path, body = undefined, timeoutMs = this.#requestTimeoutMs) {
    const node = this.endpoint;
    const headers = {};
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
    }
    if (this.#token) {
      headers.authorization = `Bearer ${this.#token}`;
    }
    let response;
    let text;
    try {
      response = await fetch(node + path, {
        method,
        headers,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (cause) {
      this.failed(node);
      throw HeraldError.unreachable(`${method} ${node}${path}`, cause);
    }
    if (response.status === 503) {
      // Redis away for this node, or the node is draining: the next call tries another one
      this.failed(node);
    }
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the status says what happened
    }
    const retryAfter = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
    return { status: response.status, ok: response.ok, body: json, retryAfterMs: Number.isNaN(retryAfter) ? 0 : retryAfter * 1000 };
  }

  /**
   * A WebSocket on the current node. Browsers cannot set headers on an upgrade, so the token goes as
   * `?access_token=` (over TLS in production: URLs end up in logs).
   */
  webSocket(path) {
    if (typeof this.#WebSocket !== 'function') {
      throw new TypeError('no WebSocket: on Node 20 run with --experimental-websocket, or pass the `WebSocket` option');
    }
    const url = new URL(this.endpoint.replace(/^http/, 'ws') + path);
    if (this.#token) {
      url.searchParams.set('access_token', this.#token);
    }
    return new this.#WebSocket(url.toString());
  }
}
