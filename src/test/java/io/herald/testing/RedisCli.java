package io.herald.testing;

import io.vertx.core.Vertx;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;

/** Direct Redis commands for tests that look at or set up stored state. */
public final class RedisCli {
  private static final Vertx VERTX = Vertx.vertx();

  private RedisCli() {}

  public static Response send(String url, Request request) {
    Redis client = Redis.createClient(VERTX, url);
    try {
      return client.send(request).await();
    } finally {
      client.close();
    }
  }

  public static void hset(String url, String key, String field, String value) {
    send(url, Request.cmd(Command.HSET).arg(key).arg(field).arg(value));
  }

  /** Redis' clock, in ms since the epoch: the clock every time in the protocol is read from. */
  /** The server's used_memory (INFO memory), bytes. */
  public static long usedMemory(String url) {
    String info = send(url, Request.cmd(Command.INFO).arg("memory")).toString();
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("used_memory:")) {
        return Long.parseLong(line.substring("used_memory:".length()).trim());
      }
    }
    throw new IllegalStateException("no used_memory in INFO memory");
  }

  public static long millis(String url) {
    Response time = send(url, Request.cmd(Command.TIME));
    return time.get(0).toLong() * 1000 + time.get(1).toLong() / 1000;
  }

  /**
   * How many commands Redis answered with an error reply of this prefix (e.g. "ERR": a script that
   * failed inside Redis) since it started, from INFO errorstats.
   */
  public static long errors(String url, String prefix) {
    String info = send(url, Request.cmd(Command.INFO).arg("errorstats")).toString();
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("errorstat_" + prefix + ":count=")) {
        return Long.parseLong(line.substring(line.indexOf('=') + 1).split(",")[0]);
      }
    }
    return 0;
  }

  /** The major version of the Redis at {@code url}. */
  public static int majorVersion(String url) {
    java.util.regex.Matcher version = java.util.regex.Pattern.compile("redis_version:(\\d+)\\.")
        .matcher(send(url, Request.cmd(Command.INFO).arg("server")).toString());
    if (!version.find()) {
      throw new IllegalStateException("INFO server tells no redis_version");
    }
    return Integer.parseInt(version.group(1));
  }

  /** How many calls of {@code command} (lower case, e.g. "zadd") failed since Redis started, from INFO commandstats. */
  public static long failedCalls(String url, String command) {
    return commandStat(url, command, "failed_calls");
  }

  /** How many calls of {@code command} (lower case, e.g. "time") Redis ran, scripts' included, from INFO commandstats. */
  public static long calls(String url, String command) {
    return commandStat(url, command, "calls");
  }

  private static long commandStat(String url, String command, String name) {
    String info = send(url, Request.cmd(Command.INFO).arg("commandstats")).toString();
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("cmdstat_" + command + ":")) {
        for (String field : line.substring(line.indexOf(':') + 1).split(",")) {
          if (field.startsWith(name + "=")) {
            return Long.parseLong(field.substring(name.length() + 1));
          }
        }
      }
    }
    return 0;
  }

  /** How many commands Redis ran since it started (scripts' own commands included), from INFO commandstats. */
  public static long calls(String url) {
    String info = send(url, Request.cmd(Command.INFO).arg("commandstats")).toString();
    long calls = 0;
    for (String line : info.split("\\r?\\n")) {
      if (line.startsWith("cmdstat_")) {
        calls += Long.parseLong(line.substring(line.indexOf("calls=") + 6).split(",")[0]);
      }
    }
    return calls;
  }

  public static boolean exists(String url, String key) {
    return send(url, Request.cmd(Command.EXISTS).arg(key)).toInteger() == 1;
  }
}
