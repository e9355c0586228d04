package asia.asio.nixmsg;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Wire shapes of spec 6 the SDK reads, mapped to the public types (also resp.data of requests). */
final class Wire {
  private Wire() {}

  static ServerInfo serverInfo(JsonObject h) {
    return new ServerInfo(
        Json.num(h, "server_time_ms"),
        Json.str(h, "server_version"),
        (int) Json.num(h, "max_body_bytes"),
        (int) Json.num(h, "max_meta_bytes"),
        (int) Json.num(h, "max_frame_bytes"),
        Json.num(h, "max_ttl_seconds"),
        Json.num(h, "max_schedule_seconds"),
        Json.num(h, "ack_timeout_seconds"));
  }

  /** A {@code msg} frame (spec 6.3); null when it lacks {@code id} or {@code from}. */
  static Message message(JsonObject f) {
    if (!Json.isString(f, "id") || !Json.isString(f, "from")) return null;
    JsonObject body = Json.obj(f, "body");
    JsonObject to = Json.obj(f, "to");
    Object decoded;
    try {
      decoded = body == null ? "" : Body.decode(body);
    } catch (IllegalArgumentException e) {
      return null;
    }
    String kind = Json.str(to, "kind");
    return new Message(
        Json.str(f, "id"),
        Json.str(f, "from"),
        Target.of(kind.isEmpty() ? "endpoint" : kind, Json.str(to, "id")),
        decoded,
        Json.str(body, "content_type"),
        Json.toMap(f.get("meta")),
        Json.num(f, "send_at_ms"));
  }

  static Receipt receipt(JsonObject f) {
    JsonElement rid = f.get("receipt_id");
    return new Receipt(
        rid == null || rid.isJsonNull() ? "" : rid.getAsString(),
        Json.str(f, "id"),
        Json.str(f, "endpoint_id"),
        Json.str(f, "state"),
        Json.str(f, "reason"),
        Json.num(f, "at_ms"));
  }

  static Revoked revoked(JsonObject f) {
    return new Revoked(Json.str(f, "id"), Json.str(f, "from"), Json.str(f, "reason"));
  }

  static PresenceEvent presence(JsonObject f) {
    return new PresenceEvent(Json.str(f, "id"), Json.bool(f, "online"), Json.num(f, "at_ms"));
  }

  static GroupEvent groupEvent(JsonObject f) {
    return new GroupEvent(
        Json.str(f, "group_id"),
        Json.str(f, "event"),
        Json.str(f, "endpoint_id"),
        Json.num(f, "at_ms"));
  }

  /** The error of a failed resp (spec 6), or of an HTTP error body. */
  static NixMsgException error(JsonObject f, int httpStatus) {
    JsonObject e = Json.obj(f, "error");
    String code = Json.isString(e, "code") ? Json.str(e, "code") : "bad_response";
    String message = Json.isString(e, "message") ? Json.str(e, "message") : code;
    JsonObject data = Json.obj(e, "data");
    return new NixMsgException(
        code, message, null, httpStatus, data == null ? null : Json.toMap(data), null);
  }

  static RecallResult recall(JsonObject d) {
    return new RecallResult(
        Json.str(d, "result"), Json.num(d, "recalled"), Json.num(d, "accepted"), Json.num(d, "other"));
  }

  static StatusResult status(JsonObject d) {
    Map<String, Long> counts = new LinkedHashMap<>();
    JsonObject c = Json.obj(d, "counts");
    if (c != null) {
      for (Map.Entry<String, JsonElement> e : c.entrySet()) counts.put(e.getKey(), Json.num(c, e.getKey()));
    }
    List<DeliveryStatus> items = new ArrayList<>();
    for (JsonObject i : Json.list(d, "items")) {
      items.add(
          new DeliveryStatus(Json.str(i, "endpoint_id"), Json.str(i, "state"), Json.str(i, "reason")));
    }
    return new StatusResult(
        Json.str(d, "id"),
        Json.str(d, "state"),
        Json.str(d, "reason"),
        Json.num(d, "send_at_ms"),
        counts,
        items,
        Json.str(d, "next_cursor"));
  }

  static SelfInfo self(JsonObject d) {
    return new SelfInfo(
        Json.str(d, "id"),
        Json.str(d, "name"),
        Json.str(d, "source"),
        Json.num(d, "default_delay_ms"),
        Json.bool(d, "talk_password_set"),
        Json.num(d, "created_at_ms"));
  }

  static List<PresenceInfo> presenceList(JsonObject d) {
    List<PresenceInfo> out = new ArrayList<>();
    for (JsonObject i : Json.list(d, "items")) {
      out.add(
          new PresenceInfo(
              Json.str(i, "id"),
              Json.bool(i, "online"),
              Json.numOrNull(i, "since_ms"),
              Json.bool(i, "not_found")));
    }
    return out;
  }

  static Page<DirectoryEntry> directory(JsonObject d) {
    List<DirectoryEntry> out = new ArrayList<>();
    for (JsonObject i : Json.list(d, "items")) {
      out.add(
          new DirectoryEntry(
              Json.str(i, "id"),
              Json.str(i, "name"),
              Json.bool(i, "online"),
              Json.numOrNull(i, "online_since_ms"),
              Json.numOrNull(i, "offline_since_ms"),
              Json.bool(i, "talk_password_set")));
    }
    return new Page<>(out, Json.str(d, "next_cursor"));
  }

  static GroupChange groupChange(JsonObject d, String groupId) {
    String id = Json.str(d, "group_id");
    if (id.isEmpty()) id = Json.str(d, "id");
    if (id.isEmpty()) id = groupId;
    List<GroupMemberFailure> failed = new ArrayList<>();
    for (JsonObject f : Json.list(d, "failed")) {
      failed.add(new GroupMemberFailure(Json.str(f, "id"), Json.str(f, "code")));
    }
    return new GroupChange(id, Json.strings(d, "added"), failed);
  }

  private static GroupSummary summary(JsonObject d) {
    String id = Json.str(d, "id");
    return new GroupSummary(
        id.isEmpty() ? Json.str(d, "group_id") : id,
        Json.str(d, "name"),
        Json.str(d, "owner_id"),
        Json.num(d, "member_count"));
  }

  static Page<GroupSummary> groupList(JsonObject d) {
    List<GroupSummary> out = new ArrayList<>();
    for (JsonObject g : Json.list(d, "items")) out.add(summary(g));
    return new Page<>(out, Json.str(d, "next_cursor"));
  }

  static GroupDetails groupDetails(JsonObject d) {
    JsonObject g = Json.obj(d, "group");
    GroupSummary s = summary(g != null ? g : d);
    List<GroupMember> members = new ArrayList<>();
    for (JsonObject m : Json.list(d, "members")) {
      members.add(new GroupMember(Json.str(m, "id"), Json.str(m, "name"), Json.bool(m, "online")));
    }
    return new GroupDetails(
        s.id(), s.name(), s.ownerId(), s.memberCount(), new Page<>(members, Json.str(d, "next_cursor")));
  }
}
