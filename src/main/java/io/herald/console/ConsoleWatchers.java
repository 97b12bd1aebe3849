package io.herald.console;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many consoles watch this node's live figures ({@code GET /v1/admin/live}): while one does,
 * the consumer figures are read at the console's pace rather than the scrape interval's.
 */
public final class ConsoleWatchers {
  private final AtomicInteger open = new AtomicInteger();

  void opened() {
    open.incrementAndGet();
  }

  void closed() {
    open.decrementAndGet();
  }

  /** Whether a console's live stream is open on this node. */
  public boolean any() {
    return open.get() > 0;
  }
}
