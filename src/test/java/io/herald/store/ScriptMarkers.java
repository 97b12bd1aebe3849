package io.herald.store;

/** What a script's call carries, whichever way it is called: for tests that watch the wire for it. */
public final class ScriptMarkers {
  private ScriptMarkers() {}

  /** Its function's name (Redis 7 and later) and its SHA (before). */
  public static String[] of(Script script) {
    return new String[] {script.function(), script.sha()};
  }
}
