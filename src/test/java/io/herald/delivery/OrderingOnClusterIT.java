package io.herald.delivery;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link OrderingIT}'s tests on a Redis Cluster of 3 primaries with a replica each. */
@OnTopology(Topology.CLUSTER)
class OrderingOnClusterIT extends OrderingIT {}
