package io.herald.contract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.util.ArrayList;
import java.util.List;

/**
 * asyncapi.json as a checker of the frames a node sends: each must be one of its channel's messages
 * (by its {@code type}) and validate against that message's payload (AsyncAPI's schema format is a
 * superset of JSON Schema draft 7).
 */
final class AsyncApiContract {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonSchemaFactory SCHEMAS = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V7);

  private final JsonNode document;

  AsyncApiContract(String document) throws Exception {
    this.document = JSON.readTree(document);
  }

  /** What is wrong with a frame a node sent on a socket of {@code channel}; empty when it validates. */
  List<String> check(String channel, String text) throws Exception {
    JsonNode frame = JSON.readTree(text);
    String type = frame.path("type").asText("");
    if (!document.at("/channels/" + channel + "/messages").has(type)) {
      return List.of(channel + ": a frame of type '" + type + "', not a message of the channel");
    }
    ObjectNode wrapper = JSON.createObjectNode();
    wrapper.putArray("allOf").addObject().put("$ref", "#/components/schemas/frame_" + type);
    wrapper.set("components", document.get("components"));
    List<String> problems = new ArrayList<>();
    for (ValidationMessage message : SCHEMAS.getSchema(wrapper).validate(frame)) {
      problems.add(channel + " " + type + ": " + message.getMessage());
    }
    return problems;
  }
}
