package io.herald.admin;

import io.herald.config.HeraldConfig;
import io.herald.http.Responses;
import io.herald.protocol.ApiException;
import io.herald.quota.SpoolLedger;
import io.herald.store.RedisStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.redis.client.Response;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code GET /v1/admin/stats}: gateway-wide spool use and unacked events (from the ledger: exact
 * for publishes and polls, within {@code quotas.syncMs} for what acks and dead-lettering freed),
 * limits and alert states.
 */
public final class StatsRoutes {
  private final RedisStore store;
  private final SpoolLedger ledger;
  private final HeraldConfig.Quotas quotas;

  public StatsRoutes(RedisStore store, SpoolLedger ledger) {
    this.store = store;
    this.ledger = ledger;
    this.quotas = ledger.quotas();
  }

  public void mount(Router router) {
    router.get("/v1/admin/stats").handler(this::stats);
  }

  private void stats(RoutingContext ctx) {
    Responses.reply(ctx, this::read);
  }

  /** The body of {@code GET /v1/admin/stats}, also sent on the consoles' live streams. */
  public Future<JsonObject> read() {
    return ApiException.reading(ledger.usage(store)).map(this::describe);
  }

  /** The sums over the ledger's shards; the first one keeps the alerts' state. */
  private JsonObject describe(List<Response> shards) {
    Map<String, Long> usage = new HashMap<>();
    for (Response shard : shards) {
      for (String field : shard.getKeys()) {
        usage.merge(field, shard.get(field).toLong(), field.startsWith("alert:") ? (a, b) -> a : Long::sum);
      }
    }
    Map<String, JsonObject> namespaces = new TreeMap<>();
    quotas.namespaces().forEach((name, quota) -> namespaces.put(name, use(0, quota)));
    Map<String, JsonObject> topics = new TreeMap<>();
    long gateway = 0;
    long unacked = 0;
    boolean raised = false;
    boolean unackedRaised = false;
    for (String field : usage.keySet()) {
      long value = usage.get(field);
      if (field.equals("g")) {
        gateway = value;
      } else if (field.equals("u")) {
        unacked = value;
      } else if (field.equals("alert:spool")) {
        raised = value == 1;
      } else if (field.equals("alert:unacked")) {
        unackedRaised = value == 1;
      } else if (field.startsWith("n:")) {
        String name = field.substring(2);
        namespaces.put(name, use(value, quotas.namespace(name)));
      } else if (field.startsWith("t:")) {
        topics.put(field.substring(2), new JsonObject().put("usedBytes", value));
      }
    }
    return new JsonObject()
        .put("spool", use(gateway, quotas.spoolBytes()).put("alert", raised ? "RAISED" : "CLEAR")
            .put("raisePercent", quotas.raisePercent()).put("clearPercent", quotas.clearPercent()))
        .put("unacked", new JsonObject().put("used", unacked).put("limit", quotas.maxUnackedTotal())
            .put("alert", unackedRaised ? "RAISED" : "CLEAR"))
        .put("namespaces", new JsonObject(new LinkedHashMap<>(namespaces)))
        .put("chargedTopics", new JsonObject(new LinkedHashMap<>(topics)));
  }

  private static JsonObject use(long used, Long quota) {
    return new JsonObject().put("usedBytes", used).put("quotaBytes", quota);
  }
}
