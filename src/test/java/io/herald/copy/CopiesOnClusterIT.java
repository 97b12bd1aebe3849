package io.herald.copy;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link CopiesIT}'s tests on a Redis Cluster of 3 primaries with a replica each: copies live in slots of their own. */
@OnTopology(Topology.CLUSTER)
class CopiesOnClusterIT extends CopiesIT {}
