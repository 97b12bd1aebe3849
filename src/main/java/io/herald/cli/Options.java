package io.herald.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** Range checks of numeric options, refused as usage errors (exit 2) naming the option. */
final class Options {
  private Options() {}

  static long within(CommandSpec spec, String option, long value, long min, long max) {
    if (value < min || value > max) {
      throw new ParameterException(spec.commandLine(), option + " must be in " + min + ".." + max + ", not " + value);
    }
    return value;
  }

  static long atLeast(CommandSpec spec, String option, long value, long min) {
    return within(spec, option, value, min, Long.MAX_VALUE);
  }
}
