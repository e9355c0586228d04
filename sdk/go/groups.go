package nixmsg

import "context"

// Groups holds the group requests of spec 6.7 (Client.Groups). The creator of a group becomes
// its owner and a member; members that cannot be added are listed in Failed.
//
//	g, err := client.Groups().Create(ctx, "Floor 1", nixmsg.Members("door-1", "door-2")...)
//	_, err = client.SendText(ctx, nixmsg.Group(g.GroupID), "hello all")
type Groups struct{ c *Client }

// ListOptions selects one page of a list: Cursor from the previous page ("" for the first),
// Limit items (0 means 100).
type ListOptions struct {
	Cursor string
	Limit  int
}

func (o ListOptions) limit() int {
	if o.Limit <= 0 {
		return 100
	}
	return o.Limit
}

// Members turns endpoint ids into group members without talk passwords.
func Members(ids ...string) []GroupMemberInput {
	out := make([]GroupMemberInput, len(ids))
	for i, id := range ids {
		out[i] = GroupMemberInput{ID: id}
	}
	return out
}

func wireMembers(list []GroupMemberInput) []map[string]string {
	out := make([]map[string]string, len(list))
	for i, m := range list {
		out[i] = map[string]string{"id": m.ID, "talk_password": m.TalkPassword}
	}
	return out
}

// Groups returns the group operations of this client.
func (c *Client) Groups() *Groups { return c.groups }

// Create creates a group with a server-chosen id (`g_…`) and adds members (group.create).
func (g *Groups) Create(ctx context.Context, name string, members ...GroupMemberInput) (GroupChange, error) {
	return g.CreateWithID(ctx, "", name, members...)
}

// CreateWithID creates a group with the given id; an existing id fails with id_taken.
func (g *Groups) CreateWithID(ctx context.Context, id, name string, members ...GroupMemberInput) (GroupChange, error) {
	d, err := g.c.request(ctx, "group.create", map[string]any{"id": id, "name": name, "members": wireMembers(members)})
	if err != nil {
		return GroupChange{}, err
	}
	return toGroupChange(d, id)
}

// Add adds members (group.add); the ones that fail are listed with their code.
func (g *Groups) Add(ctx context.Context, groupID string, members ...GroupMemberInput) (GroupChange, error) {
	d, err := g.c.request(ctx, "group.add", map[string]any{"group_id": groupID, "members": wireMembers(members)})
	if err != nil {
		return GroupChange{}, err
	}
	return toGroupChange(d, groupID)
}

// Remove lets the owner remove a member (group.remove).
func (g *Groups) Remove(ctx context.Context, groupID, endpointID string) error {
	_, err := g.c.request(ctx, "group.remove", map[string]any{"group_id": groupID, "endpoint_id": endpointID})
	return err
}

// Leave leaves a group (group.leave); the owner must transfer first (owner_cannot_leave).
func (g *Groups) Leave(ctx context.Context, groupID string) error {
	_, err := g.c.request(ctx, "group.leave", map[string]any{"group_id": groupID})
	return err
}

// Transfer makes another member the owner (group.transfer).
func (g *Groups) Transfer(ctx context.Context, groupID, endpointID string) error {
	_, err := g.c.request(ctx, "group.transfer", map[string]any{"group_id": groupID, "endpoint_id": endpointID})
	return err
}

// Rename renames a group (group.rename).
func (g *Groups) Rename(ctx context.Context, groupID, name string) error {
	_, err := g.c.request(ctx, "group.rename", map[string]any{"group_id": groupID, "name": name})
	return err
}

// Dissolve dissolves a group (group.dissolve); pending group messages are rejected with
// group_dissolved.
func (g *Groups) Dissolve(ctx context.Context, groupID string) error {
	_, err := g.c.request(ctx, "group.dissolve", map[string]any{"group_id": groupID})
	return err
}

// List returns one page of the groups this endpoint is a member of (group.list).
func (g *Groups) List(ctx context.Context, page ListOptions) (Page[GroupSummary], error) {
	d, err := g.c.request(ctx, "group.list", map[string]any{"cursor": page.Cursor, "limit": page.limit()})
	if err != nil {
		return Page[GroupSummary]{}, err
	}
	return toGroupList(d)
}

// Get returns a group and one page of its members (group.get); non-members get not_member.
func (g *Groups) Get(ctx context.Context, groupID string, page ListOptions) (GroupDetails, error) {
	d, err := g.c.request(ctx, "group.get", map[string]any{"group_id": groupID, "cursor": page.Cursor, "limit": page.limit()})
	if err != nil {
		return GroupDetails{}, err
	}
	return toGroupDetails(d)
}
