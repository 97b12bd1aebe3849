package io.herald.metrics;

import io.herald.testing.OnTopology;
import io.herald.testing.OnTopology.Topology;

/**
 * {@link MetricsIT}'s tests on a Redis Cluster of 3 primaries with a replica each: a pass reads
 * each primary's consumers in calls of their own.
 */
@OnTopology(Topology.CLUSTER)
class MetricsOnClusterIT extends MetricsIT {}
