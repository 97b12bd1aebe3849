package io.herald.testing;

import java.lang.management.ManagementFactory;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;

/** What this JVM's heap holds, for tests of what a node keeps (the nodes of a test run in its JVM). */
public final class LiveHeap {
  private LiveHeap() {}

  /**
   * How many instances of {@code type} are reachable now: HotSpot's class histogram
   * ({@code jcmd GC.class_histogram}), which collects the heap first, so garbage is not counted.
   */
  public static long instances(Class<?> type) {
    String histogram;
    try {
      histogram = (String) ManagementFactory.getPlatformMBeanServer().invoke(
          new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
          new Object[] {null}, new String[] {String[].class.getName()});
    } catch (JMException e) {
      throw new IllegalStateException("no class histogram from this JVM", e);
    }
    // "  12:          1853          44472  io.herald.delivery.Batch"
    Matcher row = Pattern.compile("^\\s*\\d+:\\s+(\\d+)\\s+\\d+\\s+" + Pattern.quote(type.getName()) + "(\\s|$)",
        Pattern.MULTILINE).matcher(histogram);
    return row.find() ? Long.parseLong(row.group(1)) : 0;
  }
}
