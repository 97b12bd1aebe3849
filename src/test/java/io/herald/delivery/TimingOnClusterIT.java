package io.herald.delivery;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link TimingIT} on a 3-primary Redis Cluster. */
@OnTopology(Topology.CLUSTER)
class TimingOnClusterIT extends TimingIT {}
