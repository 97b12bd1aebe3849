package io.herald.auth;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.herald.topic.TopicPattern;
import io.vertx.core.json.JsonObject;
import java.util.List;

/**
 * Who a request comes from, as its credentials told, and what it may do: publish to topics
 * matching {@code publish}, consume from the consumers matching {@code consume} (null: any),
 * administer if {@code admin}; until {@code expiresAtMs} (epoch ms; null: its credentials do not
 * expire, as an API key's). The checks throw the protocol's 403s.
 */
public record Caller(String name, List<TopicPattern> publish, List<ConsumerPattern> consume, boolean admin,
    Long expiresAtMs) {
  /** The caller of an open gateway, which has no credentials configured: it may do everything. */
  public static final Caller ANYONE = new Caller("anyone", List.of(TopicPattern.parse(">")), null, true, null);

  /** The caller named {@code name} (a key's name, a token's subject), with these grants. */
  public static Caller of(String name, Grants grants) {
    return new Caller(name, grants.publish(), grants.consume(), grants.admin(), null);
  }

  /** The same caller, whose credentials end at {@code epochMs} (a token's expiry). */
  public Caller expiringAt(long epochMs) {
    return new Caller(name, publish, consume, admin, epochMs);
  }

  public void checkPublish(String topic) {
    if (publish.stream().noneMatch(pattern -> pattern.matches(topic))) {
      throw new ApiException(ErrorCode.PUBLISH_ACL_DENIED, "'" + name + "' may not publish to topic '" + topic + "'",
          new JsonObject().put("topic", topic));
    }
  }

  public void checkConsume(String consumer) {
    if (consume != null && consume.stream().noneMatch(grant -> grant.matches(consumer))) {
      throw new ApiException(ErrorCode.CONSUME_ACL_DENIED, "'" + name + "' may not consume from '" + consumer + "'",
          new JsonObject().put("consumer", consumer));
    }
  }

  public void checkAdmin() {
    if (!admin) {
      throw new ApiException(ErrorCode.ADMIN_ACL_DENIED, "'" + name + "' may not administer the gateway");
    }
  }
}
