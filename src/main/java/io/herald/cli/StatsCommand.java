package io.herald.cli;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code stats}: every consumer's counts and the gateway's spool, as a table or as JSON. */
@Command(name = "stats", mixinStandardHelpOptions = true,
    description = "Shows every consumer's backlog, unacked, stale, dead letters and errors, and the gateway's spool "
        + "(an admin grant, and a consume grant on the consumers, where credentials are configured).",
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:shown", "1:refused (credentials, grants)", "2:wrong command line", "3:the gateway unreachable"})
final class StatsCommand implements Callable<Integer> {
  private static final String ROW = "%-32s %10s %10s %8s %12s %8s %16s%n";

  @Mixin
  GatewayOptions gateway;

  @Option(names = "--json", description = "one JSON object: {\"stats\":{..},\"consumers\":[metadata..]}")
  boolean json;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    GatewayClient client = gateway.client();
    try {
      GatewayClient.Answer stats = client.get("/v1/admin/stats");
      GatewayClient.Answer list = stats.ok() ? client.get("/v1/admin/consumers") : stats;
      if (!list.ok()) {
        err.println("stats refused (" + list.errorCode() + "): " + list.errorMessage());
        return ExitCodes.REFUSED;
      }
      JsonArray consumers = new JsonArray();
      for (Object c : list.body().getJsonArray("consumers")) {
        String name = ((JsonObject) c).getString("name");
        GatewayClient.Answer metadata = client.get("/v1/consumers/" + name + "/metadata");
        if (!metadata.ok()) {
          err.println(name + ": " + metadata.errorCode() + ": " + metadata.errorMessage());
          return ExitCodes.REFUSED;
        }
        consumers.add(metadata.body());
      }
      if (json) {
        out.println(new JsonObject().put("stats", stats.body()).put("consumers", consumers).encode());
      } else {
        table(out, stats.body(), consumers);
      }
      return ExitCodes.OK;
    } catch (GatewayClient.Unreachable e) {
      err.println("the gateway does not answer: " + e.getMessage());
      return ExitCodes.UNAVAILABLE;
    }
  }

  private static void table(PrintWriter out, JsonObject stats, JsonArray consumers) {
    out.printf(ROW, "CONSUMER", "BACKLOG", "UNACKED", "STALE", "DEAD-LETTERS", "ERRORS", "OLDEST-UNACKED");
    for (Object c : consumers) {
      JsonObject m = (JsonObject) c;
      out.printf(ROW, m.getString("consumer"), m.getLong("backlog"), m.getLong("unacked"), m.getLong("stale"),
          m.getLong("deadLetters"), m.getLong("errors"), m.getLong("unacked") == 0 ? "-" : m.getLong("oldestUnackedAgeMs") + " ms");
    }
    JsonObject spool = stats.getJsonObject("spool");
    JsonObject unacked = stats.getJsonObject("unacked");
    out.printf("spool: %d bytes%s, alert %s; unacked: %d%s, alert %s%n", spool.getLong("usedBytes"),
        spool.getValue("quotaBytes") == null ? "" : " of " + spool.getLong("quotaBytes"), spool.getString("alert"),
        unacked.getLong("used"), unacked.getValue("limit") == null ? "" : " of " + unacked.getLong("limit"),
        unacked.getString("alert"));
  }
}
