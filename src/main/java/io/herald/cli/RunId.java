package io.herald.cli;

import java.security.SecureRandom;
import java.util.HexFormat;

/** A random id for one run of a command: its idempotency keys, its temporary consumers and topics. */
final class RunId {
  private static final SecureRandom RANDOM = new SecureRandom();

  private RunId() {}

  /** 12 hex digits. */
  static String next() {
    byte[] bytes = new byte[6];
    RANDOM.nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }
}
