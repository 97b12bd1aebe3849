package io.herald.testing;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;

/**
 * Collects what the gateway logs as errors (System.Logger's ERROR, through SLF4J to logback), or
 * from another level up, while open.
 */
public final class LoggedErrors implements AutoCloseable {
  private final List<ILoggingEvent> records = new CopyOnWriteArrayList<>();
  private final Level from;
  private final AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
    @Override
    protected void append(ILoggingEvent event) {
      if (event.getLevel().isGreaterOrEqual(from)) {
        records.add(event);
      }
    }
  };

  private LoggedErrors(Level from) {
    this.from = from;
    appender.setContext(root().getLoggerContext());
    appender.start();
    root().addAppender(appender);
  }

  private static Logger root() {
    return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  }

  /** Starts collecting errors. */
  public static LoggedErrors watch() {
    return new LoggedErrors(Level.ERROR);
  }

  /** Starts collecting warnings and errors. */
  public static LoggedErrors watchWarnings() {
    return new LoggedErrors(Level.WARN);
  }

  /** "LEVEL message" of each error logged so far. */
  public List<String> messages() {
    return records.stream().map(r -> r.getLevel() + " " + r.getFormattedMessage()).toList();
  }

  @Override
  public void close() {
    root().detachAppender(appender);
    appender.stop();
  }
}
