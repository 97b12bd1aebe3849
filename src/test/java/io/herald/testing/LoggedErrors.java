package io.herald.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** Collects what the gateway logs as errors (SEVERE, where System.Logger's ERROR goes) while open. */
public final class LoggedErrors implements AutoCloseable {
  private final List<LogRecord> records = new CopyOnWriteArrayList<>();
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      if (record.getLevel().intValue() >= Level.SEVERE.intValue()) {
        records.add(record);
      }
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  private LoggedErrors() {
    Logger.getLogger("").addHandler(handler);
  }

  /** Starts collecting. */
  public static LoggedErrors watch() {
    return new LoggedErrors();
  }

  /** "LEVEL message" of each error logged so far. */
  public List<String> messages() {
    return records.stream().map(r -> r.getLevel() + " " + r.getMessage()).toList();
  }

  @Override
  public void close() {
    Logger.getLogger("").removeHandler(handler);
  }
}
