package io.herald.auth;

import io.herald.settings.SettingsReader;
import java.util.ArrayList;
import java.util.List;

/**
 * How JWT bearer tokens are verified ({@code auth.jwt}): the keys that may have signed them, the
 * issuer and audience they must name, and the claim that carries their grants (same shape as an API
 * key's: {@code {"publish": [...], "consume": [...], "admin": false}}).
 *
 * @param keys         verification keys; at least one
 * @param issuer       the {@code iss} tokens must carry, or null for any
 * @param audience     an {@code aud} tokens must carry, or null for any
 * @param grantsClaim  the claim holding the grants (default {@code herald})
 * @param leewaySeconds clock skew allowed on {@code exp}/{@code nbf}/{@code iat} (0..300, default 5)
 */
public record JwtSettings(List<Key> keys, String issuer, String audience, String grantsClaim, int leewaySeconds) {
  private static final List<String> ASYMMETRIC = List.of("RS256", "RS384", "RS512", "ES256", "ES384", "ES512",
      "PS256", "PS384", "PS512");
  private static final List<String> SYMMETRIC = List.of("HS256", "HS384", "HS512");

  /**
   * One verification key: a PEM public key for RS/ES/PS algorithms, or a shared secret for HS ones
   * (which can also sign: prefer public keys, and keep a secret out of files others can read).
   */
  public record Key(String algorithm, String material) {
    @Override
    public String toString() {
      return "Key[" + algorithm + ", ***]";
    }
  }

  /** Reads {@code auth.jwt}, reporting bad fields through {@code reader}. */
  public static JwtSettings read(SettingsReader reader) {
    List<Key> keys = new ArrayList<>();
    SettingsReader keySection = reader.section("keys");
    reader.members("keys").keySet().forEach(id -> {
      SettingsReader key = keySection.section(id);
      String algorithm = key.oneOf("algorithm", "RS256", concat(ASYMMETRIC, SYMMETRIC));
      boolean symmetric = SYMMETRIC.contains(algorithm);
      String material = key.text(symmetric ? "secret" : "publicKey", null);
      if (material == null) {
        key.error(symmetric ? "secret" : "publicKey", symmetric
            ? "is required for " + algorithm + " (at least 32 characters)"
            : "is required for " + algorithm + ": the PEM of the public key");
      } else if (symmetric && material.length() < 32) {
        key.error("secret", "must be at least 32 characters");
      }
      key.finish();
      keys.add(new Key(algorithm, material));
    });
    if (keys.isEmpty()) {
      reader.error("keys", "at least one verification key is required");
    }
    JwtSettings settings = new JwtSettings(List.copyOf(keys), reader.text("issuer", null), reader.text("audience", null),
        reader.text("grantsClaim", "herald"), (int) reader.integer("leewaySeconds", 5, 0, 300));
    reader.finish();
    return settings;
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
