package io.herald.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code tail PATTERN...}: prints the events published from now on to topics matching the patterns,
 * through a consumer of its own (auto acked, kept one minute) that it deletes when it stops, so it
 * takes nothing from any other consumer.
 */
@Command(name = "tail", mixinStandardHelpOptions = true,
    description = {"Prints each event published from now on to a topic matching a PATTERN ('*' one level, '>' the rest), "
        + "as one JSON line, until Ctrl-C or --count.",
        "It reads through a consumer of its own (ackMode auto, retention 1 min), created now and deleted when it stops: "
            + "other consumers lose nothing. Needs an admin grant where credentials are configured."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:stopped after --count events", "1:refused (a bad pattern, credentials, grants)",
        "2:wrong command line", "3:the gateway unreachable"})
final class TailCommand implements Callable<Integer> {

  @Mixin
  GatewayOptions gateway;

  @Parameters(arity = "1..100", paramLabel = "PATTERN", description = "topic patterns, e.g. orders/> or orders/*/created")
  List<String> patterns;

  @Option(names = {"-n", "--count"}, paramLabel = "N", defaultValue = "0", description = "stop after N events (0: no limit)")
  long count;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter err = spec.commandLine().getErr();
    GatewayClient client = gateway.client();
    String consumer = "tail-" + RunId.next();
    String path = "/v1/admin/consumers/" + consumer;
    JsonObject settings = new JsonObject().put("topics", new JsonArray(patterns)).put("ackMode", "auto")
        .put("retentionMs", 60_000).put("maxPollRecords", 1000);
    try {
      GatewayClient.Answer created = client.put(path, settings);
      if (!created.ok()) {
        err.println("tail refused (" + created.errorCode() + "): " + created.errorMessage());
        return ExitCodes.REFUSED;
      }
    } catch (GatewayClient.Unreachable e) {
      err.println("the gateway does not answer: " + e.getMessage());
      return ExitCodes.UNAVAILABLE;
    }
    AtomicBoolean deleted = new AtomicBoolean();
    Runnable delete = () -> {
      if (deleted.compareAndSet(false, true)) {
        try {
          client.delete(path);
        } catch (Exception e) {
          // the consumer then lives on, holding at most a minute of events (its retention)
          err.println("could not delete " + consumer + ": " + e);
          err.flush();
        }
      }
    };
    Thread onCtrlC = new Thread(delete, "herald-tail-cleanup");
    Runtime.getRuntime().addShutdownHook(onCtrlC);
    try {
      PollLoop loop = new PollLoop(client, consumer, spec.commandLine().getOut(), err);
      loop.follow = true;
      loop.count = Options.atLeast(spec, "--count", count, 0);
      loop.waitMs = 20_000;
      loop.ack = PollLoop.Ack.NONE;
      return loop.run();
    } finally {
      delete.run();
      try {
        Runtime.getRuntime().removeShutdownHook(onCtrlC);
      } catch (IllegalStateException shuttingDown) {
        // the hook is running or has run
      }
    }
  }
}
