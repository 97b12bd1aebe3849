package io.herald.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code consume CONSUMER}: polls a consumer, printing its events as JSON lines, and acks them. */
@Command(name = "consume", mixinStandardHelpOptions = true,
    description = {"Polls a consumer and prints each event as one JSON line, as delivered (ackId, eventId, topic, "
        + "key, headers, payload, deliveryCount, ...). Each batch is acked once printed (--ack batch), or left "
        + "unacked to come again after its deadline (--ack none).",
        "Stops at the first poll that finds nothing, unless --follow; a blocked consumer (429) waits out Retry-After."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:done (nothing left, or --count events printed)", "1:refused (unknown consumer, credentials, grants)",
        "2:wrong command line", "3:the gateway unreachable or unavailable after 3 tries"})
final class ConsumeCommand implements Callable<Integer> {
  @Mixin
  GatewayOptions gateway;

  @Parameters(index = "0", paramLabel = "CONSUMER", description = "the consumer's name")
  String consumer;

  @Option(names = {"-f", "--follow"}, description = "keep polling when there is nothing (until Ctrl-C or --count); retries a gateway that is away")
  boolean follow;

  @Option(names = {"-n", "--count"}, paramLabel = "N", defaultValue = "0", description = "stop after N events (0: no limit)")
  long count;

  @Option(names = "--max", paramLabel = "N", defaultValue = "0",
      description = "most events per poll, 1..1000 (default: the consumer's maxPollRecords)")
  int max;

  @Option(names = "--wait", paramLabel = "MS", description = "how long a poll waits for events, 0..20000 (default: 2000, 20000 with --follow)")
  Long waitMs;

  @Option(names = "--ack", paramLabel = "MODE", defaultValue = "batch",
      description = "batch (ack each batch once printed) or none (default: ${DEFAULT-VALUE})")
  String ack;

  @Spec
  CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    PollLoop loop = new PollLoop(gateway.client(), consumer, spec.commandLine().getOut(), spec.commandLine().getErr());
    loop.follow = follow;
    loop.count = Options.atLeast(spec, "--count", count, 0);
    loop.maxEvents = (int) Options.within(spec, "--max", max, 0, 1000);
    loop.waitMs = Options.within(spec, "--wait", waitMs == null ? (follow ? 20_000 : 2_000) : waitMs, 0, 20_000);
    loop.ack = switch (ack) {
      case "batch" -> PollLoop.Ack.BATCH;
      case "none" -> PollLoop.Ack.NONE;
      default -> throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--ack is batch or none, not " + ack);
    };
    return loop.run();
  }
}
