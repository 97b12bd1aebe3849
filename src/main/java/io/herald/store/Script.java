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
  private static final String CONSUMER_LIB = read("consumer.lib.lua");

  public static final Script PUBLISH = perConsumer("publish");
  public static final Script POLL = perConsumer("poll");
  public static final Script ACK = perConsumer("ack");
  public static final Script REDELIVER = perConsumer("redeliver");
  public static final Script METADATA = perConsumer("metadata");
  public static final Script RELEASE = perConsumer("release");
  public static final Script WAKE_NEXT = perConsumer("wake_next");
  public static final Script ADMIT = perConsumer("admit");
  public static final Script NACK = perConsumer("nack");
  public static final Script EXTEND = perConsumer("extend");
  public static final Script FAILED_POLL = perConsumer("failed_poll");
  public static final Script FAILED_ACK = perConsumer("failed_ack");
  public static final Script REDRIVE = perConsumer("redrive");
  public static final Script HISTORY = perConsumer("history");
  public static final Script CONSUMER_PUT = perConsumer("consumer_put");
  public static final Script CONSUMER_DELETE = perConsumer("consumer_delete");
  public static final Script DUE_LOWER = standalone("due_lower");
  public static final Script DUE_UPDATE = standalone("due_update");
  public static final Script DUE_LIST = standalone("due_list");
  public static final Script EVENT_IDS = standalone("event_ids");

  private final String name;
  private final String body;
  private final String sha;

  private Script(String name, String body) {
    this.name = name;
    this.body = body;
    this.sha = sha1(body);
  }

  private static Script perConsumer(String name) {
    return new Script(name, CONSUMER_LIB + "\n" + read(name + ".lua"));
  }

  private static Script standalone(String name) {
    return new Script(name, read(name + ".lua"));
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
