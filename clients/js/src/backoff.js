/**
 * Exponential backoff with jitter: the n-th wait is a random time between half of and all of
 * min(max, initial·2ⁿ), so clients that lost the same node do not all come back at once.
 */
export class Backoff {
  #initialMs;
  #maxMs;
  #attempt = 0;

  constructor(initialMs, maxMs) {
    this.#initialMs = Math.max(1, initialMs);
    this.#maxMs = Math.max(this.#initialMs, maxMs);
  }

  nextMs() {
    const ceiling = Math.min(this.#maxMs, this.#initialMs * 2 ** Math.min(this.#attempt, 20));
    this.#attempt++;
    return ceiling / 2 + Math.random() * (ceiling / 2);
  }

  reset() {
    this.#attempt = 0;
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
