package io.herald.publish;

import java.security.SecureRandom;

/**
 * Makes eventIds that sort as plain text in publish order: 12 hex digits of the publish time in ms
 * (Redis' clock), a per-generator sequence, and a random generator id that keeps ids of different
 * generators apart. Not thread-safe: one per verticle instance.
 */
final class EventIds {
  private static final SecureRandom RANDOM = new SecureRandom();
  private final String generator = hex(Integer.toUnsignedLong(RANDOM.nextInt()), 8);
  private long sequence = Integer.toUnsignedLong(RANDOM.nextInt());
  private long lastMs;

  /** The publish time to stamp: never earlier than the previous one, so ids stay in order. */
  long stamp(long nowMs) {
    lastMs = Math.max(lastMs, nowMs);
    return lastMs;
  }

  String next(long stampMs) {
    sequence = (sequence + 1) & 0xffffffffL;
    return hex(stampMs, 12) + "-" + hex(sequence, 8) + "-" + generator;
  }

  private static String hex(long value, int digits) {
    String text = Long.toHexString(value);
    return "0".repeat(Math.max(0, digits - text.length())) + text;
  }
}
