/** Named fixtures of every request except `send` (spec 6.1, 6.3–6.7); import from fixtures.ts. */
import { bad, type BadRequest, good, type GoodRequest, ids, TEST_LIMITS } from "./fixtures_base.ts";

const PAGE = { cursor: "", limit: 100 };
const MAX_DELAY_MS = TEST_LIMITS.max_schedule_seconds * 1000;
const MEMBER_B = { id: "b", talk_password: "secret" };
const G = "g_ab12cd34";

/** Requests that parse, with the frame they parse to. */
export const GOOD_OTHER: Readonly<Record<string, GoodRequest>> = {
  // spec 6.1
  helloSpecExample: good("hello", { max_receive_bytes: 262144, client: "go-sdk/0.1" }, {
    max_receive_bytes: 262144,
    client: "go-sdk/0.1",
  }),
  helloMinimal: good("hello", {}, { max_receive_bytes: null, client: null }),
  helloSmallestReceive: good("hello", { max_receive_bytes: 1024 }, {
    max_receive_bytes: 1024,
    client: null,
  }),
  // spec 6.3, 6.4
  ackSpecExample: good("ack", { from: "app-1", id: "018f.x" }, { from: "app-1", id: "018f.x" }),
  recallSpecExample: good("recall", { id: "018f.x" }, { id: "018f.x" }),
  statusSpecExample: good("status", { id: "m1", ...PAGE }, { id: "m1", ...PAGE }),
  statusDefaults: good("status", { id: "m1" }, { id: "m1", ...PAGE }),
  statusLargestPage: good("status", { id: "m1", cursor: "c9", limit: 200 }, {
    id: "m1",
    cursor: "c9",
    limit: 200,
  }),
  receiptAckSpecExample: good("receipt_ack", { receipt_id: "9001" }, { receipt_id: "9001" }),
  // spec 6.5
  presenceGetSpecExample: good("presence.get", { ids: ["a", "b"] }, { ids: ["a", "b"] }),
  presenceGetEmpty: good("presence.get", { ids: [] }, { ids: [] }),
  presenceGetMostIds: good("presence.get", { ids: ids(200) }, { ids: ids(200) }),
  directoryListSpecExample: good("directory.list", { ...PAGE, query: "" }, { ...PAGE, query: "" }),
  directoryListDefaults: good("directory.list", {}, { ...PAGE, query: "" }),
  directoryListQuery: good("directory.list", { query: "门", limit: 10 }, {
    cursor: "",
    limit: 10,
    query: "门",
  }),
  presenceWatchSpecExample: good("presence.watch", { ids: ["a"], all: false }, {
    ids: ["a"],
    all: false,
  }),
  presenceWatchAllIgnoresIds: good("presence.watch", { ids: ids(2000), all: true }, {
    ids: [],
    all: true,
  }),
  presenceWatchMostIds: good("presence.watch", { ids: ids(1000) }, { ids: ids(1000), all: false }),
  // spec 6.6
  unlockSpecExample: good("unlock", { endpoint_id: "b", talk_password: "secret" }, {
    endpoint_id: "b",
    talk_password: "secret",
  }),
  unlockEmptyPassword: good("unlock", { endpoint_id: "b", talk_password: "" }, {
    endpoint_id: "b",
    talk_password: "",
  }),
  selfGet: good("self.get", {}, {}),
  selfLogout: good("self.logout", {}, {}),
  selfUpdateSpecExample: good("self.update", { name: "门口", default_delay_ms: 10000 }, {
    name: "门口",
    default_delay_ms: 10000,
  }),
  selfUpdateNothing: good("self.update", {}, { name: null, default_delay_ms: null }),
  selfUpdateLongestDelay: good("self.update", { default_delay_ms: MAX_DELAY_MS }, {
    name: null,
    default_delay_ms: MAX_DELAY_MS,
  }),
  selfUpdateLongestName: good("self.update", { name: "名".repeat(64) }, {
    name: "名".repeat(64),
    default_delay_ms: null,
  }),
  selfTalkPasswordClear: good("self.talk_password", { talk_password: "" }, { talk_password: "" }),
  selfTalkPasswordSet: good("self.talk_password", { talk_password: "😀".repeat(128) }, {
    talk_password: "😀".repeat(128),
  }),
  selfLoginPassword: good("self.login_password", { old_password: "", new_password: "12345678" }, {
    old_password: "",
    new_password: "12345678",
  }),
  selfLoginPasswordLongest: good(
    "self.login_password",
    { old_password: "old-password", new_password: "p".repeat(128) },
    { old_password: "old-password", new_password: "p".repeat(128) },
  ),
  // spec 6.7
  groupCreateSpecExample: good("group.create", { id: "", name: "一组", members: [MEMBER_B] }, {
    id: null,
    name: "一组",
    members: [MEMBER_B],
  }),
  groupCreateWithId: good("group.create", { id: "team.1", members: [{ id: "b" }] }, {
    id: "team.1",
    name: "",
    members: [{ id: "b", talk_password: null }],
  }),
  groupCreateAlone: good("group.create", {}, { id: null, name: "", members: [] }),
  groupCreateMostMembers: good(
    "group.create",
    { members: ids(1000).map((id) => ({ id })) },
    { id: null, name: "", members: ids(1000).map((id) => ({ id, talk_password: null })) },
  ),
  groupAddSpecExample: good(
    "group.add",
    { group_id: G, members: [{ id: "c", talk_password: "" }] },
    { group_id: G, members: [{ id: "c", talk_password: null }] },
  ),
  groupRemoveSpecExample: good("group.remove", { group_id: G, endpoint_id: "c" }, {
    group_id: G,
    endpoint_id: "c",
  }),
  groupLeaveSpecExample: good("group.leave", { group_id: G }, { group_id: G }),
  groupTransferSpecExample: good("group.transfer", { group_id: G, endpoint_id: "b" }, {
    group_id: G,
    endpoint_id: "b",
  }),
  groupRenameSpecExample: good("group.rename", { group_id: G, name: "新名" }, {
    group_id: G,
    name: "新名",
  }),
  groupDissolveSpecExample: good("group.dissolve", { group_id: G }, { group_id: G }),
  groupListSpecExample: good("group.list", PAGE, PAGE),
  groupListDefaults: good("group.list", {}, PAGE),
  groupGetSpecExample: good("group.get", { group_id: G, ...PAGE }, { group_id: G, ...PAGE }),
};

/** Requests that fail, with the code they fail with. */
export const BAD_OTHER: Readonly<Record<string, BadRequest>> = {
  helloReceiveTooSmall: bad("hello", { max_receive_bytes: 1023 }),
  helloReceiveFraction: bad("hello", { max_receive_bytes: 2048.5 }),
  helloReceiveString: bad("hello", { max_receive_bytes: "262144" }),
  helloClientNumber: bad("hello", { client: 1 }),
  ackFromMissing: bad("ack", { id: "m1" }),
  ackIdBadCharacter: bad("ack", { from: "app-1", id: "m 1" }),
  recallIdMissing: bad("recall", {}),
  statusLimitZero: bad("status", { id: "m1", limit: 0 }),
  statusLimitOver: bad("status", { id: "m1", limit: 201 }),
  statusCursorNumber: bad("status", { id: "m1", cursor: 5 }),
  statusCursorTooLong: bad("status", { id: "m1", cursor: "c".repeat(257) }),
  receiptAckIdNumber: bad("receipt_ack", { receipt_id: 9001 }),
  receiptAckIdMissing: bad("receipt_ack", {}),
  presenceGetTooManyIds: bad("presence.get", { ids: ids(201) }),
  presenceGetIdsNotArray: bad("presence.get", { ids: "a,b" }),
  presenceGetBadId: bad("presence.get", { ids: ["a", "b c"] }),
  presenceGetIdNumber: bad("presence.get", { ids: [1] }),
  directoryListQueryTooLong: bad("directory.list", { query: "q".repeat(65) }),
  directoryListLimitZero: bad("directory.list", { limit: 0 }),
  presenceWatchTooManyIds: bad("presence.watch", { ids: ids(1001) }),
  presenceWatchAllString: bad("presence.watch", { all: "yes" }),
  unlockEndpointMissing: bad("unlock", { talk_password: "secret" }),
  unlockPasswordMissing: bad("unlock", { endpoint_id: "b" }),
  unlockPasswordTooLong: bad("unlock", { endpoint_id: "b", talk_password: "p".repeat(129) }),
  selfGetWithoutRid: { ...bad("self.get", { rid: undefined }), rid: null },
  selfLogoutBadVersion: bad("self.logout", { v: 2 }),
  selfUpdateNameTooLong: bad("self.update", { name: "n".repeat(65) }),
  selfUpdateDelayOver: bad("self.update", { default_delay_ms: MAX_DELAY_MS + 1 }),
  selfUpdateDelayNegative: bad("self.update", { default_delay_ms: -1 }),
  selfTalkPasswordTooLong: bad("self.talk_password", { talk_password: "p".repeat(129) }),
  selfTalkPasswordMissing: bad("self.talk_password", {}),
  selfTalkPasswordNull: bad("self.talk_password", { talk_password: null }),
  selfLoginPasswordTooShort: bad("self.login_password", {
    old_password: "old",
    new_password: "1234567",
  }),
  selfLoginPasswordTooLong: bad("self.login_password", {
    old_password: "old",
    new_password: "p".repeat(129),
  }),
  selfLoginPasswordTokenPrefix: bad("self.login_password", {
    old_password: "old",
    new_password: "nst_abcdefgh",
  }),
  selfLoginPasswordOldMissing: bad("self.login_password", { new_password: "12345678" }),
  groupCreateIdBadCharacter: bad("group.create", { id: "g/1" }),
  groupCreateTooManyMembers: bad(
    "group.create",
    { members: ids(1001).map((id) => ({ id })) },
    "group_full",
  ),
  groupCreateMemberNotObject: bad("group.create", { members: ["b"] }),
  groupCreateMemberIdMissing: bad("group.create", { members: [{ talk_password: "x" }] }),
  groupCreateMemberPasswordTooLong: bad("group.create", {
    members: [{ id: "b", talk_password: "p".repeat(129) }],
  }),
  groupCreateNameTooLong: bad("group.create", { name: "n".repeat(65) }),
  groupCreateMembersNotArray: bad("group.create", { members: { id: "b" } }),
  groupAddGroupMissing: bad("group.add", { members: [{ id: "c" }] }),
  groupAddTooManyMembers: bad(
    "group.add",
    { group_id: G, members: ids(1001).map((id) => ({ id })) },
    "group_full",
  ),
  groupRemoveEndpointMissing: bad("group.remove", { group_id: G }),
  groupLeaveGroupBadCharacter: bad("group.leave", { group_id: "g 1" }),
  groupTransferEndpointEmpty: bad("group.transfer", { group_id: G, endpoint_id: "" }),
  groupRenameNameMissing: bad("group.rename", { group_id: G }),
  groupRenameNameTooLong: bad("group.rename", { group_id: G, name: "n".repeat(65) }),
  groupDissolveGroupNumber: bad("group.dissolve", { group_id: 7 }),
  groupListLimitOver: bad("group.list", { limit: 201 }),
  groupGetGroupMissing: bad("group.get", PAGE),
};
