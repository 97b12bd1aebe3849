package io.herald.delivery;

import io.vertx.core.buffer.Buffer;
import java.util.List;

/**
 * A poll's answer.
 *
 * @param json   the protocol's batch body: {@code {"batchAckId":..,"events":[..]}}
 * @param size   how many events it holds
 * @param ackIds the ackIds handed out, in order (empty in auto ack mode)
 */
public record Batch(Buffer json, int size, List<String> ackIds) {}
