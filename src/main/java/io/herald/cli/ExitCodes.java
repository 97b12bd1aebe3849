package io.herald.cli;

/** What the commands exit with, for scripts. */
final class ExitCodes {
  /** Everything asked for was done (every event confirmed). */
  static final int OK = 0;
  /** The gateway refused something: a request (credentials, a bad argument) or some events. */
  static final int REFUSED = 1;
  /** The command line itself was wrong (picocli's own code). */
  static final int USAGE = 2;
  /** The gateway could not be reached, or stayed unavailable (503) after the retries. */
  static final int UNAVAILABLE = 3;

  private ExitCodes() {}
}
