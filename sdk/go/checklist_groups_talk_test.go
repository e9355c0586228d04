package nixmsg

// Checklist items 8 and 9 (sdk/conformance/checklist.md, spec 9 接入清单): groups and talk
// passwords.

import (
	"slices"
	"strings"
	"testing"
)

func TestChecklist08GroupMembersReceiveSenderDoesNot(t *testing.T) {
	h := needServer(t)
	ea, eb, ec := h.endpoint(t), h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	c := online(t, h.info.WsURL, ec, Options{Transport: TCP})
	created, err := a.c.Groups().Create(ctx15(t), "floor 1", GroupMemberInput{ID: eb.ID}, GroupMemberInput{ID: ec.ID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.GroupID, "g_") || len(created.Failed) != 0 {
		t.Fatalf("create %+v", created)
	}
	g, err := a.c.Groups().Get(ctx15(t), created.GroupID, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range g.Members.Items {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{ea.ID, eb.ID, ec.ID}
	slices.Sort(want)
	if g.OwnerID != ea.ID || g.MemberCount != 3 || !slices.Equal(ids, want) {
		t.Fatalf("group %+v", g)
	}
	mine, err := b.c.Groups().List(ctx15(t), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(mine.Items, func(s GroupSummary) bool { return s.ID == created.GroupID }) {
		t.Fatalf("B's groups %+v", mine)
	}

	sent, err := a.c.SendText(ctx15(t), Group(created.GroupID), "to everyone")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*tracked{b, c} {
		m, err := r.messages.waitFor(byID(sent.ID), "a member's copy", waitTimeout)
		if err != nil {
			t.Fatal(err)
		}
		if m.Text() != "to everyone" || m.From != ea.ID || m.To != Group(created.GroupID) {
			t.Fatalf("copy %+v", m)
		}
	}
	if _, err := a.receipts.waitCount(2, func(r Receipt) bool { return r.ID == sent.ID && r.State == "accepted" }, "two receipts", waitTimeout); err != nil {
		t.Fatal(err)
	}
	// A message from B to A after the group message: A would have got the group message first.
	marker, err := b.c.SendText(ctx15(t), Endpoint(ea.ID), "marker")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.messages.waitFor(byID(marker.ID), "the marker", waitTimeout); err != nil {
		t.Fatal(err)
	}
	if a.messages.count(byID(sent.ID)) != 0 {
		t.Fatal("the sender received its own group message")
	}
	if b.messages.count(byID(sent.ID)) != 1 || c.messages.count(byID(sent.ID)) != 1 {
		t.Fatal("each member must receive the group message once")
	}
}

func TestChecklist09TalkPasswords(t *testing.T) {
	h := needServer(t)
	ea, eb, ec := h.endpoint(t), h.endpoint(t), h.endpoint(t)
	a := online(t, h.info.WsURL, ea, Options{})
	b := online(t, h.info.WsURL, eb, Options{})
	c := online(t, h.info.WsURL, ec, Options{})
	if err := b.c.SetTalkPassword(ctx15(t), "talk-1"); err != nil {
		t.Fatal(err)
	}
	if self, err := b.c.Self(ctx15(t)); err != nil || !self.TalkPasswordSet {
		t.Fatalf("self %+v %v", self, err)
	}
	_, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "no password")
	wantCode(t, err, "talk_password_required")
	if !errorsIs(err, ErrCode("talk_password_required")) {
		t.Fatal("errors.Is with ErrCode does not match")
	}
	_, err = a.c.SendText(ctx15(t), Endpoint(eb.ID), "wrong", WithTalkPassword("nope"))
	wantCode(t, err, "talk_password_invalid")
	wantCode(t, a.c.Unlock(ctx15(t), eb.ID, "nope"), "talk_password_invalid")
	if err := a.c.Unlock(ctx15(t), eb.ID, "talk-1"); err != nil {
		t.Fatal(err)
	}
	ok, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "after unlock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(ok.ID), "the unlocked message", waitTimeout); err != nil {
		t.Fatal(err)
	}

	// A new talk password voids earlier grants.
	if err := b.c.SetTalkPassword(ctx15(t), "talk-2"); err != nil {
		t.Fatal(err)
	}
	_, err = a.c.SendText(ctx15(t), Endpoint(eb.ID), "stale grant")
	wantCode(t, err, "talk_password_required")
	withPw, err := a.c.SendText(ctx15(t), Endpoint(eb.ID), "with the new password", WithTalkPassword("talk-2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(withPw.ID), "the message with the password", waitTimeout); err != nil {
		t.Fatal(err)
	}

	// B writes to C first: C may answer without B's talk password.
	_, err = c.c.SendText(ctx15(t), Endpoint(eb.ID), "cold")
	wantCode(t, err, "talk_password_required")
	first, err := b.c.SendText(ctx15(t), Endpoint(ec.ID), "hello C")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.messages.waitFor(byID(first.ID), "B's message", waitTimeout); err != nil {
		t.Fatal(err)
	}
	reply, err := c.c.SendText(ctx15(t), Endpoint(eb.ID), "reply to B")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.messages.waitFor(byID(reply.ID), "C's reply", waitTimeout); err != nil {
		t.Fatal(err)
	}
}
