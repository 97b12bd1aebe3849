package io.herald.store;

import java.util.Arrays;

/**
 * Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of its hash tag (the first
 * {@code {...}} with something inside), modulo 16384.
 */
public final class HashSlots {
  public static final int COUNT = 16384;

  private HashSlots() {}

  public static int of(byte[] key) {
    int[] hashed = hashed(key);
    return crc16(key, hashed[0], hashed[1]) & (COUNT - 1);
  }

  /** What decides a key's slot: its hash tag, else the whole key (the same slot, as a key of its own). */
  static byte[] tagOf(byte[] key) {
    int[] hashed = hashed(key);
    return Arrays.copyOfRange(key, hashed[0], hashed[1]);
  }

  /** The part of the key that is hashed, from and to: inside its first {...} with something in it, else all. */
  private static int[] hashed(byte[] key) {
    int open = indexOf(key, (byte) '{', 0);
    if (open >= 0) {
      int close = indexOf(key, (byte) '}', open + 1);
      if (close > open + 1) {
        return new int[] {open + 1, close};
      }
    }
    return new int[] {0, key.length};
  }

  private static int indexOf(byte[] bytes, byte wanted, int from) {
    for (int i = from; i < bytes.length; i++) {
      if (bytes[i] == wanted) {
        return i;
      }
    }
    return -1;
  }

  static int crc16(byte[] bytes, int from, int to) {
    int crc = 0;
    for (int i = from; i < to; i++) {
      crc ^= (bytes[i] & 0xff) << 8;
      for (int bit = 0; bit < 8; bit++) {
        crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
      }
    }
    return crc & 0xffff;
  }
}
