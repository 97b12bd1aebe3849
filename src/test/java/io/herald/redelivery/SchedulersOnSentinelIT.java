package io.herald.redelivery;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link SchedulersIT}'s tests on a Redis Sentinel set: 1 primary, 2 replicas, 3 sentinels. */
@OnTopology(Topology.SENTINEL)
class SchedulersOnSentinelIT extends SchedulersIT {}
