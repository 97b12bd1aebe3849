package io.herald.deadletter;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link RedriveQuotaIT}'s tests on a Redis Cluster of 3 primaries with a replica each: the ledger in 16 shards. */
@OnTopology(Topology.CLUSTER)
class RedriveQuotaOnClusterIT extends RedriveQuotaIT {}
