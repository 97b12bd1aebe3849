package io.herald.http;

import io.herald.ack.Acks;
import io.herald.ack.Settlements;
import io.herald.copy.Copies;
import io.herald.delivery.PollService;
import io.herald.lifecycle.Drain;
import io.herald.publish.PublishService;
import io.herald.quota.HoldSettler;
import io.herald.store.RedisStore;
import io.herald.ws.WebSocketGateway;

/**
 * What one HTTP verticle instance serves requests with, built for it by {@code HeraldNode} on the
 * instance's own pipelined Redis connection ({@code store}); its parked long polls are woken at
 * {@code waiterPrefix} ("node/instance"); {@code drain} and {@code copies} are the node's, shared by its
 * instances.
 */
public record ApiServices(RedisStore store, PublishService publisher, PollService poller, Acks acks,
    Settlements settlements, HoldSettler settler, WebSocketGateway sockets, String waiterPrefix, Drain drain,
    Copies copies) {}
