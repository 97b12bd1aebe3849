package io.herald.ack;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * ackIds of hand-outs, made and checked on the node so that Redis does no string work for them:
 * {@code <eventId>.<seq>.<n>.<mark>.<token>}, the token being the first 20 hex digits of the SHA-1
 * of {@code salt:eventId:seq:n:mark} with the consumer's secret salt, exactly as {@code ack_token} in
 * consumer.lib.lua makes it (the scripts that still read ackIds themselves check the same token).
 * A hand-out's mark is its poll call's 16 random hex digits followed by the event's size in bytes,
 * so that the ack script need not read the blob for it.
 */
public final class AckIds {
  private static final HexFormat HEX = HexFormat.of();
  private static final int TOKEN_HEX = 20;
  private static final ThreadLocal<MessageDigest> SHA1 = ThreadLocal.withInitial(() -> {
    try {
      return MessageDigest.getInstance("SHA-1");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  });

  /** A hand-out mark's first part: its poll call's random hex digits. */
  private static final int CALL_MARK_HEX = 16;

  private AckIds() {}

  /**
   * What an ackId names: one delivery of an event.
   *
   * @param entry the event's deliveries entry while this is its latest delivery, {@code n:seq:mark}
   * @param size  the event's size in bytes as its mark tells it, '' for a mark without it (made
   *              by an older version)
   */
  public record Delivery(String eventId, String seq, String entry, String size) {}

  /** The mark of a hand-out: its call's mark and the event's size. */
  public static String mark(String callMark, int size) {
    return callMark + size;
  }

  public static String make(String salt, String eventId, String seq, String n, String mark) {
    return eventId + '.' + seq + '.' + n + '.' + mark + '.' + token(salt, eventId, seq, n, mark);
  }

  /** The ackId of the delivery whose deliveries entry is {@code entry} ({@code n:seq:mark}). */
  public static String ofEntry(String salt, String eventId, String entry) {
    int first = entry.indexOf(':');
    int second = entry.indexOf(':', first + 1);
    return make(salt, eventId, entry.substring(first + 1, second), entry.substring(0, first), entry.substring(second + 1));
  }

  /** The delivery an ackId of this consumer (its {@code salt}) names; null for anything else. */
  public static Delivery read(String ackId, String salt) {
    String[] parts = ackId.split("\\.", -1);
    if (parts.length != 5 || !allOf(parts[0], true) || !digits(parts[1]) || !digits(parts[2])
        || !allOf(parts[3], false) || !allOf(parts[4], false)
        || !parts[4].equals(token(salt, parts[0], parts[1], parts[2], parts[3]))) {
      return null;
    }
    String mark = parts[3];
    String tail = mark.length() > CALL_MARK_HEX ? mark.substring(CALL_MARK_HEX) : "";
    String size = digits(tail) ? tail : "";
    return new Delivery(parts[0], parts[1], parts[2] + ':' + parts[1] + ':' + mark, size);
  }

  private static String token(String salt, String eventId, String seq, String n, String mark) {
    MessageDigest sha1 = SHA1.get();
    byte[] digest = sha1.digest((salt + ':' + eventId + ':' + seq + ':' + n + ':' + mark).getBytes(StandardCharsets.UTF_8));
    return HEX.formatHex(digest, 0, TOKEN_HEX / 2);
  }

  /** Hex digits (and dashes, for eventIds), at least one: what the scripts' pattern takes. */
  private static boolean allOf(String part, boolean dashes) {
    if (part.isEmpty()) {
      return false;
    }
    for (int i = 0; i < part.length(); i++) {
      char c = part.charAt(i);
      if (!(Character.digit(c, 16) >= 0 && c < 128) && !(dashes && c == '-')) {
        return false;
      }
    }
    return true;
  }

  private static boolean digits(String part) {
    if (part.isEmpty()) {
      return false;
    }
    for (int i = 0; i < part.length(); i++) {
      if (part.charAt(i) < '0' || part.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }
}
