package io.herald.quota;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/** {@link GatewayQuotaIT}'s tests on a Redis Cluster of 3 primaries with a replica each: the ledger in 16 shards. */
@OnTopology(Topology.CLUSTER)
class GatewayQuotaOnClusterIT extends GatewayQuotaIT {}
