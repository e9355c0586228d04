/**
 * The JSON shapes of the admin API (docs/admin-api.md). Times are Unix milliseconds. Every shape
 * is generated from the OpenAPI document (schema.gen.ts, `deno task openapi`): a component
 * schema, or the `data` of an operation's success answer, or an operation's request body. None is
 * written here (issue 32).
 */
import type { components, operations } from "./schema.gen.ts";

type Schemas = components["schemas"];

/** The JSON body of an answer, by status. */
type Answer<Op extends keyof operations, S extends number> = operations[Op]["responses"] extends
  { [K in S]: { content: { "application/json": infer J } } } ? J
  : never;

/** The `data` of an operation's 200 answer. */
export type Ok<Op extends keyof operations> = Answer<Op, 200> extends { data: infer D } ? D
  : never;

/** The JSON request body of an operation. */
export type Body<Op extends keyof operations> = NonNullable<operations[Op]["requestBody"]> extends
  { content: { "application/json": infer B } } ? B
  : never;

/**
 * One page of a cursor-paginated list: what every list operation's `data` has in common (the
 * list helpers are generic over it; each route's own type is {@linkcode Ok} of its operation).
 */
export interface Page<T> {
  items: T[];
  next_cursor: string;
  total?: number;
}

export type Me = Ok<"getApiAdminMe">;

export type Overview = Ok<"getApiAdminOverview">;

/** The live overview's history (`GET /api/admin/metrics/history`), oldest sample first. */
export type MetricsHistory = Schemas["MetricsHistory"];
/** One sample: gauges at `t`, and what happened in the window before it. */
export type HistorySample = MetricsHistory["samples"][number];
/** The gauges of the metrics history. */
export type HistoryGauges = Omit<MetricsHistory["now"], "t">;

export type Settings = Ok<"getApiAdminSettings">;

/** The nodes of a cluster and the node that answers (`GET /api/admin/nodes`, issue 30). */
export type Nodes = Ok<"getApiAdminNodes">;
/** One node's lease. */
export type NodeLease = Nodes["nodes"][number];

export type ApiToken = Schemas["Token"];

export type Endpoint = Schemas["Endpoint"];

export type EndpointDetail = Ok<"getApiAdminEndpointsId">;

/** The body of `POST /api/admin/endpoints`. */
/** The body of `POST /api/admin/endpoints`. */
export type EndpointCreate = Body<"postApiAdminEndpoints">;

export type EndpointPatch = Body<"patchApiAdminEndpointsId">;

export type BatchAction = Body<"postApiAdminEndpointsBatch">["action"];

export type BatchResult = Ok<"postApiAdminEndpointsBatch">;

/** One created row of a CSV import; `login_password` only when it was generated. */
export type ImportedRow = ImportResult["items"][number];

export type ImportResult = Schemas["ImportResult"];

/** One bad row of a refused CSV import (`error.data.rows`). */
export type ImportRowError = Schemas["ImportRowProblems"]["rows"][number];

export type Registration = Schemas["Registration"];

export type Group = Schemas["Group"];

export type GroupMember = Ok<"getApiAdminGroupsId">["items"][number];

/** A member that could not join, with its error code. */
export type FailedMember = Ok<"postApiAdminGroupsIdMembers">["failed"][number];

export type MessageState = Schemas["MessageRecord"]["state"];
export type DeliveryState = Schemas["RecipientRecord"]["state"];

/** One row of the audit log (操作日志). */
export type AuditRecord = Schemas["AuditRecord"];

export type MessageRecord = Schemas["MessageRecord"];

export type Recipient = Schemas["RecipientRecord"];

/** An endpoint's webhook (issue 34); the secret is shown only when it is made. */
export type Webhook = Schemas["Webhook"];

/** One webhook attempt on this node. */
export type WebhookAttempt = Schemas["WebhookAttempt"];

/** `true` unless `T` is `never`. */
type Generated<T> = [T] extends [never] ? false : true;
type Assert<T extends true> = T;
/**
 * A renamed operation or status, or a body that is no longer JSON, would make a derived type
 * `never`, which every value satisfies: this fails the typecheck instead.
 */
export type GeneratedShapes = [
  Assert<Generated<Me>>,
  Assert<Generated<Overview>>,
  Assert<Generated<Settings>>,
  Assert<Generated<Nodes>>,
  Assert<Generated<EndpointDetail>>,
  Assert<Generated<EndpointCreate>>,
  Assert<Generated<EndpointPatch>>,
  Assert<Generated<BatchAction>>,
  Assert<Generated<BatchResult>>,
  Assert<Generated<ImportRowError>>,
  Assert<Generated<GroupMember>>,
  Assert<Generated<FailedMember>>,
  Assert<Generated<Ok<"postApiAdminLogin">>>,
  Assert<Generated<Body<"postApiAdminEndpointsIdMessages">>>,
  Assert<Generated<Ok<"postApiAdminEndpointsIdMessages">>>,
  Assert<Generated<Ok<"getApiAdminEndpointsIdMessagesMsgId">>>,
];
