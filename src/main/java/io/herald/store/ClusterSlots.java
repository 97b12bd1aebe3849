package io.herald.store;

import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Which primary serves each hash slot of a Redis Cluster, as the cluster last told ({@code CLUSTER
 * SLOTS}); read again when a server answers MOVED or cannot be reached, and every few seconds. Safe
 * to use from any thread: the table is replaced whole.
 */
final class ClusterSlots {
  /** How long a primary that failed a call is passed over for keyless commands. */
  private static final long SUSPECT_NANOS = 5_000_000_000L;
  /** A table read at most this often: a storm of MOVED replies during a migration reads it once. */
  private static final long MIN_REFRESH_NANOS = 100_000_000L;
  private final List<String> seeds;
  /** "redis://user:password@" or "redis://" (or rediss), for the endpoints the cluster names. */
  private final String scheme;
  private volatile String[] primaries = new String[HashSlots.COUNT];
  /** Every server the cluster named (primaries and replicas), to ask for the table. */
  private volatile List<String> known = List.of();
  /** The server last found unreachable: asked for the table last. */
  private volatile String unreachable;
  /** Primaries that failed a call (unreachable, or no answer), and when. */
  private final Map<String, Long> suspects = new ConcurrentHashMap<>();
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

  /**
   * The primary for commands without keys (TIME, PING, PUBLISH, SUBSCRIBE): the one of slot 0 while
   * it serves, so that a node reads Redis' clock from one server, not from each in turn; while it
   * fails calls (a shard with nobody serving it, on a cluster that lets the others serve theirs),
   * the next primary in slot order, so that the node's clock and subscription go on.
   */
  String keylessPrimary() {
    String first = primaries[0];
    if (first != null && suspects.isEmpty()) {
      return first;
    }
    long now = System.nanoTime();
    // a suspicion lasts SUSPECT_NANOS (one of a server the table dropped since, too)
    suspects.values().removeIf(since -> now - since > SUSPECT_NANOS);
    List<String> all = primaries();
    for (String primary : all) {
      Long since = suspects.get(primary);
      if (since == null || now - since > SUSPECT_NANOS) {
        return primary;
      }
    }
    return all.isEmpty() ? null : all.get(0);
  }

  /** A call to {@code endpoint} failed without an answer: passed over for keyless commands a while. */
  void suspect(String endpoint) {
    suspects.put(endpoint, System.nanoTime());
  }

  /** {@code endpoint} answered a call. */
  void answered(String endpoint) {
    if (!suspects.isEmpty()) {
      suspects.remove(endpoint);
    }
  }

  /** Every primary the table names. */
  List<String> primaries() {
    Set<String> all = new LinkedHashSet<>(Arrays.asList(primaries));
    all.remove(null);
    return new ArrayList<>(all);
  }

  /** Whether the table names {@code endpoint} (a primary or a replica), or it is a seed. */
  boolean names(String endpoint) {
    return known.contains(endpoint) || seeds.contains(endpoint);
  }

  /** A MOVED reply: {@code slot} is served by {@code endpoint} now (the rest is read again too). */
  void moved(int slot, String endpoint) {
    String[] table = primaries.clone();
    table[slot] = endpoint;
    primaries = table;
  }

  /** {@code endpoint} could not be reached: it is asked for the table last. */
  void unreachable(String endpoint) {
    unreachable = endpoint;
    suspect(endpoint);
  }

  /**
   * The endpoint a redirection's "host:port" names, with the seeds' scheme and credentials; an
   * empty host means the host of the server that answered.
   */
  String redirection(String hostPort, String answeredBy) {
    return endpoint(hostPort.startsWith(":") ? hostOf(answeredBy) + hostPort : hostPort);
  }

  private String endpoint(String hostPort) {
    return scheme + hostPort;
  }

  private static String hostOf(String endpoint) {
    String address = endpoint.substring(endpoint.lastIndexOf('@') + 1).replaceFirst("^.*://", "");
    return address.replaceFirst(":\\d+/?$", "");
  }

  /**
   * Reads the table again from the first server that answers (those it named before, then the
   * seeds, the one last found unreachable at the end), through {@code ask}; one reading at a time,
   * at most one per 100 ms.
   */
  synchronized Future<Void> refresh(Function<String, Future<Response>> ask) {
    if (refreshing != null && (!refreshing.isComplete() || System.nanoTime() - refreshedAt < MIN_REFRESH_NANOS)) {
      return refreshing;
    }
    refreshedAt = System.nanoTime();
    Set<String> candidates = new LinkedHashSet<>(known);
    candidates.addAll(seeds);
    String last = unreachable;
    if (last != null && candidates.remove(last)) {
      candidates.add(last);
    }
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
   * id, then each replica's. A host that is empty, "?" or null means the server that answered.
   */
  private void read(Response reply, String answeredBy) {
    String[] table = new String[HashSlots.COUNT];
    Set<String> servers = new LinkedHashSet<>();
    for (Response range : reply) {
      int from = range.get(0).toInteger();
      int to = range.get(1).toInteger();
      for (int n = 2; n < range.size(); n++) {
        Response node = range.get(n);
        String host = node.get(0) == null ? "" : node.get(0).toString();
        String endpoint = endpoint((host.isEmpty() || host.equals("?") ? hostOf(answeredBy) : host)
            + ":" + node.get(1).toInteger());
        servers.add(endpoint);
        if (n == 2) {
          Arrays.fill(table, from, to + 1, endpoint);
        }
      }
    }
    if (servers.isEmpty()) {
      throw new IllegalStateException("the cluster node " + RedisTarget.masked(answeredBy) + " serves no slots yet");
    }
    primaries = table;
    known = List.copyOf(servers);
  }

  static Request slotsRequest() {
    return Request.cmd(Command.CLUSTER).arg("SLOTS");
  }
}
