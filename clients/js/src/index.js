import { Gateway } from './gateway.js';
import { Publisher } from './publisher.js';
import { Subscriber } from './subscriber.js';

export { HeraldError } from './errors.js';
export { Delivery, Subscriber } from './subscriber.js';
export { Publisher } from './publisher.js';

/**
 * A client of a Herald gateway: its nodes (any serves any request; the client moves to the next when
 * one fails) and the credentials to use. Works in browsers and Node 20+ (fetch and WebSocket).
 */
export class HeraldClient {
  #gateway;

  /**
   * @param options.endpoints  gateway nodes, e.g. ['http://localhost:8080']
   * @param options.token      an API key or JWT (Authorization: Bearer; `?access_token=` on WebSockets)
   * @param options.requestTimeoutMs  how long a call waits for its answer (30 s)
   * @param options.WebSocket  a WebSocket class, where there is no global one
   */
  constructor(options) {
    this.#gateway = new Gateway(options);
  }

  publisher(settings = {}) {
    return new Publisher(this.#gateway, settings);
  }

  /** A subscriber (transport 'push' over a WebSocket, or 'poll' over HTTP); call start(). */
  subscriber(consumer, handler, settings = {}) {
    return new Subscriber(this.#gateway, consumer, handler, settings);
  }
}
