package io.herald.store;

/**
 * Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of its hash tag (the first
 * {@code {...}} with something inside), modulo 16384.
 */
public final class HashSlots {
  public static final int COUNT = 16384;

  private HashSlots() {}

  public static int of(byte[] key) {
    int open = indexOf(key, (byte) '{', 0);
    if (open >= 0) {
      int close = indexOf(key, (byte) '}', open + 1);
      if (close > open + 1) {
        return crc16(key, open + 1, close) & (COUNT - 1);
      }
    }
    return crc16(key, 0, key.length) & (COUNT - 1);
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
