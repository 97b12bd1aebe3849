package io.herald.redelivery;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link SchedulersIT}'s tests on a Redis Cluster of 3 primaries with a replica each. */
@OnTopology(Topology.CLUSTER)
class SchedulersOnClusterIT extends SchedulersIT {}
