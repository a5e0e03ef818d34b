import { useQuery } from '@tanstack/react-query';
import { type ReactNode, useEffect, useRef } from 'react';
import { api, call, type JsonOk } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { Table } from '../../components/table';

type Generation = JsonOk<'/generation', 'get'>['data'];
type Safeguard = NonNullable<Generation['safeguards']>[number];
/** The routing story the generation kept (src/routing/gateway-metadata.ts); absent fields: older rows. */
interface Routing {
  route?: 'lane' | 'translated' | null;
  requested?: string;
  strategy?: string;
  summary?: string;
  region?: string;
  endpoints?: { total: number; available: { model: string; provider: string; selected: boolean }[] };
  endpoints_excluded?: { provider: string; reason: string }[];
  models_tried?: string[];
  models_skipped?: { model: string; reason: string }[];
  dropped_fields?: string[];
}
interface Attempt {
  model_permaslug?: string;
  provider_name?: string;
  status?: number;
  latency?: number;
  is_byok?: boolean;
}

export const usd = (n: number | null | undefined) =>
  n === null || n === undefined ? '—' : `$${n.toFixed(n !== 0 && Math.abs(n) < 0.01 ? 6 : 4)}`;
const yesNo = (b: boolean) => (b ? 'yes' : 'no');

function Pairs({ rows }: { rows: [string, ReactNode][] }) {
  return (
    <dl>
      {rows.map(([k, v]) => (
        <div key={k} className="pair">
          <dt>{k}</dt>
          <dd>{v ?? '—'}</dd>
        </div>
      ))}
    </dl>
  );
}

/** One generation: tokens, cost, latency, attempts, routing, safeguards, and its kept content. */
export function GenerationDetail({
  id,
  keyName,
  onClose,
}: {
  id: string;
  keyName: (hash: string | null) => string;
  onClose: () => void;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  const opener = useRef<Element | null>(null);
  const generation = useQuery({
    queryKey: ['generation', id],
    queryFn: () => call(api.GET('/generation', { params: { query: { id } } })),
  });
  // Keyboard and screen-reader users land on the detail they opened (another row's too), and go
  // back to the control that opened it when they close it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs again for each generation opened
  useEffect(() => {
    opener.current = document.activeElement;
    heading.current?.focus();
  }, [id]);
  const close = () => {
    onClose();
    if (opener.current instanceof HTMLElement && opener.current.isConnected) opener.current.focus();
  };
  const g = generation.data?.data;

  return (
    // Escape anywhere in the detail closes it, as it would a dialog.
    <section
      className="detail"
      aria-labelledby="generation-detail"
      onKeyDown={(e) => {
        if (e.key === 'Escape') close();
      }}
    >
      <div className="page-head">
        <h2 id="generation-detail" ref={heading} tabIndex={-1}>
          Generation <code>{id}</code>
        </h2>
        <button type="button" onClick={close}>
          Close details
        </button>
      </div>
      <ErrorBanner error={generation.error} />
      {generation.isPending && <p>Loading…</p>}
      {g && <Body g={g} keyName={keyName} />}
    </section>
  );
}

function Body({ g, keyName }: { g: Generation; keyName: (hash: string | null) => string }) {
  const attempts = (g.provider_responses ?? []) as Attempt[];
  return (
    <>
      <div className="detail-grid">
        <div>
          <h3>Call</h3>
          <Pairs
            rows={[
              ['Created', new Date(g.created_at).toLocaleString()],
              ['Status', `${g.status} (HTTP ${g.http_status})`],
              ...(g.error_message ? [['Error', g.error_message] as [string, ReactNode]] : []),
              ['Model asked for', g.requested_model],
              ['Model served', g.model],
              ['Provider', g.provider_name],
              ['Upstream model', g.upstream_model],
              ['Endpoint', g.origin],
              ['Streamed', yesNo(g.streamed)],
              ['Lane', g.passthrough ? 'passed through' : 'translated'],
              ['Finish reason', g.finish_reason],
              ['API key', keyName(g.api_key_hash)],
              ['User', g.user_id],
              ['Workspace', g.workspace_id],
            ]}
          />
        </div>
        <div>
          <h3>Tokens</h3>
          <Pairs
            rows={[
              ['Prompt', g.tokens_prompt],
              ['Completion', g.tokens_completion],
              ['Reasoning', g.native_tokens_reasoning],
              ['Cached (read)', g.native_tokens_cached],
              ['Cache write', g.native_tokens_cache_write],
              [
                'Counted by',
                g.usage_estimated ? 'Gatehouse (estimated: the provider sent none)' : 'the provider',
              ],
            ]}
          />
          <h3>Cost</h3>
          <Pairs
            rows={[
              [
                'Total',
                <span key="cost" data-testid="detail-cost">
                  {usd(g.total_cost)}
                </span>,
              ],
              ['Prompt', usd(g.cost_details.prompt)],
              ['Completion', usd(g.cost_details.completion)],
              ['Your provider key (BYOK)', g.is_byok ? usd(g.upstream_inference_cost) : 'no'],
              ...(g.pricing_unknown
                ? [['Pricing', 'unknown for this model: not charged'] as [string, ReactNode]]
                : []),
            ]}
          />
          <h3>Latency</h3>
          <Pairs
            rows={[
              ['End to end', `${g.latency} ms`],
              ['Upstream', `${g.generation_time} ms`],
              ['Attempts', g.attempts],
            ]}
          />
        </div>
      </div>
      <h3>Attempts and endpoints considered</h3>
      <Table
        caption="Every provider tried, in order (the one answering 200 served the call)"
        rows={attempts.map((a, i) => ({ ...a, n: i + 1 }))}
        rowKey={(a) => String(a.n)}
        empty="No attempt reached a provider."
        columns={[
          { header: '#', numeric: true, cell: (a) => a.n },
          { header: 'Model', cell: (a) => a.model_permaslug ?? '—' },
          { header: 'Provider', cell: (a) => a.provider_name ?? '—' },
          { header: 'Upstream status', numeric: true, cell: (a) => a.status ?? '—' },
          {
            header: 'Latency',
            numeric: true,
            cell: (a) => (a.latency === undefined ? '—' : `${a.latency} ms`),
          },
          { header: 'BYOK', cell: (a) => yesNo(Boolean(a.is_byok)) },
        ]}
      />
      <Routing g={g} />
      <Safeguards list={g.safeguards} />
      <h3>Gateway metadata</h3>
      <pre data-testid="gateway-metadata">
        {JSON.stringify(
          {
            id: g.id,
            upstream_id: g.upstream_id,
            api_type: g.api_type,
            router: g.router,
            data_region: g.data_region,
            service_tier: g.service_tier,
            usage_estimated: g.usage_estimated,
            pricing_unknown: g.pricing_unknown,
            web_search_requests: g.web_search_requests,
            ...(g.gateway_metadata ?? {}),
          },
          null,
          2,
        )}
      </pre>
      <Content g={g} />
    </>
  );
}

const list = (items: string[] | undefined) => (items?.length ? items.join(', ') : 'none');

/** How the call was routed: the lane or translation, the endpoints considered and left out. */
function Routing({ g }: { g: Generation }) {
  const m = (g.gateway_metadata ?? null) as Routing | null;
  if (!m) return null;
  return (
    <section aria-labelledby="generation-routing" data-testid="routing">
      <h3 id="generation-routing">Routing</h3>
      <Pairs
        rows={[
          ['Summary', m.summary],
          [
            'Route',
            m.route === 'lane'
              ? "passed through (the provider speaks the caller's format)"
              : m.route === 'translated'
                ? 'translated'
                : 'no endpoint answered',
          ],
          ['Model asked for', m.requested],
          ['Strategy', m.strategy],
          ['Models tried', list(m.models_tried)],
          ...(m.models_skipped?.length
            ? [
                ['Models skipped', m.models_skipped.map((x) => `${x.model} (${x.reason})`).join(', ')] as [
                  string,
                  ReactNode,
                ],
              ]
            : []),
          ...(m.endpoints_excluded?.length
            ? [
                [
                  'Endpoints excluded',
                  m.endpoints_excluded.map((x) => `${x.provider} (${x.reason})`).join(', '),
                ] as [string, ReactNode],
              ]
            : []),
          ['Fields translation dropped', list(m.dropped_fields)],
        ]}
      />
      <Table
        caption="Endpoints considered (the selected one served the call)"
        rows={m.endpoints?.available ?? []}
        rowKey={(e) => `${e.model} ${e.provider}`}
        empty="No endpoint was considered."
        columns={[
          { header: 'Model', cell: (e) => e.model },
          { header: 'Provider', cell: (e) => e.provider },
          { header: 'Selected', cell: (e) => yesNo(e.selected) },
        ]}
      />
    </section>
  );
}

const ACTIONS: Record<Safeguard['action'], string> = {
  passed: 'passed',
  redacted: 'redacted',
  flagged: 'flagged',
  blocked: 'blocked',
};

/** Whose filter it was: the guardrail by its current name (its id once deleted), or the provider. */
function GuardrailOf({ x }: { x: Safeguard }) {
  if (x.source === 'provider') return <>the provider's own filter</>;
  if (x.guardrail_name) return <>{x.guardrail_name}</>;
  if (x.guardrail_id)
    return (
      <>
        <code>{x.guardrail_id}</code> (deleted)
      </>
    );
  return <>—</>;
}

/** The content filters that ran on the call, on the request then on the answer, and what each did. */
function Safeguards({ list: items }: { list: Generation['safeguards'] }) {
  return (
    <section aria-labelledby="generation-safeguards">
      <h3 id="generation-safeguards">Safeguards</h3>
      {items === null ? (
        <p>This call was recorded before Gatehouse kept its safeguard results.</p>
      ) : (
        <Table
          caption="Content filters that ran on the call and what each did (never the matched text)"
          rows={items.map((x, i) => ({ ...x, n: i }))}
          rowKey={(x) => String(x.n)}
          empty="No guardrail content filter applies to this key."
          columns={[
            { header: 'Stage', cell: (x) => (x.stage === 'request' ? 'request' : 'answer') },
            { header: 'Check', cell: (x) => x.label },
            { header: 'Action', cell: (x) => ACTIONS[x.action] },
            { header: 'Guardrail', cell: (x) => <GuardrailOf x={x} /> },
            {
              header: 'Detail',
              cell: (x) => (
                <>
                  {x.matches === 1 ? '1 match' : `${x.matches} matches`}
                  {x.slug ? <> · {x.slug}</> : null}
                </>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}

/** The kept request and response, or why there is none. */
function Content({ g }: { g: Generation }) {
  const kept = g.content_url !== null;
  const content = useQuery({
    queryKey: ['generation-content', g.id],
    queryFn: () => call(api.GET('/generation/content', { params: { query: { id: g.id } } })),
    enabled: kept,
  });
  const workspace = useQuery({
    queryKey: ['workspace', g.workspace_id],
    queryFn: () => call(api.GET('/workspaces/{id}', { params: { path: { id: g.workspace_id } } })),
    enabled: !kept,
  });
  const c = content.data?.data;
  return (
    <section aria-labelledby="generation-content">
      <h3 id="generation-content">Request and response</h3>
      {!kept ? (
        <p data-testid="content-off">
          {workspace.data?.data.content_logging === false
            ? 'Content logging is off for this workspace: Gatehouse did not keep what was sent or answered. An organization owner or admin can turn it on in the workspace settings (content_logging).'
            : workspace.data
              ? 'No content is kept for this call: it was made before content logging was on, its retention has passed, or its endpoint keeps none.'
              : 'No content is kept for this call.'}
        </p>
      ) : (
        <>
          <ErrorBanner error={content.error} />
          {content.isPending && <p>Loading…</p>}
          {c && (
            <div className="detail-grid">
              <div>
                <h4>Request</h4>
                <pre data-testid="content-input">{JSON.stringify(c.input, null, 2)}</pre>
              </div>
              <div>
                <h4>Response</h4>
                {c.output.reasoning && (
                  <>
                    <h5>Reasoning</h5>
                    <pre>{c.output.reasoning}</pre>
                  </>
                )}
                <pre data-testid="content-output">{c.output.completion ?? '(no text)'}</pre>
                {c.output.tool_calls && (
                  <>
                    <h5>Tool calls</h5>
                    <pre>{JSON.stringify(c.output.tool_calls, null, 2)}</pre>
                  </>
                )}
                {c.error && (
                  <>
                    <h5>Error</h5>
                    <pre>{JSON.stringify(c.error, null, 2)}</pre>
                  </>
                )}
              </div>
            </div>
          )}
        </>
      )}
    </section>
  );
}
