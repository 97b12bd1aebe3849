/** Codes of failures that may pass: the same request may succeed later (the library retries them). */
const TRANSIENT = new Set(['UNREACHABLE', 'STORE_UNAVAILABLE', 'OUTCOME_UNKNOWN', 'NODE_SHUTTING_DOWN']);

/**
 * A refusal by the gateway (its error envelope: status, stable code, message, details), or a failure
 * to reach it (code UNREACHABLE, status 0).
 */
export class HeraldError extends Error {
  constructor(status, code, message, details = null, options = undefined) {
    super(`${code}: ${message}`, options);
    this.name = 'HeraldError';
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** Whether the same request may succeed later (the gateway or its Redis away, a lost answer). */
  get transient() {
    return TRANSIENT.has(this.code);
  }

  static unreachable(what, cause) {
    return new HeraldError(0, 'UNREACHABLE', `${what}: ${cause?.message ?? cause}`, null, { cause });
  }

  /** The refusal an answer's error envelope describes. */
  static fromAnswer(status, body) {
    const error = body?.error ?? {};
    return new HeraldError(status, error.code ?? String(status), error.message ?? `HTTP ${status}`, error.details ?? null);
  }
}
