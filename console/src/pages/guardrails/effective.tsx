import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, call, type JsonOk } from '../../api/client';
import { ErrorBanner } from '../../components/error-banner';
import { SelectField } from '../../components/field';
import { usd } from './inputs';

type Policy = JsonOk<'/keys/{hash}/effective-policy', 'get'>['data'];

const list = (l: readonly string[] | null, none: string) =>
  l === null ? none : l.length ? l.join(', ') : 'none';
const VIA = {
  key: 'assigned to the key',
  member: "assigned to the key's creator",
  default: "workspace's default",
};

/** Pick a key of the workspace, see the policy the gateway enforces on it. */
export function EffectivePolicy({ workspace }: { workspace: string }) {
  const [hash, setHash] = useState('');
  const keys = useQuery({
    queryKey: ['keys', workspace],
    queryFn: () =>
      call(
        api.GET('/keys', {
          params: { query: { workspace_id: workspace || undefined, include_disabled: true } },
        }),
      ),
  });
  const policy = useQuery({
    queryKey: ['guardrails', 'effective', hash],
    enabled: hash !== '',
    queryFn: () => call(api.GET('/keys/{hash}/effective-policy', { params: { path: { hash } } })),
  });
  return (
    <section aria-labelledby="effective">
      <h2 id="effective">Effective policy of a key</h2>
      <ErrorBanner error={keys.error ?? policy.error} />
      <SelectField
        label="Key"
        name="effective_key"
        value={hash}
        onChange={setHash}
        options={[
          { value: '', label: 'Choose a key…' },
          ...(keys.data?.data ?? []).map((k) => ({ value: k.hash, label: `${k.name} (${k.label})` })),
        ]}
      />
      {policy.data && <PolicyView policy={policy.data.data} />}
    </section>
  );
}

function PolicyView({ policy: p }: { policy: Policy }) {
  const zdr = Object.entries(p.enforce_zdr)
    .filter(([, on]) => on)
    .map(([v]) => v);
  return (
    <dl className="policy" data-testid="effective-policy">
      <dt>Guardrails</dt>
      <dd>
        {p.guardrails.length === 0
          ? 'none: no restriction'
          : p.guardrails.map((g) => `${g.name} (${g.via.map((v) => VIA[v]).join(', ')})`).join('; ')}
      </dd>
      <dt>Allowed models</dt>
      <dd>{list(p.allowed_models, 'any')}</dd>
      <dt>Ignored models</dt>
      <dd>{list(p.ignored_models, 'none')}</dd>
      <dt>Allowed providers</dt>
      <dd>{list(p.allowed_providers, 'any')}</dd>
      <dt>Ignored providers</dt>
      <dd>{list(p.ignored_providers, 'none')}</dd>
      <dt>Data regions</dt>
      <dd>{list(p.allowed_data_regions, 'any')}</dd>
      <dt>Zero data retention</dt>
      <dd>{zdr.length ? `required for ${zdr.join(', ')} models` : 'not required'}</dd>
      <dt>Training on prompts</dt>
      <dd>
        free models {p.allow_training.free_models ? 'allowed' : 'refused'}, paid models{' '}
        {p.allow_training.paid_models ? 'allowed' : 'refused'}; prompt publication{' '}
        {p.allow_free_model_publication ? 'allowed' : 'refused'}
      </dd>
      <dt>Budgets</dt>
      <dd>
        {p.budgets.length === 0
          ? 'none'
          : p.budgets
              .map(
                (b) =>
                  `${usd(b.limit_usd)} ${b.reset_interval ?? 'lifetime'} (${b.guardrail_name}, ${
                    b.scope === 'member' ? "the creator's spend" : "this key's spend"
                  }${b.include_byok ? ', BYOK included' : ''})`,
              )
              .join('; ')}
      </dd>
      <dt>Rate limits</dt>
      <dd>
        {p.usage_limits.length === 0
          ? 'none'
          : p.usage_limits
              .map((l) =>
                [
                  l.rpm_limit !== null && `${l.rpm_limit} rpm`,
                  l.tpm_limit !== null && `${l.tpm_limit} tpm`,
                  l.concurrency_limit !== null && `${l.concurrency_limit} at once`,
                ]
                  .filter(Boolean)
                  .join(', ')
                  .concat(` (${l.guardrail_name})`),
              )
              .join('; ')}
      </dd>
      <dt>Content filters</dt>
      <dd>
        {p.content_filters.length === 0
          ? 'none'
          : p.content_filters.map((f) => `${f.label}: ${f.action} (${f.apply_to})`).join('; ')}
      </dd>
    </dl>
  );
}
