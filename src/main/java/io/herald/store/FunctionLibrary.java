package io.herald.store;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Scripts sharing one Lua library, as a Redis function library ({@code FUNCTION LOAD}, Redis 7 and
 * later): the library's code runs once when it is loaded, and each script is a function that starts
 * with {@code begin_call(keys, args)} (begin.lib.lua). The library's name carries a hash of
 * what it holds, so nodes of different versions each call their own.
 */
final class FunctionLibrary {
  private final String name;
  private final String code;
  /** Each script's function name, made once: it is asked at every call. */
  private final Map<Script, String> functions = new IdentityHashMap<>();

  FunctionLibrary(String shared, List<Script> scripts) {
    StringBuilder content = new StringBuilder(shared);
    // flags too: a library whose functions' flags changed is another library
    scripts.forEach(script -> content.append('\n').append(script.name()).append(' ').append(script.writes().flags)
        .append('\n').append(script.own()));
    this.name = "herald_" + sha1(content.toString()).substring(0, 12);
    StringBuilder code = new StringBuilder("#!lua name=").append(name).append('\n').append(shared).append('\n');
    for (Script script : scripts) {
      functions.put(script, name + "_" + script.name());
      code.append("redis.register_function{function_name = '").append(functionOf(script))
          .append("', flags = {").append(script.writes().flags).append("}, callback = function(keys, args)\n")
          .append("begin_call(keys, args)\n").append(script.own()).append("\nend}\n");
    }
    this.code = code.toString();
  }

  /** The function a script is, or null when it is not in this library. */
  String functionOf(Script script) {
    return functions.get(script);
  }

  String name() {
    return name;
  }

  /** What {@code FUNCTION LOAD} takes. */
  String code() {
    return code;
  }

  private static String sha1(String text) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
