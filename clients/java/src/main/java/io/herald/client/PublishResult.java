package io.herald.client;

/**
 * A confirmed event: stored for every matching consumer.
 *
 * @param eventId       the gateway's id of the event
 * @param matched       how many consumers it was stored for (0: none matched, nothing kept)
 * @param duplicate     true when its idempotencyKey had been published already (a retry): the first
 *                      publish's eventId, nothing stored again
 * @param correlationId the publisher's correlationId, or null
 */
public record PublishResult(String eventId, int matched, boolean duplicate, String correlationId) {}
