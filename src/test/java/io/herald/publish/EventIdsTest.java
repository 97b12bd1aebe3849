package io.herald.publish;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.herald.copy.Copies;
import io.vertx.core.Future;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class EventIdsTest {

  /**
   * Reserves rounds of the given sizes (payloads of 1 KiB) while the clock reads the given times in
   * turn; returns every id.
   */
  private static List<String> ids(EventIds maker, Deque<Long> times, int... rounds) {
    List<String> ids = new ArrayList<>();
    for (int n : rounds) {
      int[] sizes = new int[n];
      Arrays.fill(sizes, 1024);
      long[] reserved = maker.reserve(null, CopyBlocks.count(sizes)).await();
      CopyBlocks blocks = new CopyBlocks(reserved[1]);
      for (int size : sizes) {
        ids.add(EventBlobs.eventId(reserved[0], blocks.next(size)));
      }
    }
    assertTrue(times.isEmpty());
    return ids;
  }

  private static EventIds maker(Deque<Long> times) {
    return new EventIds(store -> Future.succeededFuture(times.poll()));
  }

  @Test
  @DisplayName("a maker's ids are unique and sort in the order it made them, also when the clock goes back")
  void idsSortInOrderMade() {
    Deque<Long> times = new ArrayDeque<>(List.of(1_000L, 1_000L, 999L, 1_001L, 1_001L, 1_001L));
    List<String> ids = ids(maker(times), times, 3, 1, 1000, 2, 5, 2000);
    List<String> sorted = new ArrayList<>(ids);
    sorted.sort(null);
    assertEquals(sorted, ids);
    assertEquals(ids.size(), new HashSet<>(ids).size());
    assertEquals(1_000L, EventBlobs.publishedAt(ids.get(1003)), "a clock gone back keeps the ms reached");
    assertEquals(1_001L, EventBlobs.publishedAt(ids.get(1004)));
  }

  @Test
  @DisplayName("the ids of one copy share its prefix, and a copy closes at 1 MiB of payloads")
  void copiesShareAPrefix() {
    Deque<Long> times = new ArrayDeque<>(List.of(1_000L, 1_000L));
    List<String> ids = ids(maker(times), times, 3, 2000);
    List<String> copies = ids.stream().map(id -> Copies.copyOf(id)).distinct().toList();
    // 3 events, then 2000 of 1 KiB: 1024 of them to a copy, then the other 976
    assertEquals(3, copies.size(), copies.toString());
    assertEquals(List.of(3L, 1024L, 976L), copies.stream()
        .map(copy -> ids.stream().filter(id -> id.startsWith(copy)).count()).toList());
  }

  @Test
  @DisplayName("ids of two makers in the same millisecond differ")
  void makersDiffer() {
    long[] a = maker(new ArrayDeque<>(List.of(5L))).reserve(null, 1).await();
    long[] b = maker(new ArrayDeque<>(List.of(5L))).reserve(null, 1).await();
    assertEquals(a[0], b[0]);
    assertTrue(Math.abs(a[1] - b[1]) >= EventIds.BLOCK, "makers' sequences do not overlap");
  }

  @Test
  @DisplayName("when a millisecond's 4,096 blocks are taken, the next ids are the next millisecond's")
  void fullMillisecondMovesOn() {
    Deque<Long> times = new ArrayDeque<>(List.of(7L, 7L));
    EventIds maker = maker(times);
    long[] first = maker.reserve(null, 4095).await();
    long[] second = maker.reserve(null, 2).await();
    assertEquals(7L, first[0]);
    assertEquals(8L, second[0]);
    long last = first[1] + 4095L * EventIds.BLOCK - 1;
    assertTrue(EventBlobs.eventId(first[0], last).compareTo(EventBlobs.eventId(second[0], second[1])) < 0);
  }
}
