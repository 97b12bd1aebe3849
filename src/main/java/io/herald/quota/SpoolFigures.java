package io.herald.quota;

import io.herald.consumer.ConsumerSettings;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One consumer's spool and unacked count as its own keys count them (exact, see
 * {@code spool_figures} in {@code spool.lib.lua}), on their way to the gateway-wide ledger.
 *
 * @param exists     false once the consumer is deleted: the ledger forgets its share
 * @param namespace  the namespace its bytes count against, or null
 * @param version    grows with every change, so the ledger keeps the newest figure it was given
 * @param salt       tells the consumer from an earlier one of the same name
 * @param unacked    its delivered-but-unacked events, as they count against maxUnackedTotal
 * @param realized   ledger holds whose effect these figures include (the ledger gives them back)
 * @param topicBytes bytes charged to topics with a quota, by topic
 */
public record SpoolFigures(String consumer, boolean exists, String namespace, long version, String salt, long bytes,
    long events, long unacked, List<String> realized, Map<String, Long> topicBytes) {

  public static SpoolFigures gone(String consumer) {
    return new SpoolFigures(consumer, false, null, 0, "", 0, 0, 0, List.of(), Map.of());
  }

  /**
   * Reads the figures a script returned from {@code reply[from]} on.
   *
   * @param settings this node's copy of the consumer's settings, or null if it has none
   */
  public static SpoolFigures parse(String consumer, ConsumerSettings settings, Response reply, int from) {
    int realizedCount = reply.get(from + 5).toInteger();
    List<String> realized = new ArrayList<>(realizedCount);
    for (int i = 0; i < realizedCount; i++) {
      realized.add(reply.get(from + 6 + i).toString());
    }
    Map<String, Long> topics = new LinkedHashMap<>();
    for (int i = from + 6 + realizedCount; i + 1 < reply.size(); i += 2) {
      topics.put(reply.get(i).toString(), reply.get(i + 1).toLong());
    }
    return new SpoolFigures(consumer, true, settings == null ? null : settings.admission().namespace(),
        reply.get(from + 2).toLong(), reply.get(from + 3).toString(), reply.get(from).toLong(),
        reply.get(from + 1).toLong(), settings != null && settings.systemOnly() ? 0 : reply.get(from + 4).toLong(),
        realized, topics);
  }

  /** The arguments {@code quota_settle.lua} takes for one consumer. */
  List<Object> args() {
    List<Object> args = new ArrayList<>(List.of(consumer, exists ? "1" : "0"));
    if (exists) {
      args.addAll(List.of(namespace == null ? "" : namespace, version, salt, bytes, events, unacked, realized.size()));
      args.addAll(realized);
      args.add(topicBytes.size());
      topicBytes.forEach((topic, amount) -> {
        args.add(topic);
        args.add(amount);
      });
    }
    return args;
  }
}
