package io.herald.store;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

/**
 * Which primary serves each hash slot of a Redis Cluster, as the cluster last told ({@code CLUSTER
 * SLOTS}); read again when a server answers MOVED or cannot be reached. Safe to use from any thread:
 * the table is replaced whole.
 */
final class ClusterSlots {
  /** A table read at most this often: a storm of MOVED replies during a migration reads it once. */
  private static final long MIN_REFRESH_NANOS = 100_000_000L;
  private final List<String> seeds;
  /** "redis://user:password@" or "redis://" (or rediss), for the endpoints the cluster names. */
  private final String scheme;
  private volatile String[] primaries = new String[HashSlots.COUNT];
  /** Every server the cluster named (primaries and replicas), to ask for the table. */
  private volatile List<String> known = List.of();
  private Future<Void> refreshing;
  private long refreshedAt;

  ClusterSlots(List<String> seeds) {
    this.seeds = List.copyOf(seeds);
    String first = seeds.get(0);
    int at = first.indexOf('@');
    this.scheme = at >= 0 ? first.substring(0, at + 1) : first.substring(0, first.indexOf("://") + 3);
  }

  /** The primary of {@code slot}, or null when the table does not know one. */
  String primaryOf(int slot) {
    return primaries[slot];
  }

  /** A primary to send a command without keys to (each time another, so they share the load). */
  String anyPrimary() {
    List<String> all = primaries();
    return all.isEmpty() ? null : all.get(ThreadLocalRandom.current().nextInt(all.size()));
  }

  /** Every primary the table names. */
  List<String> primaries() {
    Set<String> all = new LinkedHashSet<>(Arrays.asList(primaries));
    all.remove(null);
    return new ArrayList<>(all);
  }

  /** A MOVED reply: {@code slot} is served by {@code endpoint} now (the rest is read again too). */
  void moved(int slot, String endpoint) {
    String[] table = primaries.clone();
    table[slot] = endpoint;
    primaries = table;
  }

  /** The endpoint of a redirection's "host:port", with the seeds' scheme and credentials. */
  String endpoint(String hostPort) {
    return scheme + hostPort;
  }

  /**
   * Reads the table again from the first server that answers (those it named before, then the
   * seeds), through {@code ask}; one reading at a time, at most one per 100 ms.
   */
  synchronized Future<Void> refresh(Function<String, Future<Response>> ask) {
    if (refreshing != null && (!refreshing.isComplete() || System.nanoTime() - refreshedAt < MIN_REFRESH_NANOS)) {
      return refreshing;
    }
    refreshedAt = System.nanoTime();
    Set<String> candidates = new LinkedHashSet<>(known);
    candidates.addAll(seeds);
    refreshing = readFrom(new ArrayList<>(candidates), 0, ask, null);
    return refreshing;
  }

  private Future<Void> readFrom(List<String> candidates, int at, Function<String, Future<Response>> ask,
      Throwable last) {
    if (at == candidates.size()) {
      return Future.failedFuture(last != null ? last : new IllegalStateException("no cluster node answered"));
    }
    String endpoint = candidates.get(at);
    return ask.apply(endpoint).compose(reply -> {
      read(reply, endpoint);
      return Future.<Void>succeededFuture();
    }).recover(failure -> readFrom(candidates, at + 1, ask, failure));
  }

  /**
   * {@code CLUSTER SLOTS}: per range, its first and last slot, then the primary's host, port and
   * id, then each replica's. An empty host means the server that answered.
   */
  private void read(Response reply, String answeredBy) {
    String[] table = new String[HashSlots.COUNT];
    Set<String> servers = new LinkedHashSet<>();
    String answeringHost = answeredBy.substring(answeredBy.lastIndexOf('@') + 1).replaceFirst("^.*://", "")
        .replaceFirst(":\\d+/?$", "");
    for (Response range : reply) {
      int from = range.get(0).toInteger();
      int to = range.get(1).toInteger();
      for (int n = 2; n < range.size(); n++) {
        Response node = range.get(n);
        String host = node.get(0).toString();
        String endpoint = endpoint((host.isEmpty() || host.equals("?") ? answeringHost : host) + ":" + node.get(1).toInteger());
        servers.add(endpoint);
        if (n == 2) {
          Arrays.fill(table, from, to + 1, endpoint);
        }
      }
    }
    if (servers.isEmpty()) {
      throw new IllegalStateException("the cluster node " + answeredBy + " serves no slots yet");
    }
    primaries = table;
    known = List.copyOf(servers);
  }

  static Request slotsRequest() {
    return Request.cmd(Command.CLUSTER).arg("SLOTS");
  }
}
