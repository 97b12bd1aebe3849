package io.herald.ws;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link PushIT}'s tests on a Redis Cluster of 3 primaries with a replica each. */
@OnTopology(Topology.CLUSTER)
class PushOnClusterIT extends PushIT {}
