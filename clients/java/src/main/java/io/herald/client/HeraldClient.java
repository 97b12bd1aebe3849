package io.herald.client;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * A client of a Herald gateway: one or more of its nodes (any node serves any request; the client
 * moves to the next when one fails) and the credentials to use. It makes publishers and subscribers,
 * which share its HTTP connections and timer thread.
 *
 * <pre>{@code
 * try (HeraldClient herald = HeraldClient.builder().endpoint("http://localhost:8080").build();
 *      Publisher publisher = herald.publisher()) {
 *   publisher.publish("orders/eu/created", Event.of(Map.of("total", 12.5)).key("c-7")).join();
 * }
 * }</pre>
 */
public final class HeraldClient implements AutoCloseable {
  private final Gateway gateway;
  private final ScheduledExecutorService timers;

  private HeraldClient(Builder builder) {
    this.gateway = new Gateway(builder.endpoints, builder.token, builder.connectTimeout, builder.requestTimeout);
    this.timers = Executors.newSingleThreadScheduledExecutor(task -> {
      Thread thread = new Thread(task, "herald-client-timers");
      thread.setDaemon(true);
      return thread;
    });
  }

  public static Builder builder() {
    return new Builder();
  }

  public Publisher publisher() {
    return publisher(PublisherSettings.defaults());
  }

  public Publisher publisher(PublisherSettings settings) {
    return new Publisher(gateway, settings, timers);
  }

  /** A subscriber over a WebSocket in push mode; call {@link Subscriber#start}. */
  public Subscriber subscriber(String consumer, EventHandler handler) {
    return subscriber(consumer, handler, SubscriberSettings.defaults());
  }

  public Subscriber subscriber(String consumer, EventHandler handler, SubscriberSettings settings) {
    return new PushSubscriber(gateway, consumer, handler, settings, timers);
  }

  /** A subscriber by HTTP long polling, for where WebSockets are not allowed; call {@link Subscriber#start}. */
  public Subscriber pollingSubscriber(String consumer, EventHandler handler, SubscriberSettings settings) {
    return new PollingSubscriber(gateway, consumer, handler, settings, timers);
  }

  /** Stops the timer thread; close publishers and subscribers first. */
  @Override
  public void close() {
    timers.shutdownNow();
  }

  /** Where the gateway is and how to reach it. */
  public static final class Builder {
    private final List<URI> endpoints = new ArrayList<>();
    private String token;
    private Duration connectTimeout = Duration.ofSeconds(5);
    private Duration requestTimeout = Duration.ofSeconds(30);

    private Builder() {}

    /** A gateway node, e.g. {@code http://herald:8080}; several are tried in turn. */
    public Builder endpoint(String url) {
      endpoints.add(URI.create(url.endsWith("/") ? url : url + "/"));
      return this;
    }

    /** An API key or a JWT, sent as {@code Authorization: Bearer}. */
    public Builder token(String token) {
      this.token = token;
      return this;
    }

    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = timeout;
      return this;
    }

    /** How long a call (other than a long poll) waits for its answer before it counts as lost. */
    public Builder requestTimeout(Duration timeout) {
      this.requestTimeout = timeout;
      return this;
    }

    public HeraldClient build() {
      return new HeraldClient(this);
    }
  }
}
