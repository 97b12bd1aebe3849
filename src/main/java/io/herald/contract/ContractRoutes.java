package io.herald.contract;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * {@code GET /v1/openapi.json} (the HTTP API, OpenAPI 3.1) and {@code GET /v1/asyncapi.json} (the
 * WebSocket frames, AsyncAPI 3.0): the contract as the jar holds it, public like the protocol itself.
 */
public final class ContractRoutes {
  private static final Buffer OPENAPI = resource("openapi.json");
  private static final Buffer ASYNCAPI = resource("asyncapi.json");

  public void mount(Router router) {
    router.get("/v1/openapi.json").handler(ctx -> ctx.response()
        .putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(OPENAPI));
    router.get("/v1/asyncapi.json").handler(ctx -> ctx.response()
        .putHeader(HttpHeaders.CONTENT_TYPE, "application/json").end(ASYNCAPI));
  }

  private static Buffer resource(String name) {
    try (InputStream in = ContractRoutes.class.getResourceAsStream("/io/herald/contract/" + name)) {
      if (in == null) {
        throw new IllegalStateException("the jar holds no " + name);
      }
      // served without the file's indentation: a third of the bytes
      return new JsonObject(new String(in.readAllBytes(), StandardCharsets.UTF_8)).toBuffer();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
