package io.herald.store;

/**
 * How many replicas must have taken a write before Herald confirms it ({@code redis.waitReplicas}),
 * and how long Redis' {@code WAIT} may take for them ({@code redis.waitTimeoutMs}).
 *
 * @param replicas  0 (the default): confirmed once the primary ran it; else that many replicas
 * @param timeoutMs the WAIT's own limit; a shortfall then answers OUTCOME_UNKNOWN (the write stands
 *                  on the primary but may be lost with it)
 */
public record ReplicaWait(int replicas, long timeoutMs) {
  public static final ReplicaWait NONE = new ReplicaWait(0, 0);

  public boolean waits() {
    return replicas > 0;
  }
}
