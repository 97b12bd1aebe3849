package io.herald;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/** The shipped logback.xml: what a record looks like, with a message over lines and a nested exception. */
class LogFormatTest {
  /** Logs one error through a context configured by logback.xml; answers what it wrote on standard output. */
  private static String logged(String format) throws Exception {
    PrintStream original = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new LogbackMDCAdapter());
    try {
      context.putProperty("herald.log.format", format);
      JoranConfigurator configurator = new JoranConfigurator();
      configurator.setContext(context);
      configurator.doConfigure(LogFormatTest.class.getResource("/logback.xml"));
      Exception cause = new IllegalStateException("inner\ntrouble");
      context.getLogger("io.herald.Test").error("first line\nsecond line", new RuntimeException("outer", cause));
    } finally {
      context.stop();
      System.setOut(original);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }

  @Test
  @DisplayName("text: one record is one line, its message's lines and its stack trace joined by ' | '")
  void textRecordIsOneLine() throws Exception {
    String output = logged("text");
    List<String> lines = output.lines().toList();
    assertEquals(1, lines.size(), output);
    String line = lines.get(0);
    assertTrue(line.matches("\\d{4}-\\d{2}-\\d{2}T\\S+ ERROR \\[[^]]+] io\\.herald\\.Test - first line \\| second line"
        + " \\| java\\.lang\\.RuntimeException: outer \\| at .* \\| Caused by: java\\.lang\\.IllegalStateException: inner"
        + " \\| trouble \\| .*"), line);
    assertTrue(!line.endsWith(" | ") && !line.endsWith(" |"), line);
  }

  @Test
  @DisplayName("json: one record is one JSON object on one line, with the message and the exception")
  void jsonRecordIsOneObject() throws Exception {
    String output = logged("json");
    List<String> lines = output.lines().toList();
    assertEquals(1, lines.size(), output);
    JsonObject record = new JsonObject(lines.get(0));
    assertEquals("ERROR", record.getString("level"));
    assertEquals("first line\nsecond line", record.getString("formattedMessage"));
    assertEquals("outer", record.getJsonObject("throwable").getString("message"));
  }
}
