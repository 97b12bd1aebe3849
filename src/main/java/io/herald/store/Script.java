package io.herald.store;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** A Lua script from {@code src/main/resources/lua}, called by SHA and loaded again when Redis forgot it. */
public final class Script {
  /** Every script starts with it: {@code now_ms}, Redis' clock. */
  private static final String TIME_LIB = read("time.lib.lua");
  private static final String CONSUMER_LIB = read("consumer.lib.lua");

  public static final Script PUBLISH = perConsumer("publish", true);
  public static final Script RETRACT = perConsumer("retract", true);
  public static final Script POLL = perConsumer("poll", true);
  public static final Script ACK = perConsumer("ack", true);
  public static final Script REDELIVER = perConsumer("redeliver", true);
  public static final Script METADATA = perConsumer("metadata", false);
  public static final Script RELEASE = perConsumer("release", true);
  public static final Script STILL_OUT = perConsumer("still_out", false);
  public static final Script WAKE_NEXT = perConsumer("wake_next", false);
  public static final Script ADMIT = perConsumer("admit", false);
  public static final Script NACK = perConsumer("nack", true);
  public static final Script EXTEND = perConsumer("extend", false);
  public static final Script FAILED_POLL = perConsumer("failed_poll", false);
  public static final Script FAILED_ACK = perConsumer("failed_ack", false);
  public static final Script REDRIVE = perConsumer("redrive", true);
  public static final Script FAILED_SIZES = perConsumer("failed_sizes", false);
  public static final Script HISTORY = perConsumer("history", false);
  public static final Script SPOOL_FIGURES = perConsumer("spool_figures", false);
  public static final Script CONSUMER_PUT = perConsumer("consumer_put", false);
  public static final Script CONSUMER_DELETE = perConsumer("consumer_delete", true);
  public static final Script DUE_LOWER = standalone("due_lower");
  public static final Script DUE_UPDATE = standalone("due_update");
  public static final Script DUE_LIST = standalone("due_list");
  public static final Script IDEM_CLAIM = standalone("idem_claim");
  public static final Script IDEM_SETTLE = standalone("idem_settle");
  public static final Script QUOTA_RESERVE = ledger("quota_reserve");
  public static final Script QUOTA_SETTLE = ledger("quota_settle");
  public static final Script QUOTA_TAKE_UNACKED = ledger("quota_take_unacked");

  private final String name;
  private final String body;
  private final String sha;
  private final boolean changesSpool;

  private Script(String name, String body, boolean changesSpool) {
    this.name = name;
    this.body = body;
    this.sha = sha1(body);
    this.changesSpool = changesSpool;
  }

  /** @param changesSpool whether it may change the consumer's spooled bytes or events */
  private static Script perConsumer(String name, boolean changesSpool) {
    return new Script(name, TIME_LIB + "\n" + CONSUMER_LIB + "\n" + read(name + ".lua"), changesSpool);
  }

  private static Script standalone(String name) {
    return new Script(name, TIME_LIB + "\n" + read(name + ".lua"), false);
  }

  private static Script ledger(String name) {
    return new Script(name, TIME_LIB + "\n" + read("ledger.lib.lua") + "\n" + read(name + ".lua"), false);
  }

  /** True for per-consumer scripts that may change what the consumer has spooled. */
  public boolean changesSpool() {
    return changesSpool;
  }

  public String name() {
    return name;
  }

  String body() {
    return body;
  }

  String sha() {
    return sha;
  }

  private static String read(String file) {
    try (InputStream in = Script.class.getResourceAsStream("/lua/" + file)) {
      if (in == null) {
        throw new IllegalStateException("missing script resource lua/" + file);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String sha1(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
