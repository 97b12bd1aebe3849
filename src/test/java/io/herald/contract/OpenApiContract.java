package io.herald.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * openapi.json as a checker of traffic: finds the operation a request went to and validates its
 * JSON body and its answer's against the document's schemas (JSON Schema 2020-12, as OpenAPI 3.1 has).
 */
final class OpenApiContract {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonSchemaFactory SCHEMAS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);

  private final JsonNode document;
  /** Each path template as a regular expression, most literal first. */
  private final List<Map.Entry<Pattern, String>> templates = new ArrayList<>();

  OpenApiContract(String document) throws Exception {
    this.document = JSON.readTree(document);
    List<String> paths = new ArrayList<>();
    this.document.get("paths").fieldNames().forEachRemaining(paths::add);
    // /v1/admin/topics before /v1/admin/topics/{topic}; fewer parameters first
    paths.sort((a, b) -> Long.compare(a.chars().filter(c -> c == '{').count(), b.chars().filter(c -> c == '{').count()));
    for (String path : paths) {
      // a topic spans levels; the console's asset may be empty (its index page)
      String regex = Pattern.quote(path).replace("{topic}", "\\E.+\\Q").replace("{asset}", "\\E[^/]*\\Q")
          .replaceAll("\\{[a-zA-Z]+}", "\\\\E[^/]+\\\\Q");
      templates.add(Map.entry(Pattern.compile(regex), path));
    }
  }

  /** The path template a request path is routed to in the document, or null. */
  String template(String path) {
    for (Map.Entry<Pattern, String> template : templates) {
      if (template.getKey().matcher(path).matches()) {
        return template.getValue();
      }
    }
    return null;
  }

  /**
   * What is wrong with one exchange: its request body (when the operation takes one and the answer
   * is not a refusal) and its answer's body, against the operation's schemas. Empty when it validates.
   * A body given as null is not checked (not JSON, or too big to have been recorded).
   */
  List<String> check(String method, String path, String requestBody, int status, String responseBody) throws Exception {
    String template = template(path.replaceAll("\\?.*", ""));
    if (template == null) {
      // a refusal of a path the router does not know (no route, no credentials) is an error as any other
      return status >= 400
          ? validate(document.at("/components/responses/Error/content/application~1json/schema"), responseBody,
              method + " " + path + " " + status)
          : List.of(method + " " + path + ": no path of the document");
    }
    JsonNode operation = document.get("paths").get(template).get(method.toLowerCase(Locale.ROOT));
    if (operation == null) {
      return status == 405
          ? validate(document.at("/components/responses/Error/content/application~1json/schema"), responseBody,
              method + " " + template + " 405")
          : List.of(method + " " + template + ": no such operation in the document");
    }
    List<String> problems = new ArrayList<>();
    String where = method + " " + template;
    JsonNode request = operation.at("/requestBody/content/application~1json/schema");
    if (!request.isMissingNode() && requestBody != null && !requestBody.isEmpty() && status < 400) {
      problems.addAll(validate(request, requestBody, where + " request"));
    }
    JsonNode responses = operation.get("responses");
    // "default" stands for refusals only: a success must be one the operation names
    JsonNode response = responses.has(String.valueOf(status)) ? responses.get(String.valueOf(status))
        : status >= 400 ? responses.get("default") : null;
    if (response == null) {
      problems.add(where + ": status " + status + " is not in the document");
      return problems;
    }
    if (response.has("$ref")) {
      response = document.at(response.get("$ref").asText().substring(1));
    }
    JsonNode schema = response.at("/content/application~1json/schema");
    if (!schema.isMissingNode() && responseBody != null) {
      problems.addAll(validate(schema, responseBody, where + " " + status));
    }
    return problems;
  }

  private List<String> validate(JsonNode schema, String body, String where) throws Exception {
    if (body == null) {
      return List.of();
    }
    // the operation's schema, with the document's components beside it for its references
    ObjectNode wrapper = JSON.createObjectNode();
    wrapper.putArray("allOf").add(schema);
    wrapper.set("components", document.get("components"));
    Set<ValidationMessage> messages = SCHEMAS.getSchema(wrapper).validate(JSON.readTree(body));
    List<String> problems = new ArrayList<>();
    for (Iterator<ValidationMessage> it = messages.iterator(); it.hasNext(); ) {
      problems.add(where + ": " + it.next().getMessage() + " in " + body);
    }
    return problems;
  }
}
