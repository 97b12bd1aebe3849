package io.herald.testing;

import java.io.IOException;
import java.io.UncheckedIOException;

/** Signals to a test's server processes, as {@code kill -NAME pid}. */
final class Signals {
  private Signals() {}

  /** Sends signal {@code name} (STOP, CONT, ...) to {@code process}. */
  static void send(ProcessHandle process, String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, String.valueOf(process.pid())).start();
      if (kill.waitFor() != 0) {
        throw new IllegalStateException("kill -" + name + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
