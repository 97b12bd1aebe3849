package io.herald.redelivery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.store.HashSlots;
import io.herald.store.Keys;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class DueIndexTest {
  @Test
  @DisplayName("one index in one piece on one server: the keys of before")
  void onePiece() {
    DueIndex one = new DueIndex(1);
    assertEquals(0, one.shardOf("billing"));
    assertEquals(List.of(Keys.DUE, Keys.DUE_VERSIONS), one.keysOf("billing"));
  }

  @Test
  @DisplayName("on a cluster, consumers spread over 16 shards, each shard's two keys in one slot of its own")
  void shardsOnACluster() {
    DueIndex sharded = new DueIndex(DueIndex.CLUSTER_SHARDS);
    Map<Integer, Integer> perShard = new HashMap<>();
    for (int c = 0; c < 1600; c++) {
      int shard = sharded.shardOf("consumer-" + c);
      assertEquals(shard, sharded.shardOf("consumer-" + c), "the same shard on every call (and node)");
      perShard.merge(shard, 1, Integer::sum);
    }
    assertEquals(16, perShard.size());
    assertTrue(perShard.values().stream().allMatch(n -> n > 50 && n < 150), "roughly even: " + perShard);
    Set<String> tags = new HashSet<>();
    for (int shard = 0; shard < 16; shard++) {
      List<String> keys = sharded.keys(shard);
      String tag = keys.get(0).substring(keys.get(0).indexOf('{'), keys.get(0).indexOf('}') + 1);
      assertTrue(keys.get(1).contains(tag), keys.toString());
      tags.add(tag);
    }
    assertEquals(16, tags.size());
  }

  @Test
  @DisplayName("shard n's slot is in the nth sixteenth of the slots: the shards spread evenly over a cluster's primaries")
  void shardsSpreadOverTheSlots() {
    DueIndex sharded = new DueIndex(DueIndex.CLUSTER_SHARDS);
    for (int shard = 0; shard < 16; shard++) {
      String key = sharded.keys(shard).get(0);
      int slot = HashSlots.of(key.getBytes(StandardCharsets.UTF_8));
      assertEquals(shard, slot / 1024, key + " in slot " + slot);
    }
  }
}
