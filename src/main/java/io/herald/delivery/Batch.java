package io.herald.delivery;

import io.vertx.core.buffer.Buffer;

/** A poll's answer, already encoded as the protocol's JSON body. */
public record Batch(Buffer json, int size) {}
