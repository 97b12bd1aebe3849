package io.herald.auth;

/** Who a request comes from, as its credentials told. */
public record Caller(String name) {
  /** The caller of an open gateway, which has no credentials configured. */
  public static final Caller ANYONE = new Caller("anyone");
}
