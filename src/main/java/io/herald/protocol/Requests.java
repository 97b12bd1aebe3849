package io.herald.protocol;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.net.URI;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reading request bodies: every problem becomes INVALID_REQUEST naming the field. */
public final class Requests {
  /** 32 random hex digits, then (for a poll's batch) 3 hex digits of its size. */
  private static final Pattern BATCH_ACK_ID = Pattern.compile("[0-9a-f]{32}(?:[0-9a-f]{3})?");

  private Requests() {}

  /**
   * The group {@code group} of {@code route} in the path as the client sent it (percent-decoded,
   * not normalized): the router's path parameters come from the normalized path, which collapses
   * {@code //} and would hide an empty topic level. Falls back to the path parameter.
   */
  public static String rawPathGroup(RoutingContext ctx, Pattern route, String group) {
    String path;
    try {
      path = URI.create("http://h" + ctx.request().path()).getPath();
    } catch (IllegalArgumentException e) {
      return ctx.pathParam(group); // not a path java.net.URI reads: the router's reading stands
    }
    Matcher matcher = route.matcher(path);
    return matcher.matches() ? matcher.group(group) : ctx.pathParam(group);
  }

  /** The body as a JSON object; an empty body is an empty object. */
  public static JsonObject object(RoutingContext ctx) {
    Buffer body = ctx.body().buffer();
    if (body == null || body.length() == 0) {
      return new JsonObject();
    }
    return JsonLimits.object(body, "body");
  }

  public static Long integer(JsonObject body, String field, long min, long max) {
    Object value = body.getValue(field);
    if (value == null) {
      return null;
    }
    Long exact = JsonLimits.integerIn(value, min, max);
    if (exact != null) {
      return exact;
    }
    throw ApiException.invalid(field, "must be an integer in " + min + ".." + max);
  }

  /** An optional array of strings, at most {@code max} of them; absent is empty. */
  public static JsonArray strings(JsonObject body, String field, int max) {
    Object value = body.getValue(field);
    if (value == null) {
      return new JsonArray();
    }
    if (value instanceof JsonArray array && array.size() <= max
        && array.stream().allMatch(item -> item instanceof String s && s.length() <= 512)) {
      return array;
    }
    throw ApiException.invalid(field, "must be an array of at most " + max + " strings");
  }

  public static void onlyFields(JsonObject body, String... allowed) {
    List<String> names = List.of(allowed);
    for (String field : body.fieldNames()) {
      if (!names.contains(field)) {
        throw ApiException.invalid(field, "unknown field");
      }
    }
  }

  public static boolean isBatchAckId(String id) {
    return BATCH_ACK_ID.matcher(id).matches();
  }

  /**
   * The size a poll's batchAckId says its batch has (a hint for packing acks into script calls,
   * which bound their work themselves), or {@code otherwise} for one that says none.
   */
  public static int batchSize(String batchAckId, int otherwise) {
    return batchAckId.length() == 35 ? Math.max(1, Integer.parseInt(batchAckId.substring(32), 16)) : otherwise;
  }
}
