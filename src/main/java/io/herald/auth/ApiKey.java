package io.herald.auth;

import io.herald.settings.SettingsReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;

/**
 * An API key as the configuration holds it: its name, the SHA-256 of its secret (never the secret),
 * and its grants: topic patterns it may publish to, consumers it may consume from, admin or not.
 */
public record ApiKey(String name, byte[] sha256, Grants grants) {
  private static final SecureRandom RANDOM = new SecureRandom();

  /** Reads one key of {@code auth.keys}, reporting bad fields through {@code reader}. */
  public static ApiKey read(String name, SettingsReader reader) {
    String hash = reader.text("sha256", "");
    byte[] sha256 = new byte[0];
    if (hash.matches("[0-9a-f]{64}")) {
      sha256 = HexFormat.of().parseHex(hash);
    } else {
      reader.error("sha256", "must be the 64 lowercase hex digits of the secret's SHA-256 (java -jar herald.jar make-key)");
    }
    Grants grants = Grants.read(reader);
    reader.finish();
    return new ApiKey(name, sha256, grants);
  }

  /** A new random secret, to be given to the key's holder once. */
  public static String newSecret() {
    byte[] secret = new byte[32];
    RANDOM.nextBytes(secret);
    return "hk_" + Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
  }

  /** The SHA-256 of a presented secret. */
  public static byte[] hash(String secret) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
