package io.herald.copy;

import io.vertx.core.buffer.Buffer;
import io.vertx.redis.client.Response;

/**
 * An event as a consumer's scripts answer it (docs/internals.md): its stub, {@code
 * <size>[@<copyId>][ <key>]}, the blob being in a copy, or (anything not starting with a digit)
 * its blob itself, as the inline layout stores it.
 */
public final class Stubs {
  private Stubs() {}

  private static boolean isStub(Buffer bytes) {
    return bytes.length() > 0 && Character.isDigit(bytes.getByte(0));
  }

  /** The copy holding the event's blob, or null when {@code value} is the blob itself. */
  public static String copyOf(String eventId, Response value) {
    Buffer bytes = value.toBuffer();
    if (!isStub(bytes)) {
      return null;
    }
    String stub = bytes.toString();
    int end = stub.indexOf(' ');
    String head = end < 0 ? stub : stub.substring(0, end);
    int at = head.indexOf('@');
    return at < 0 ? Copies.copyOf(eventId) : head.substring(at + 1);
  }

  /** The event's size in bytes: its blob's length. */
  public static int size(Response value) {
    Buffer bytes = value.toBuffer();
    if (!isStub(bytes)) {
      return bytes.length();
    }
    int size = 0;
    for (int i = 0; i < bytes.length() && Character.isDigit(bytes.getByte(i)); i++) {
      size = size * 10 + (bytes.getByte(i) - '0');
    }
    return size;
  }

  /** The event's blob in {@code copy}, or null when the copy (or the event in it) is gone. */
  public static Buffer blob(EventCopy copy, String eventId) {
    return copy == null ? null : copy.blob(eventId);
  }
}
