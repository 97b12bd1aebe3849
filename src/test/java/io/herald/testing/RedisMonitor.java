package io.herald.testing;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A MONITOR connection to a test's Redis, gathering the commands that scripts ran. */
public final class RedisMonitor implements AutoCloseable {
  private static final String END = "herald-monitor-end";

  private final Socket socket;
  private final Thread reader;
  private final List<String> scriptCommands = new CopyOnWriteArrayList<>();

  private RedisMonitor(Socket socket, BufferedReader in) {
    this.socket = socket;
    this.reader = new Thread(() -> {
      try {
        for (String line; (line = in.readLine()) != null && !line.contains(END); ) {
          int at = line.indexOf(" lua] ");
          if (at >= 0) {
            scriptCommands.add(line.substring(at + 6));
          }
        }
      } catch (IOException closed) {
        // closed by close()
      }
    });
    reader.start();
  }

  public static RedisMonitor start(String url) {
    URI uri = URI.create(url);
    try {
      Socket socket = new Socket(uri.getHost(), uri.getPort());
      OutputStream out = socket.getOutputStream();
      out.write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String ok = in.readLine();
      if (!"+OK".equals(ok)) {
        socket.close();
        throw new IOException("MONITOR answered " + ok);
      }
      return new RedisMonitor(socket, in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Stops gathering, once every command sent to Redis before this call was read; returns the
   * commands scripts ran, each as MONITOR quotes it ({@code "CMD" "arg" ...}, see {@link #arguments}).
   */
  public List<String> stop() {
    // one last command: the reader stops at it, having read every command before it
    try (Socket last = new Socket(socket.getInetAddress(), socket.getPort())) {
      last.getOutputStream().write(("ECHO " + END + "\r\n").getBytes(StandardCharsets.US_ASCII));
      last.getInputStream().read();
      reader.join(10_000);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return List.copyOf(scriptCommands);
  }

  /** The arguments of a MONITOR line's command: "ARG" "ARG" ..., with \" \\ and \xNN escapes. */
  public static List<String> arguments(String quoted) {
    List<String> args = new ArrayList<>();
    StringBuilder arg = null;
    for (int i = 0; i < quoted.length(); i++) {
      char c = quoted.charAt(i);
      if (arg == null) {
        if (c == '"') {
          arg = new StringBuilder();
        }
      } else if (c == '\\') {
        char next = quoted.charAt(++i);
        if (next == 'x') {
          arg.append((char) Integer.parseInt(quoted.substring(i + 1, i + 3), 16));
          i += 2;
        } else {
          arg.append(switch (next) {
            case 'n' -> '\n';
            case 'r' -> '\r';
            case 't' -> '\t';
            default -> next;
          });
        }
      } else if (c == '"') {
        args.add(arg.toString());
        arg = null;
      } else {
        arg.append(c);
      }
    }
    return args;
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
