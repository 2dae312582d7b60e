package dev.graphfleet.gatling;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * Whether a GraphQL response body counts as a success: a JSON object without errors (no
 * {@code errors}, or an empty list) and with a non-null {@code data}. Reads the body as a
 * token stream, skipping the values, so a big answer is not built into a tree.
 */
public final class GraphQlVerdict {
  public static final String OK = "ok";
  private static final JsonFactory JSON = new JsonFactory();

  private GraphQlVerdict() {}

  /** {@link #OK}, or why not. */
  public static String of(byte[] body) {
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return "the body is not a JSON object";
      }
      boolean data = false;
      JsonToken t;
      while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if (name.equals("errors") && value != JsonToken.VALUE_NULL) {
          if (value != JsonToken.START_ARRAY || p.nextToken() != JsonToken.END_ARRAY) {
            return "the answer has GraphQL errors";
          }
        } else if (name.equals("data")) {
          data = value != JsonToken.VALUE_NULL;
        }
        p.skipChildren();
      }
      if (t != JsonToken.END_OBJECT) {
        return "the body is not a JSON object";
      }
      return data ? OK : "the answer has no data";
    } catch (IOException e) {
      return "the body is not JSON: " + e.getMessage().lines().findFirst().orElse("");
    }
  }
}
