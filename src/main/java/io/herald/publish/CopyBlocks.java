package io.herald.publish;

/**
 * Hands out a round's sequences copy by copy (docs/internals.md): each copy takes its own block of
 * {@link EventIds#BLOCK} sequences and closes once its payloads reach {@link #MAX_COPY_BYTES}, so
 * that reading one event never means decompressing much more than a megabyte. Every copy holds at
 * least one event.
 */
final class CopyBlocks {
  static final int MAX_COPY_BYTES = 1 << 20;

  private long blockStart;
  private long next;
  private long bytes;
  private boolean started;

  /** Blocks from the one starting at {@code first}. */
  CopyBlocks(long first) {
    blockStart = first;
    next = first;
  }

  /** How many blocks events of these payload sizes take, in this order. */
  static int count(int[] payloadSizes) {
    CopyBlocks counting = new CopyBlocks(0);
    for (int size : payloadSizes) {
      counting.next(size);
    }
    return payloadSizes.length == 0 ? 0 : (int) (counting.blockStart / EventIds.BLOCK) + 1;
  }

  /** The sequence of the next event, whose payload has {@code payloadSize} bytes. */
  long next(int payloadSize) {
    if (started && bytes >= MAX_COPY_BYTES) {
      blockStart += EventIds.BLOCK;
      next = blockStart;
      bytes = 0;
    }
    started = true;
    bytes += payloadSize;
    return next++;
  }
}
