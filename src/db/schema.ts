import type { Generated } from 'kysely';

/**
 * Table types for Kysely. Both dialects store the same shapes: booleans as 0/1 integers (SQLite has
 * no boolean and better-sqlite3 cannot bind JS booleans), lists and objects as JSON text, times as
 * ISO 8601 UTC text (sortable as text), money as double precision USD.
 */
export type Bool = number;
export type JsonText = string;

export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface UsersTable {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  interns_programme: Bool;
  created_at: string;
}

export interface OrgMembersTable {
  organization_id: string;
  user_id: string;
  role: 'owner' | 'admin' | 'member';
  created_at: string;
}

export interface WorkspacesTable {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
  description: string | null;
  is_default: Bool;
  default_text_model: string | null;
  default_image_model: string | null;
  default_provider_sort: string | null;
  disabled_server_tools: JsonText | null;
  io_logging_api_key_ids: JsonText | null;
  io_logging_sampling_rate: number;
  is_data_discount_logging_enabled: Bool;
  is_observability_broadcast_enabled: Bool;
  is_observability_io_logging_enabled: Bool;
  include_byok_in_budgets: Bool;
  /** 1: the content of the workspace's generations is kept (content-log/), for `content_retention_days`. */
  content_logging: Bool;
  content_retention_days: number;
  /** Where the workspace's video jobs without a `callback_url` send their end (migration 0032). */
  video_callback_url: string | null;
  /** The secret video job events are signed with, sealed under the master key (never shown after it is made). */
  webhook_secret_ciphertext: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string | null;
}

export interface WorkspaceMembersTable {
  id: string;
  workspace_id: string;
  user_id: string;
  role: string;
  created_at: string;
}

export interface WorkspaceBudgetsTable {
  id: string;
  workspace_id: string;
  /** daily | weekly | monthly | lifetime */
  interval: string;
  limit_usd: number;
  created_at: string;
  updated_at: string;
}

export interface ApiKeysTable {
  hash: string;
  organization_id: string;
  workspace_id: string;
  creator_user_id: string | null;
  name: string;
  label: string;
  is_management: Bool;
  disabled: Bool;
  limit_usd: number | null;
  limit_reset: string | null;
  include_byok_in_limit: Bool;
  expires_at: string | null;
  external_user: string | null;
  external_api_key_hash: string | null;
  created_at: string;
  updated_at: string | null;
  /** Usage limits (null = none): requests and tokens per minute, calls in flight. */
  rpm_limit: number | null;
  tpm_limit: number | null;
  concurrency_limit: number | null;
}

export interface GuardrailsTable {
  id: string;
  organization_id: string;
  workspace_id: string | null;
  name: string;
  description: string | null;
  limit_usd: number | null;
  reset_interval: string | null;
  allowed_data_regions: JsonText | null;
  allowed_models: JsonText | null;
  allowed_providers: JsonText | null;
  ignored_models: JsonText | null;
  ignored_providers: JsonText | null;
  content_filters: JsonText | null;
  content_filter_builtins: JsonText | null;
  include_byok_in_budgets: Bool;
  enable_free_model_publication: Bool | null;
  enable_free_model_training: Bool | null;
  enable_paid_model_training: Bool | null;
  enforce_zdr: Bool | null;
  enforce_zdr_anthropic: Bool | null;
  enforce_zdr_google: Bool | null;
  enforce_zdr_openai: Bool | null;
  enforce_zdr_other: Bool | null;
  enforce_zdr_xai: Bool | null;
  created_at: string;
  updated_at: string | null;
  /** Usage limits of every key the guardrail covers, counted per guardrail (null = none). */
  rpm_limit: number | null;
  tpm_limit: number | null;
  concurrency_limit: number | null;
}

export interface GuardrailKeyAssignmentsTable {
  id: string;
  guardrail_id: string;
  organization_id: string;
  key_hash: string;
  assigned_by: string | null;
  created_at: string;
}

export interface GuardrailMemberAssignmentsTable {
  id: string;
  guardrail_id: string;
  organization_id: string;
  user_id: string;
  assigned_by: string | null;
  created_at: string;
}

export interface ByokCredentialsTable {
  id: string;
  organization_id: string;
  workspace_id: string | null;
  provider: string;
  name: string | null;
  label: string;
  /** AES-256-GCM ciphertext under the master key; null once the credential is deleted (wiped). */
  secret_ciphertext: string | null;
  disabled: Bool;
  is_fallback: Bool;
  is_byok_only: Bool;
  is_required: Bool;
  declared_zdr: Bool | null;
  sort_order: number;
  /** Share of calls among the credentials of its tier (at least 1; default 1). */
  weight: number;
  allowed_api_key_hashes: JsonText | null;
  allowed_models: JsonText | null;
  allowed_user_ids: JsonText | null;
  created_at: string;
  updated_at: string | null;
  deleted_at: string | null;
}

export interface CreditLedgerTable {
  id: string;
  organization_id: string;
  /** purchase | grant */
  kind: string;
  amount_usd: number;
  note: string | null;
  created_at: string;
}

/** One row per billed call (written by the inference engine). Key and budget counters sum these. */
export interface UsageEventsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  key_hash: string | null;
  user_id: string | null;
  model: string | null;
  provider: string | null;
  cost_usd: number;
  is_byok: Bool;
  created_at: string;
}

export interface GenerationsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  key_hash: string | null;
  user_id: string | null;
  /** chat | messages | responses | embeddings */
  endpoint: string;
  requested_model: string;
  model: string | null;
  provider: string | null;
  upstream_model: string | null;
  /** success | error | cancelled */
  status: string;
  http_status: number;
  streamed: Bool;
  finish_reason: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  cached_tokens: number;
  cache_write_tokens: number;
  /** 1 when the upstream reported no usage (e.g. a stream that died) and tokens were estimated. */
  usage_estimated: Bool;
  /** 1 when the model had no known price (GATEHOUSE_UNPRICED_MODELS=allow): recorded at cost 0. */
  pricing_unknown?: Bool | null;
  cost_usd: number;
  prompt_cost_usd: number;
  completion_cost_usd: number;
  is_byok: Bool;
  attempts: number;
  latency_ms: number;
  generation_time_ms: number;
  error_message: string | null;
  created_at: string;
  /** 1 when served on a pass-through lane (the caller's body as sent), 0 when translated. */
  passthrough: Bool;
  /** The provider's id of the answer, when it gave one (what a pass-through caller sees). */
  upstream_id: string | null;
  /** Web searches the provider ran for the call (priced per search). */
  web_search_requests: number;
  /** Every attempt made, as a JSON list (null: rows from before it was recorded). */
  provider_responses: string | null;
  /** The content filters that ran and what each did, as a JSON list (null: rows from before 0017). */
  safeguards?: string | null;
  /** How the call was routed, as a JSON object (null: rows from before 0017, calls never routed). */
  gateway_metadata?: string | null;
  /** The preset the call used (`@preset/<slug>`), null for none (0026). */
  preset_id?: string | null;
}

/**
 * The hourly rollup of generations (0018): one row per organization, hour, workspace, key, user,
 * model and provider; '' for a generation without a key, user or provider. h0 … h76 count latencies
 * per bucket of src/activity/latency-buckets.ts.
 */
export type GenerationHoursTable = {
  organization_id: string;
  /** `created_at`'s first 13 characters: 2026-11-26T13 (UTC). */
  hour: string;
  workspace_id: string;
  key_hash: string;
  user_id: string;
  /** The model the generation view shows: the served one, else the one asked for. */
  model: string;
  provider: string;
  requests: number;
  /** Generations that did not succeed (errors and cancellations). */
  errors: number;
  spend: number;
  byok_spend: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens: number;
  /** The sum of the generations' latencies. */
  latency_ms: number;
} & { [bucket: `h${number}`]: number };

/** The content of one generation, kept while its workspace logs content (times in ms). */
export interface GenerationContentsTable {
  generation_id: string;
  organization_id: string;
  workspace_id: string;
  input_json: JsonText;
  output_json: JsonText;
  error_json: JsonText | null;
  created_at: number;
  expires_at: number;
}

/** The sealed ID token of a console sign-in, for sign-out at the provider (migration 0021). */
export interface ConsoleSignInsTable {
  key_hash: string;
  id_token_ciphertext: string;
  expires_at: string;
  created_at: string;
}

/** An export destination of a workspace (migration 0020). */
export interface ObservabilityDestinationsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  type: string;
  name: string | null;
  enabled: Bool;
  config_json: JsonText;
  secret_ciphertext: string | null;
  api_key_hashes: JsonText | null;
  privacy_mode: Bool;
  sampling_rate: number;
  regions: JsonText;
  filter_rules: JsonText | null;
  broadcast_cost: Bool;
  broadcast_identity: Bool;
  broadcast_request_context: Bool;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface SettingsTable {
  name: string;
  value: string;
}

/** Batch times are integers (the wire shows Unix seconds): `*_at` in seconds, `*_ms` in milliseconds. */
export interface BatchesTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  key_hash: string;
  user_id: string | null;
  endpoint: string;
  model: string | null;
  completion_window: string;
  provider_json: JsonText | null;
  status: string;
  accepted: Bool;
  error_message: string | null;
  request_count: number;
  input_bytes: number;
  estimated_cost_usd: number;
  completed_count: Generated<number>;
  failed_count: Generated<number>;
  byok_count: Generated<number>;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  reasoning_tokens: Generated<number>;
  cached_tokens: Generated<number>;
  cache_write_tokens: Generated<number>;
  cost_usd: Generated<number>;
  prompt_cost_usd: Generated<number>;
  completion_cost_usd: Generated<number>;
  upstream_cost_usd: Generated<number>;
  created_at: number;
  expires_at: number;
  in_progress_at: number | null;
  finalizing_at: number | null;
  cancelling_at: number | null;
  finalized_at: number | null;
  updated_at_ms: number;
  /** Provider-native batches (batches/native/): the provider, its batch id, the submission's state. */
  native_provider: Generated<string | null>;
  native_id: Generated<string | null>;
  native_state: Generated<string | null>;
  native_until_ms: Generated<number | null>;
  native_error: Generated<string | null>;
  /** OpenAI's Batch API (migration 0023): the uploaded file it was created from, its `metadata`. */
  input_file_id: string | null;
  metadata_json: JsonText | null;
  /** OpenAI's `output_expires_after.seconds` (migration 0024): its output/error files expire this long after `finalized_at`. */
  output_expires_after_s: Generated<number | null>;
  /**
   * Migration 0025: the caller's allow-listed provider headers of the create call (Message
   * Batches' `anthropic-version`, `anthropic-beta`), applied to each request; null when none.
   */
  headers_json: JsonText | null;
  /** Migration 0028: when the sweep cleared the answers of a batch whose results expired (Unix s). */
  results_cleared_at: Generated<number | null>;
}

/** An uploaded batch input file (migration 0023; see batches/openai-files*.ts). Times in Unix seconds. */
export interface BatchFilesTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  filename: string;
  purpose: string;
  bytes: Generated<number>;
  line_count: Generated<number>;
  /** 0 while the upload is being read (hidden), 1 once stored whole. */
  complete: Generated<Bool>;
  created_at: number;
  expires_at: number | null;
  /** A model input file's media type (migration 0033); null for batch files (JSON Lines). */
  mime_type: Generated<string | null>;
}

/**
 * A file's content in order: a batch file's whole lines of UTF-8 text, or a model input file's
 * base64 (each chunk whole 3-byte groups: the chunks joined are the file's base64).
 */
export interface BatchFileChunksTable {
  file_id: string;
  seq: number;
  data: string;
}

/** `native`: handed to the provider's batch API (no worker claims it until its result is back). */
export type BatchRequestState = 'pending' | 'running' | 'native' | 'done';

/** Lease and retry times in milliseconds since the epoch; `Generated` columns have defaults. */
export interface BatchRequestsTable {
  batch_id: string;
  idx: number;
  custom_id: string;
  item: JsonText;
  state: Generated<BatchRequestState>;
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: number | null;
  attempts: Generated<number>;
  next_attempt_at: Generated<number>;
  status_code: number | null;
  generation_id: string | null;
  response_body: JsonText | null;
  error_json: JsonText | null;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  reasoning_tokens: Generated<number>;
  cached_tokens: Generated<number>;
  cache_write_tokens: Generated<number>;
  cost_usd: Generated<number>;
  prompt_cost_usd: Generated<number>;
  completion_cost_usd: Generated<number>;
  upstream_cost_usd: Generated<number>;
  is_byok: Generated<Bool>;
  finished_at: number | null;
  finished_by: string | null;
}

/** One feedback entry on a generation (migration 0027; see feedback/). `seq`: 1, 2, … per generation. */
export interface GenerationFeedbackTable {
  id: string;
  organization_id: string;
  /** The generation's workspace. */
  workspace_id: string;
  generation_id: string;
  seq: number;
  category: string;
  comment: string | null;
  /** Who sent it: the key's hash, and the key's user when it has one. */
  key_hash: string;
  user_id: string | null;
  created_at: string;
}

/** One management write, made or refused (migration 0019; see audit/). */
export interface AuditEventsTable {
  id: string;
  organization_id: string | null;
  workspace_id: string | null;
  at: string;
  actor_kind: 'management_key' | 'api_key' | 'operator' | 'system';
  actor_id: string | null;
  actor_user_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  before_json: JsonText | null;
  after_json: JsonText | null;
  request_json: JsonText | null;
  request_id: string | null;
  remote_address: string | null;
  status: number;
}

export interface Database {
  organizations: OrganizationsTable;
  users: UsersTable;
  org_members: OrgMembersTable;
  workspaces: WorkspacesTable;
  workspace_members: WorkspaceMembersTable;
  workspace_budgets: WorkspaceBudgetsTable;
  api_keys: ApiKeysTable;
  guardrails: GuardrailsTable;
  guardrail_key_assignments: GuardrailKeyAssignmentsTable;
  guardrail_member_assignments: GuardrailMemberAssignmentsTable;
  byok_credentials: ByokCredentialsTable;
  observability_destinations: ObservabilityDestinationsTable;
  console_sign_ins: ConsoleSignInsTable;
  credit_ledger: CreditLedgerTable;
  usage_events: UsageEventsTable;
  generations: GenerationsTable;
  generation_hours: GenerationHoursTable;
  generation_contents: GenerationContentsTable;
  generation_feedback: GenerationFeedbackTable;
  settings: SettingsTable;
  batches: BatchesTable;
  batch_requests: BatchRequestsTable;
  batch_files: BatchFilesTable;
  batch_file_chunks: BatchFileChunksTable;
  interns: InternsTable;
  intern_create_ops: InternCreateOpsTable;
  vaults: VaultsTable;
  vault_secrets: VaultSecretsTable;
  presets: PresetsTable;
  preset_versions: PresetVersionsTable;
  stored_responses: StoredResponsesTable;
  stored_response_items: StoredResponseItemsTable;
  conversations: ConversationsTable;
  conversation_items: ConversationItemsTable;
  message_threads: MessageThreadsTable;
  media_video_jobs: MediaVideoJobsTable;
  audit_events: AuditEventsTable;
}

export type InternStatus =
  | 'awaiting_slack_install'
  | 'queued'
  | 'provisioning'
  | 'running'
  | 'failed'
  | 'stopped'
  | 'destroying'
  | 'destroy_failed';

export interface InternsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  creator_user_id: string;
  owner_key_hash: string;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  status: InternStatus;
  last_failure_message: string | null;
  progress_step: number | null;
  progress_total: number | null;
  progress_label: string | null;
  hostname: string | null;
  vault_id: string | null;
  attached_vault_id: string | null;
  provisioned_model: string | null;
  archive_failed: Generated<Bool>;
  created_at: string;
  updated_at: string;
}

export interface InternCreateOpsTable {
  scope: string;
  idempotency_key: string;
  body_hash: string;
  intern_id: string;
  done: Generated<Bool>;
  created_at: string;
}

export interface VaultsTable {
  id: string;
  workspace_id: string;
  owner_intern_id: string | null;
  hmac_key_sealed: string;
  created_at: string;
}

export interface VaultSecretsTable {
  vault_id: string;
  name: string;
  value_sealed: string;
  hosts_json: JsonText | null;
  fingerprint: string | null;
  created_at: string;
  updated_at: string;
  /** 1: the value may also go over plain HTTP (migration 0010). */
  allow_http: Generated<Bool>;
  /** Ports beyond the scheme's default the value may be sent to; null for none. */
  ports_json: JsonText | null;
}

/** A stored `/responses` response (times in ms since the epoch; see migration 0006). */
/** A workspace's named request configuration (0026); its versions are in preset_versions. */
export interface PresetsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  slug: string;
  name: string;
  description: string | null;
  /** active | disabled | archived */
  status: string;
  designated_version_id: string | null;
  creator_user_id: string | null;
  created_at: string;
  updated_at: string;
  status_updated_at: string | null;
}

/** One saved version of a preset: the request fields it sets and its system prompt. */
export interface PresetVersionsTable {
  id: string;
  preset_id: string;
  version: number;
  config_json: JsonText;
  system_prompt: string | null;
  /** The user who saved it, else the hash of the key that did. */
  creator_id: string;
  created_at: string;
}

export interface StoredResponsesTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  provider: string;
  upstream_stored: Bool;
  previous_response_id: string | null;
  chain_json: JsonText;
  input_json: JsonText;
  response_json: JsonText;
  created_at: number;
  expires_at: number;
}

/** A video job of the media service's OpenRouter video API (migration 0030). */
export interface MediaVideoJobsTable {
  /** `gen-vid-<unix seconds>-<20 alphanumerics>`, as OpenRouter names its jobs. */
  id: string;
  organization_id: string;
  workspace_id: string;
  /** The model as the caller named it (`media/<route name>`). */
  model: string;
  status: 'pending' | 'in_progress' | 'completed' | 'failed';
  /** The process running the job; it refreshes `heartbeat_at` while it works. */
  owner: string;
  heartbeat_at: number;
  /** The stored videos once completed: `[{key, url, contentType}]`. */
  outputs_json: JsonText | null;
  /** What the caller was charged, once completed. */
  cost_usd: number | null;
  error: string | null;
  created_at: number;
  completed_at: number | null;
  expires_at: number;
  /** Where the job's end is POSTed (`callback_url`; migration 0031), or null. */
  callback_url: string | null;
  /** The job's polling URL as its caller reached it (the callback event carries it). */
  polling_url: string | null;
}

/** One answered turn of an Anthropic message thread Gatehouse holds (migration 0029). */
export interface MessageThreadsTable {
  /** The reply's message id: what a later turn's `previous_message_id` names. */
  id: string;
  organization_id: string;
  workspace_id: string;
  /** The ids of the thread's earlier turns, oldest first (the first one holds `fields_json`). */
  chain_json: JsonText;
  /** The thread's `system` and `tools` as it was created; null on later turns. */
  fields_json: JsonText | null;
  /** This turn's messages as sent (the whole conversation on the turn that created the thread). */
  messages_json: JsonText;
  /** The reply as the assistant message a later turn sends back: `{role, content}`. */
  reply_json: JsonText;
  continued: 'in_flight' | 'done' | null;
  continued_at: number | null;
  created_at: number;
  expires_at: number;
}

/** An output item of a stored response, by its id (what `item_reference` inputs name). */
export interface StoredResponseItemsTable {
  id: string;
  response_id: string;
  item_json: JsonText;
}

/** A conversation (OpenAI's Conversations API), kept `retention` after its last write. */
export interface ConversationsTable {
  id: string;
  organization_id: string;
  workspace_id: string;
  metadata_json: JsonText;
  created_at: number;
  expires_at: number;
}

/** An item of a conversation, in `position` order. */
export interface ConversationItemsTable {
  conversation_id: string;
  id: string;
  position: number;
  item_json: JsonText;
  upstream_stored: Bool;
  created_at: number;
}
