package io.herald.cli;

import java.io.InputStream;
import java.io.PrintWriter;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The command line of the jar beside the gateway itself: {@code java -jar herald.jar COMMAND ...}
 * against a running gateway ({@code --url}, {@code --token}). Without a command the jar starts a node.
 */
@Command(name = "java -jar herald.jar", mixinStandardHelpOptions = true, versionProvider = HeraldCli.Version.class,
    subcommands = {PublishCommand.class, ConsumeCommand.class, TailCommand.class, StatsCommand.class, BenchCommand.class, CommandLine.HelpCommand.class},
    description = {"Without a command: starts a gateway node ([--config FILE]); make-key prints a new API key and its hash.",
        "With a command: talks to a running gateway."})
public final class HeraldCli {
  private static final Set<String> FIRST_WORDS = Set.of("publish", "consume", "tail", "stats", "bench", "help", "--help", "-h", "--version", "-V");

  private HeraldCli() {}

  /** Whether the command line is one of the CLI's rather than the node's ({@code --config}, {@code make-key}). */
  public static boolean handles(String[] args) {
    return args.length > 0 && FIRST_WORDS.contains(args[0]);
  }

  /** Runs a command; returns its exit code (see {@link ExitCodes}). */
  public static int run(String[] args, PrintWriter out, PrintWriter err, InputStream in) {
    CommandLine line = new CommandLine(new HeraldCli()).setOut(out).setErr(err);
    ((PublishCommand) line.getSubcommands().get("publish").getCommand()).in = in;
    int code = line.execute(args);
    out.flush();
    err.flush();
    return code;
  }

  /** The jar's version, from its manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String version = HeraldCli.class.getPackage().getImplementationVersion();
      return new String[] {"herald " + (version == null ? "(development build)" : version)};
    }
  }
}
