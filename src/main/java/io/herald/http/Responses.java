package io.herald.http;

import io.herald.protocol.ApiException;
import io.herald.protocol.ErrorCode;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpHeaders;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import java.util.function.Supplier;

/** Writing answers: JSON bodies, and every failure in the protocol's error envelope. */
public final class Responses {
  private static final System.Logger LOG = System.getLogger(Responses.class.getName());
  private static final String JSON = "application/json";

  private Responses() {}

  /** Runs {@code action} (which may throw) and answers 200 with its JSON, or the error. */
  public static void reply(RoutingContext ctx, Supplier<Future<JsonObject>> action) {
    replyBuffer(ctx, () -> action.get().map(JsonObject::toBuffer));
  }

  public static void replyBuffer(RoutingContext ctx, Supplier<Future<Buffer>> action) {
    Future<Buffer> result;
    try {
      result = action.get();
    } catch (RuntimeException e) {
      result = Future.failedFuture(e);
    }
    result.onComplete(done -> {
      if (done.succeeded()) {
        send(ctx, 200, done.result());
      } else {
        error(ctx, ApiException.from(done.cause(), true));
      }
    });
  }

  public static void json(RoutingContext ctx, int status, JsonObject body) {
    send(ctx, status, body.toBuffer());
  }

  public static void send(RoutingContext ctx, int status, Buffer body) {
    if (ctx.response().ended() || ctx.response().closed()) {
      return;
    }
    ctx.response().setStatusCode(status).putHeader(HttpHeaders.CONTENT_TYPE, JSON).end(body);
  }

  public static void error(RoutingContext ctx, ApiException error) {
    if (ctx.response().closed()) {
      return; // the client went away: nobody to tell
    }
    if (error.code() == ErrorCode.INTERNAL_ERROR) {
      LOG.log(System.Logger.Level.ERROR, "Internal error on " + ctx.request().method() + " " + ctx.request().path());
    }
    if (error.code() == ErrorCode.TOO_MANY_REQUESTS && !ctx.response().headWritten()) {
      ctx.response().putHeader(HttpHeaders.RETRY_AFTER, String.valueOf(error.retryAfterSeconds()));
    }
    json(ctx, error.code().status(), error.toJson());
  }

  /** The router's failure handler: body limits, malformed input and anything thrown. */
  public static void failure(RoutingContext ctx) {
    Throwable failure = ctx.failure();
    if (failure != null && !(failure instanceof ApiException)) {
      LOG.log(System.Logger.Level.ERROR, "Failure on " + ctx.request().path(), failure);
    }
    ApiException error = switch (ctx.statusCode()) {
      case 413 -> new ApiException(ErrorCode.MESSAGE_TOO_LARGE, "The request body is over its size limit");
      case 400 -> failure instanceof ApiException api ? api : ApiException.invalid("body", "malformed request");
      case 404 -> new ApiException(ErrorCode.NOT_FOUND, "Not found");
      default -> failure == null ? new ApiException(ErrorCode.INTERNAL_ERROR, "Internal error")
          : ApiException.from(failure, true);
    };
    error(ctx, error);
  }
}
