package io.herald.auth;

import io.herald.protocol.TopicName;

/**
 * A {@code consume} grant: a consumer's exact name, {@code *} for every consumer, or a name's start
 * followed by {@code *} ({@code billing-*}: every consumer whose name starts with {@code billing-}).
 */
public record ConsumerPattern(String prefix, boolean wildcard) {

  /** @throws IllegalArgumentException when {@code grant} is neither a consumer name nor one followed by {@code *} */
  public static ConsumerPattern parse(String grant) {
    boolean wildcard = grant.endsWith("*");
    String prefix = wildcard ? grant.substring(0, grant.length() - 1) : grant;
    if (wildcard && prefix.isEmpty()) {
      return new ConsumerPattern("", true);
    }
    if (!TopicName.isValidConsumer(prefix)) {
      throw new IllegalArgumentException("a consumer name (1..128 of A-Z a-z 0-9 . _ -), optionally followed by *,"
          + " or * alone");
    }
    return new ConsumerPattern(prefix, wildcard);
  }

  public boolean matches(String consumer) {
    return wildcard ? consumer.startsWith(prefix) : consumer.equals(prefix);
  }

  @Override
  public String toString() {
    return wildcard ? prefix + "*" : prefix;
  }
}
