package io.herald.testing;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * The Redis a {@link GatewayTest} class runs on, instead of one server: so a subclass with this
 * annotation runs its parent's tests again on a Sentinel set or a Redis Cluster.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface OnTopology {
  Topology value();

  enum Topology {
    /** 1 primary, 2 replicas, 3 sentinels ({@link TestSentinels}). */
    SENTINEL,
    /** 3 primaries with a replica each ({@link TestCluster}). */
    CLUSTER
  }
}
