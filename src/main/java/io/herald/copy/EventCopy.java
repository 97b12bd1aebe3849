package io.herald.copy;

import com.github.luben.zstd.Zstd;
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The stored form of a copy's events (docs/internals.md): one frame, a version byte first. Version 1
 * is zstd over the events back to back (each its eventId's length, the eventId, its blob's length,
 * the blob), the uncompressed length before it; version 0 is the same events raw, for rounds that
 * zstd does not make smaller. Immutable once made.
 */
public final class EventCopy {
  private static final byte RAW = 0;
  private static final byte ZSTD = 1;
  /** zstd's fastest level: measured to keep about as little of a round as level 3 (docs/benchmarks.md). */
  private static final int LEVEL = 1;

  private final Map<String, Buffer> blobs;
  private final int bytes;

  private EventCopy(Map<String, Buffer> blobs, int bytes) {
    this.blobs = blobs;
    this.bytes = bytes;
  }

  /** One event of a copy: its eventId and the members a delivery splices in. */
  public record Event(String eventId, Buffer blob) {}

  /** The frame that stores these events. */
  public static byte[] encode(List<Event> events) {
    int size = 0;
    for (Event event : events) {
      size += 9 + event.eventId().length() + event.blob().length();
    }
    Buffer raw = Buffer.buffer(size);
    for (Event event : events) {
      byte[] id = event.eventId().getBytes(StandardCharsets.US_ASCII);
      raw.appendInt(id.length).appendBytes(id).appendInt(event.blob().length()).appendBuffer(event.blob());
    }
    byte[] plain = raw.getBytes();
    byte[] packed = Zstd.compress(plain, LEVEL);
    if (packed.length + 4 >= plain.length) {
      return Buffer.buffer(plain.length + 1).appendByte(RAW).appendBytes(plain).getBytes();
    }
    return Buffer.buffer(packed.length + 5).appendByte(ZSTD).appendInt(plain.length).appendBytes(packed).getBytes();
  }

  /** These events, as {@link #decode} reads them back from their frame. */
  static EventCopy of(List<Event> events) {
    Map<String, Buffer> blobs = new HashMap<>();
    int bytes = 0;
    for (Event event : events) {
      blobs.put(event.eventId(), event.blob());
      bytes += 8 + event.eventId().length() + event.blob().length();
    }
    return new EventCopy(blobs, bytes);
  }

  /** The events a frame stores; fails with IllegalArgumentException on a frame it cannot read. */
  public static EventCopy decode(byte[] frame) {
    if (frame.length == 0) {
      throw new IllegalArgumentException("an empty copy");
    }
    Buffer raw = switch (frame[0]) {
      case RAW -> Buffer.buffer(frame).slice(1, frame.length);
      case ZSTD -> {
        int length = Buffer.buffer(frame).getInt(1);
        byte[] plain = new byte[length];
        long got = Zstd.decompressByteArray(plain, 0, length, frame, 5, frame.length - 5);
        if (Zstd.isError(got) || got != length) {
          throw new IllegalArgumentException("a copy that does not decompress: " + Zstd.getErrorName(got));
        }
        yield Buffer.buffer(plain);
      }
      default -> throw new IllegalArgumentException("a copy of unknown version " + frame[0]);
    };
    Map<String, Buffer> blobs = new HashMap<>();
    int at = 0;
    while (at < raw.length()) {
      int idLength = raw.getInt(at);
      String eventId = raw.getString(at + 4, at + 4 + idLength, "US-ASCII");
      at += 4 + idLength;
      int blobLength = raw.getInt(at);
      blobs.put(eventId, raw.slice(at + 4, at + 4 + blobLength));
      at += 4 + blobLength;
    }
    return new EventCopy(blobs, raw.length());
  }

  /** The blob of one of its events, or null when the copy does not hold it. */
  public Buffer blob(String eventId) {
    return blobs.get(eventId);
  }

  /** Its events' bytes, uncompressed: what it weighs in a cache. */
  public int bytes() {
    return bytes;
  }
}
