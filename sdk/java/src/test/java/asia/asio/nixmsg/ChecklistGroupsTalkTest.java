package asia.asio.nixmsg;

import static asia.asio.nixmsg.testing.Checks.await;
import static asia.asio.nixmsg.testing.Checks.failsWith;
import static asia.asio.nixmsg.testing.Tracked.byId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import asia.asio.nixmsg.testing.Harness;
import asia.asio.nixmsg.testing.HarnessTest;
import asia.asio.nixmsg.testing.Tracked;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Checklist items 8 and 9 (spec 9 接入清单): groups and talk passwords. */
class ChecklistGroupsTalkTest extends HarnessTest {
  @Test
  void checklist08GroupMembersReceiveSenderDoesNot() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Harness.Endpoint ec = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    Tracked c = Tracked.online(h.wsUrl(), ec, ConnectOptions.builder().transport(Transport.TCP));
    GroupChange created =
        await(
            a.client.groups()
                .create("", "floor 1", Arrays.asList(GroupMemberInput.of(eb.id), GroupMemberInput.of(ec.id))));
    assertTrue(created.groupId().startsWith("g_"), created.groupId());
    assertEquals(0, created.failed().size());
    GroupDetails group = await(a.client.groups().get(created.groupId()));
    assertEquals(ea.id, group.ownerId());
    assertEquals(3, group.memberCount());
    List<String> ids =
        group.members().items().stream().map(GroupMember::id).sorted().collect(Collectors.toList());
    assertEquals(Arrays.asList(ea.id, eb.id, ec.id).stream().sorted().collect(Collectors.toList()), ids);
    Page<GroupSummary> mine = await(b.client.groups().list());
    assertTrue(mine.items().stream().anyMatch(g -> g.id().equals(created.groupId())));

    SendResult sent =
        await(a.client.send(Target.group(created.groupId()), "to everyone", SendOptions.none()));
    Message gb = b.messages.waitFor(byId(sent.id()), "B's copy");
    Message gc = c.messages.waitFor(byId(sent.id()), "C's copy");
    for (Message m : Arrays.asList(gb, gc)) {
      assertEquals("to everyone", m.text());
      assertEquals(ea.id, m.from());
      assertEquals(Target.group(created.groupId()), m.to());
    }
    a.receipts.waitCount(
        2, r -> r.id().equals(sent.id()) && r.state().equals("accepted"), "two receipts");
    // A message from B to A after the group message: A would have got the group message first.
    SendResult marker = await(b.client.send(ea.id, "marker"));
    a.messages.waitFor(byId(marker.id()), "the marker");
    assertEquals(0, a.messages.count(byId(sent.id())), "the sender does not receive its own");
    assertEquals(1, b.messages.count(byId(sent.id())));
    assertEquals(1, c.messages.count(byId(sent.id())));
  }

  @Test
  void checklist09TalkPasswords() throws Exception {
    Harness.Endpoint ea = h.endpoint();
    Harness.Endpoint eb = h.endpoint();
    Harness.Endpoint ec = h.endpoint();
    Tracked a = Tracked.online(h.wsUrl(), ea);
    Tracked b = Tracked.online(h.wsUrl(), eb);
    Tracked c = Tracked.online(h.wsUrl(), ec);
    await(b.client.setTalkPassword("talk-1"));
    assertTrue(await(b.client.getSelf()).talkPasswordSet());

    failsWith("talk_password_required", a.client.send(eb.id, "no password"));
    failsWith(
        "talk_password_invalid",
        a.client.send(eb.id, "wrong", SendOptions.builder().talkPassword("nope").build()));
    failsWith("talk_password_invalid", a.client.unlock(eb.id, "nope"));
    await(a.client.unlock(eb.id, "talk-1"));
    SendResult ok = await(a.client.send(eb.id, "after unlock"));
    b.messages.waitFor(byId(ok.id()), "the unlocked message");

    // A new talk password voids earlier grants.
    await(b.client.setTalkPassword("talk-2"));
    failsWith("talk_password_required", a.client.send(eb.id, "stale grant"));
    SendResult withPw =
        await(
            a.client.send(
                eb.id, "with the new password", SendOptions.builder().talkPassword("talk-2").build()));
    b.messages.waitFor(byId(withPw.id()), "the message with the password");

    // B writes to C first: C may answer without B's talk password.
    failsWith("talk_password_required", c.client.send(eb.id, "cold"));
    SendResult first = await(b.client.send(ec.id, "hello C"));
    c.messages.waitFor(byId(first.id()), "B's message");
    SendResult reply = await(c.client.send(eb.id, "reply to B"));
    b.messages.waitFor(byId(reply.id()), "C's reply");
  }
}
