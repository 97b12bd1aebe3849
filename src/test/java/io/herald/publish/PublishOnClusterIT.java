package io.herald.publish;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link PublishIT}'s tests on a Redis Cluster of 3 primaries with a replica each. */
@OnTopology(Topology.CLUSTER)
class PublishOnClusterIT extends PublishIT {}
