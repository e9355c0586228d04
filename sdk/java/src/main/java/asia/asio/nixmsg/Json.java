package asia.asio.nixmsg;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.gson.ToNumberPolicy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * JSON of the wire (spec 6): Gson trees, serialized without escaping non-ASCII or HTML
 * characters. Only trees are used (no reflection on SDK classes), so R8 needs no rules for it.
 */
final class Json {
  static final Gson GSON =
      new GsonBuilder()
          .disableHtmlEscaping()
          .serializeNulls()
          .setObjectToNumberStrategy(ToNumberPolicy.LONG_OR_DOUBLE)
          .create();

  private Json() {}

  static String stringify(JsonElement e) {
    return GSON.toJson(e);
  }

  /** Parses a JSON object; null when the text is not one. */
  static JsonObject parseObject(byte[] utf8) {
    return parseObject(new String(utf8, StandardCharsets.UTF_8));
  }

  static JsonObject parseObject(String text) {
    try {
      JsonElement e = JsonParser.parseString(text);
      return e.isJsonObject() ? e.getAsJsonObject() : null;
    } catch (RuntimeException e) {
      return null;
    }
  }

  /** A map of application values (meta) as a JSON tree. */
  static JsonElement toTree(Object value) {
    return GSON.toJsonTree(value);
  }

  /** A JSON object as plain Java values: maps, lists, String, Long or Double, Boolean, null. */
  static Map<String, Object> toMap(JsonElement e) {
    if (e == null || !e.isJsonObject()) return Collections.emptyMap();
    // A raw Map (no TypeToken): nothing for R8 to strip; values follow the number policy above.
    @SuppressWarnings("unchecked")
    Map<String, Object> m = GSON.fromJson(e, Map.class);
    return Collections.unmodifiableMap(m);
  }

  static String str(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    return e != null && e.isJsonPrimitive() && e.getAsJsonPrimitive().isString()
        ? e.getAsString()
        : "";
  }

  static boolean isString(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    return e != null && e.isJsonPrimitive() && e.getAsJsonPrimitive().isString();
  }

  static long num(JsonObject o, String key) {
    Long v = numOrNull(o, key);
    return v == null ? 0 : v;
  }

  static Long numOrNull(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    if (e == null || !e.isJsonPrimitive() || !e.getAsJsonPrimitive().isNumber()) return null;
    return (long) e.getAsDouble();
  }

  static boolean bool(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    return e != null
        && e.isJsonPrimitive()
        && e.getAsJsonPrimitive().isBoolean()
        && e.getAsBoolean();
  }

  static JsonObject obj(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    return e != null && e.isJsonObject() ? e.getAsJsonObject() : null;
  }

  /** The objects of an array field; other elements are skipped. */
  static List<JsonObject> list(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    List<JsonObject> out = new ArrayList<>();
    if (e == null || !e.isJsonArray()) return out;
    for (JsonElement x : e.getAsJsonArray()) {
      if (x.isJsonObject()) out.add(x.getAsJsonObject());
    }
    return out;
  }

  static List<String> strings(JsonObject o, String key) {
    JsonElement e = o == null ? null : o.get(key);
    List<String> out = new ArrayList<>();
    if (e == null || !e.isJsonArray()) return out;
    for (JsonElement x : e.getAsJsonArray()) {
      if (x.isJsonPrimitive()) out.add(x.getAsString());
    }
    return out;
  }

  static JsonArray array(Iterable<String> values) {
    JsonArray a = new JsonArray();
    for (String v : values) a.add(new JsonPrimitive(v));
    return a;
  }
}
