package io.herald.cli;

import picocli.CommandLine.Option;

/** Which gateway a command talks to, and with what credentials. */
final class GatewayOptions {
  @Option(names = "--url", paramLabel = "URL", defaultValue = "${env:HERALD_URL:-http://localhost:8080}",
      description = "the gateway (default: $HERALD_URL, else ${DEFAULT-VALUE})")
  String url;

  @Option(names = "--token", paramLabel = "TOKEN", defaultValue = "${env:HERALD_TOKEN}",
      description = "an API key or JWT, sent as Authorization: Bearer (default: $HERALD_TOKEN)")
  String token;

  GatewayClient client() {
    return new GatewayClient(url, token);
  }
}
