package io.herald.quota;

import io.herald.store.RedisStore;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Settles the ledger holds of one verticle's publish rounds and polls a few at a time: the holds
 * and consumer figures that come in within {@link #WINDOW_MS} go to the ledger in one call (a
 * consumer's newest figure only). Until then a hold stands for what its events took, so the ledger
 * stays right meanwhile; under load this saves a ledger call per round or poll. Event-loop confined.
 */
public final class HoldSettler {
  private static final System.Logger LOG = System.getLogger(HoldSettler.class.getName());
  static final long WINDOW_MS = 5;

  private final Vertx vertx;
  private final RedisStore store;
  private final SpoolLedger ledger;
  private List<String> holds = new ArrayList<>();
  private Map<String, SpoolFigures> figures = new LinkedHashMap<>();

  public HoldSettler(Vertx vertx, RedisStore store, SpoolLedger ledger) {
    this.vertx = vertx;
    this.store = store;
    this.ledger = ledger;
  }

  /** Gives back these holds with these consumers' figures, within the window. */
  public void settle(List<String> holdIds, List<SpoolFigures> consumerFigures) {
    if (holds.isEmpty() && figures.isEmpty()) {
      vertx.setTimer(WINDOW_MS, t -> flush());
    }
    holds.addAll(holdIds);
    consumerFigures.forEach(f -> figures.merge(f.consumer(), f, (a, b) -> b.version() >= a.version() ? b : a));
  }

  private void flush() {
    List<String> settling = holds;
    Map<String, SpoolFigures> with = figures;
    holds = new ArrayList<>();
    figures = new LinkedHashMap<>();
    // a hold not given back here lapses after its time in the ledger
    ledger.settle(store, settling, with.values()).onFailure(failure -> LOG.log(System.Logger.Level.DEBUG,
        "Could not settle " + settling.size() + " ledger holds (they lapse later): " + failure.getMessage()));
  }
}
