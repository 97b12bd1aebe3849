package io.herald.redelivery;

import io.herald.store.Keys;
import io.herald.store.RedisStore;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.IntStream;
import java.util.zip.CRC32;

/**
 * Where the scheduler's due index keeps a consumer's entry: one index on one Redis server (or a
 * sentinel set's primary), {@value #CLUSTER_SHARDS} on a Redis Cluster, each in a slot of its own,
 * so that no one primary takes every node's filings and ticks. Every node of a cluster derives the
 * same shards from the consumer's name.
 *
 * @param shards    how many indexes there are
 * @param shardKeys each one's keys (made once: finding them takes a few hashes)
 */
public record DueIndex(int shards, List<List<String>> shardKeys) {
  public static final int CLUSTER_SHARDS = 16;

  public DueIndex(int shards) {
    this(shards, IntStream.range(0, shards).mapToObj(shard -> Keys.due(shard, shards)).toList());
  }

  /** The index of the Redis {@code store} talks to. */
  public static DueIndex of(RedisStore store) {
    return new DueIndex(store.isCluster() ? CLUSTER_SHARDS : 1);
  }

  /** The shard holding {@code consumer}'s entry. */
  public int shardOf(String consumer) {
    if (shards == 1) {
      return 0;
    }
    CRC32 crc = new CRC32();
    crc.update(consumer.getBytes(StandardCharsets.UTF_8));
    return (int) (crc.getValue() % shards);
  }

  /** The keys of one shard, as the due scripts take them: the index, then its versions. */
  public List<String> keys(int shard) {
    return shardKeys.get(shard);
  }

  /** The keys of the shard holding {@code consumer}'s entry. */
  public List<String> keysOf(String consumer) {
    return keys(shardOf(consumer));
  }
}
