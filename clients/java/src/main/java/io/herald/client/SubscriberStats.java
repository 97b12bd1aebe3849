package io.herald.client;

/**
 * A subscriber's counts so far.
 *
 * @param received    deliveries taken from the gateway
 * @param acked       deliveries acked (by the handler or on its return)
 * @param nacked      deliveries nacked or rejected (by the handler, on a failure, or at close)
 * @param extensions  deadline extensions sent for deliveries still unsettled
 * @param connections connections (or, polling, polls that followed a failure) that succeeded
 * @param throttled   429s met (refused polls and upgrades, notices): the consumer was over its rate limit
 */
public record SubscriberStats(long received, long acked, long nacked, long extensions, long connections, long throttled) {}
