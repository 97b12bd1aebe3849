package io.herald.ack;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The consumers' salts as this node last heard them from Redis (poll and ack replies carry them),
 * for making and checking ackIds ({@link AckIds}). A salt changes only when a consumer is deleted and
 * made again; the ack script tells when the node's copy is not the consumer's.
 */
public final class ConsumerSalts {
  private final Map<String, String> salts = new ConcurrentHashMap<>();

  /** The salt last heard of, or null. */
  public String get(String consumer) {
    return salts.get(consumer);
  }

  public void heard(String consumer, String salt) {
    salts.put(consumer, salt);
  }

  /** What the ack script compares with its consumer's salt: the first 8 characters ('' for none). */
  static String fingerprint(String salt) {
    return salt == null ? "" : salt.substring(0, Math.min(8, salt.length()));
  }
}
