package asia.asio.nixmsg;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;

/**
 * Group operations of a connected client ({@code client.groups()}), one method per spec 6.7
 * frame. The caller of {@code create} becomes the owner and a member; members that cannot be
 * added are listed in {@code failed}.
 *
 * <pre>{@code
 * GroupChange g = client.groups().create("Floor 1", "door-1", "door-2").join();
 * client.send(Target.group(g.groupId()), "hello all");
 * }</pre>
 */
public final class GroupApi {
  private final BiFunction<String, JsonObject, CompletableFuture<JsonObject>> request;

  GroupApi(BiFunction<String, JsonObject, CompletableFuture<JsonObject>> request) {
    this.request = request;
  }

  private static JsonArray members(List<GroupMemberInput> list) {
    JsonArray a = new JsonArray();
    for (GroupMemberInput m : list) {
      JsonObject o = new JsonObject();
      o.addProperty("id", m.id());
      o.addProperty("talk_password", m.talkPassword());
      a.add(o);
    }
    return a;
  }

  private static List<GroupMemberInput> ids(String... ids) {
    GroupMemberInput[] out = new GroupMemberInput[ids.length];
    for (int i = 0; i < ids.length; i++) out[i] = GroupMemberInput.of(ids[i]);
    return Arrays.asList(out);
  }

  /** {@code group.create} with a server-chosen id ({@code g_...}) and members without talk passwords. */
  public CompletableFuture<GroupChange> create(String name, String... memberIds) {
    return create("", name, ids(memberIds));
  }

  /** {@code group.create}: {@code id} "" lets the server choose; an existing id is {@code id_taken}. */
  public CompletableFuture<GroupChange> create(String id, String name, List<GroupMemberInput> members) {
    JsonObject f = new JsonObject();
    f.addProperty("id", id == null ? "" : id);
    f.addProperty("name", name);
    f.add("members", members(members));
    return request.apply("group.create", f).thenApply(d -> Wire.groupChange(d, id));
  }

  /** {@code group.add}: adds members; the ones that fail are listed with their code. */
  public CompletableFuture<GroupChange> add(String groupId, List<GroupMemberInput> members) {
    JsonObject f = new JsonObject();
    f.addProperty("group_id", groupId);
    f.add("members", members(members));
    return request.apply("group.add", f).thenApply(d -> Wire.groupChange(d, groupId));
  }

  /** {@code group.remove}: the owner removes a member. */
  public CompletableFuture<Void> remove(String groupId, String endpointId) {
    return two("group.remove", groupId, endpointId);
  }

  /** {@code group.leave}: the owner must transfer first ({@code owner_cannot_leave}). */
  public CompletableFuture<Void> leave(String groupId) {
    return one("group.leave", groupId);
  }

  /** {@code group.transfer}: makes another member the owner. */
  public CompletableFuture<Void> transfer(String groupId, String endpointId) {
    return two("group.transfer", groupId, endpointId);
  }

  /** {@code group.rename}. */
  public CompletableFuture<Void> rename(String groupId, String name) {
    JsonObject f = new JsonObject();
    f.addProperty("group_id", groupId);
    f.addProperty("name", name);
    return request.apply("group.rename", f).thenApply(d -> null);
  }

  /** {@code group.dissolve}: pending group messages are rejected with {@code group_dissolved}. */
  public CompletableFuture<Void> dissolve(String groupId) {
    return one("group.dissolve", groupId);
  }

  /** {@code group.list}: the first page of the groups this endpoint is a member of. */
  public CompletableFuture<Page<GroupSummary>> list() {
    return list("", 100);
  }

  /** {@code group.list}, one page at a time. */
  public CompletableFuture<Page<GroupSummary>> list(String cursor, int limit) {
    JsonObject f = new JsonObject();
    f.addProperty("cursor", cursor == null ? "" : cursor);
    f.addProperty("limit", limit);
    return request.apply("group.list", f).thenApply(Wire::groupList);
  }

  /** {@code group.get}: the group and the first page of members; non-members get {@code not_member}. */
  public CompletableFuture<GroupDetails> get(String groupId) {
    return get(groupId, "", 100);
  }

  public CompletableFuture<GroupDetails> get(String groupId, String cursor, int limit) {
    JsonObject f = new JsonObject();
    f.addProperty("group_id", groupId);
    f.addProperty("cursor", cursor == null ? "" : cursor);
    f.addProperty("limit", limit);
    return request.apply("group.get", f).thenApply(Wire::groupDetails);
  }

  private CompletableFuture<Void> one(String type, String groupId) {
    JsonObject f = new JsonObject();
    f.addProperty("group_id", groupId);
    return request.apply(type, f).thenApply(d -> null);
  }

  private CompletableFuture<Void> two(String type, String groupId, String endpointId) {
    JsonObject f = new JsonObject();
    f.addProperty("group_id", groupId);
    f.addProperty("endpoint_id", endpointId);
    return request.apply(type, f).thenApply(d -> null);
  }
}
