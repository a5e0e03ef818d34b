import { type FormEvent, useState } from 'react';
import type { JsonBody, JsonOk } from '../../api/client';
import { Field, SelectField } from '../../components/field';
import { CheckField, listText, numberOrNull, numberText, parseList } from './inputs';

export type Guardrail = JsonOk<'/guardrails/{id}', 'get'>['data'];
export type GuardrailBody = JsonBody<'/guardrails/{id}', 'patch'>;
type Builtin = NonNullable<GuardrailBody['content_filter_builtins']>[number];
type Custom = NonNullable<GuardrailBody['content_filters']>[number];
type Action = Builtin['action'];
type ApplyTo = NonNullable<Builtin['apply_to']>;
type Region = NonNullable<GuardrailBody['allowed_data_regions']>[number];

const BUILTINS: { slug: Builtin['slug']; label: string }[] = [
  { slug: 'email', label: 'Email addresses' },
  { slug: 'phone', label: 'Phone numbers' },
  { slug: 'ssn', label: 'Social Security numbers' },
  { slug: 'credit-card', label: 'Credit card numbers' },
  { slug: 'ip-address', label: 'IP addresses' },
  { slug: 'secrets', label: 'Secrets and credentials' },
  { slug: 'person-name', label: 'Person names' },
  { slug: 'address', label: 'Postal addresses' },
  { slug: 'regex-prompt-injection', label: 'Prompt injection' },
];
const REGIONS: Region[] = ['global', 'europe', 'us'];
const VENDORS = ['anthropic', 'google', 'openai', 'xai', 'other'] as const;
const ACTIONS = [
  { value: 'redact', label: 'Redact' },
  { value: 'block', label: 'Block' },
  { value: 'flag', label: 'Flag' },
];
const APPLY_TO = [
  { value: 'request', label: 'Request' },
  { value: 'response', label: 'Answer' },
  { value: 'both', label: 'Both' },
];
const RESETS = [
  { value: '', label: 'No budget' },
  { value: 'daily', label: 'Daily' },
  { value: 'weekly', label: 'Weekly' },
  { value: 'monthly', label: 'Monthly' },
];

/** A data-policy flag: allowed (true), refused (false), not set (null: allowed), or left unchanged. */
const flagOptions = (editing: unknown) => [
  ...(editing ? [{ value: 'keep', label: 'Unchanged' }] : []),
  { value: 'unset', label: 'Not set (allowed)' },
  { value: 'allow', label: 'Allowed' },
  { value: 'refuse', label: 'Refused' },
];
function flag<K extends string>(field: K, choice: string): { [P in K]?: boolean | null } {
  if (choice === 'keep') return {};
  return { [field]: choice === 'unset' ? null : choice === 'allow' } as { [P in K]?: boolean | null };
}

/**
 * Every field of a guardrail, for creating one (`initial` absent) or editing one. Submits the whole
 * policy: lists are replaced wholesale and an empty list field clears the restriction (null).
 */
export function GuardrailForm(props: {
  initial?: Guardrail;
  pending: boolean;
  submitLabel: string;
  onSubmit: (body: GuardrailBody & { name: string }) => void;
  onCancel?: () => void;
}) {
  const g = props.initial;
  const [name, setName] = useState(g?.name ?? '');
  const [description, setDescription] = useState(g?.description ?? '');
  const [allowedModels, setAllowedModels] = useState(listText(g?.allowed_models));
  const [ignoredModels, setIgnoredModels] = useState(listText(g?.ignored_models));
  const [allowedProviders, setAllowedProviders] = useState(listText(g?.allowed_providers));
  const [ignoredProviders, setIgnoredProviders] = useState(listText(g?.ignored_providers));
  const [regions, setRegions] = useState<Region[] | null>((g?.allowed_data_regions as Region[]) ?? null);
  const [zdr, setZdr] = useState(() =>
    Object.fromEntries(VENDORS.map((v) => [v, !!g?.[`enforce_zdr_${v}`]])),
  );
  // The API reads an unset flag as false, so an edit sends these only when changed.
  const start = g ? 'keep' : 'unset';
  const [freeTraining, setFreeTraining] = useState(start);
  const [paidTraining, setPaidTraining] = useState(start);
  const [publication, setPublication] = useState(start);
  const [limit, setLimit] = useState(numberText(g?.limit_usd));
  const [reset, setReset] = useState(g?.reset_interval ?? '');
  const [byok, setByok] = useState(g?.include_byok_in_budgets ?? false);
  const [rpm, setRpm] = useState(numberText(g?.rpm_limit));
  const [tpm, setTpm] = useState(numberText(g?.tpm_limit));
  const [concurrency, setConcurrency] = useState(numberText(g?.concurrency_limit));
  const [builtins, setBuiltins] = useState<Record<string, { action: Action | ''; apply_to: ApplyTo }>>(() =>
    Object.fromEntries(
      BUILTINS.map(({ slug }) => {
        const f = g?.content_filter_builtins?.find((b) => b.slug === slug);
        return [
          slug,
          { action: (f?.action as Action) ?? '', apply_to: (f?.apply_to as ApplyTo) ?? 'request' },
        ];
      }),
    ),
  );
  const [custom, setCustom] = useState<Custom[]>(
    () =>
      g?.content_filters?.map((f) => ({
        pattern: f.pattern,
        action: f.action as Action,
        label: f.label ?? null,
        apply_to: (f.apply_to as ApplyTo) ?? 'request',
      })) ?? [],
  );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const chosen = BUILTINS.flatMap(({ slug }) => {
      const b = builtins[slug];
      return b?.action ? [{ slug, action: b.action, apply_to: b.apply_to }] : [];
    });
    const filters = custom.filter((f) => f.pattern.trim() !== '');
    props.onSubmit({
      name: name.trim(),
      description: description.trim() || null,
      allowed_models: parseList(allowedModels),
      ignored_models: parseList(ignoredModels),
      allowed_providers: parseList(allowedProviders),
      ignored_providers: parseList(ignoredProviders),
      allowed_data_regions: regions,
      ...Object.fromEntries(VENDORS.map((v) => [`enforce_zdr_${v}`, zdr[v]])),
      ...flag('enable_free_model_training', freeTraining),
      ...flag('enable_paid_model_training', paidTraining),
      ...flag('enable_free_model_publication', publication),
      limit_usd: numberOrNull(limit),
      reset_interval: (reset || null) as GuardrailBody['reset_interval'],
      include_byok_in_budgets: byok,
      rpm_limit: numberOrNull(rpm),
      tpm_limit: numberOrNull(tpm),
      concurrency_limit: numberOrNull(concurrency),
      content_filter_builtins: chosen.length ? chosen : null,
      content_filters: filters.length ? filters : null,
    });
  };
  const whole = { type: 'number', min: '1', step: '1', hint: 'Empty: none' } as const;
  const region = (r: Region) => regions?.includes(r) ?? false;
  const toggleRegion = (r: Region, on: boolean) => {
    const next = REGIONS.filter((x) => (x === r ? on : region(x)));
    setRegions(next.length ? next : null);
  };

  return (
    <form className="guardrail-form" onSubmit={submit} aria-label={g ? `Edit ${g.name}` : 'New guardrail'}>
      <fieldset>
        <legend>Name</legend>
        <div className="form-row">
          <Field label="Name" name="name" required value={name} onChange={(e) => setName(e.target.value)} />
          <Field
            label="Description"
            name="description"
            value={description}
            onChange={(e) => setDescription(e.target.value)}
          />
        </div>
      </fieldset>
      <fieldset>
        <legend>Models and providers</legend>
        <p className="hint">
          Separate entries with commas. Wildcards: <code>anthropic/*</code>. An empty allow list allows
          everything.
        </p>
        <div className="form-row">
          <Field
            label="Allowed models"
            name="allowed_models"
            value={allowedModels}
            onChange={(e) => setAllowedModels(e.target.value)}
          />
          <Field
            label="Ignored models"
            name="ignored_models"
            value={ignoredModels}
            onChange={(e) => setIgnoredModels(e.target.value)}
          />
          <Field
            label="Allowed providers"
            name="allowed_providers"
            value={allowedProviders}
            onChange={(e) => setAllowedProviders(e.target.value)}
          />
          <Field
            label="Ignored providers"
            name="ignored_providers"
            value={ignoredProviders}
            onChange={(e) => setIgnoredProviders(e.target.value)}
          />
        </div>
      </fieldset>
      <fieldset>
        <legend>Data policy</legend>
        <div className="form-row">
          {REGIONS.map((r) => (
            <CheckField
              key={r}
              label={`Data region: ${r}`}
              checked={region(r)}
              onChange={(on) => toggleRegion(r, on)}
            />
          ))}
        </div>
        <p className="hint">No region ticked: any region.</p>
        <div className="form-row">
          {VENDORS.map((v) => (
            <CheckField
              key={v}
              label={`Zero data retention for ${v} models`}
              checked={!!zdr[v]}
              onChange={(on) => setZdr({ ...zdr, [v]: on })}
            />
          ))}
        </div>
        <div className="form-row">
          <SelectField
            label="Providers that train on prompts (free models)"
            name="enable_free_model_training"
            value={freeTraining}
            onChange={setFreeTraining}
            options={flagOptions(g)}
          />
          <SelectField
            label="Providers that train on prompts (paid models)"
            name="enable_paid_model_training"
            value={paidTraining}
            onChange={setPaidTraining}
            options={flagOptions(g)}
          />
          <SelectField
            label="Free models that publish prompts"
            name="enable_free_model_publication"
            value={publication}
            onChange={setPublication}
            options={flagOptions(g)}
          />
        </div>
      </fieldset>
      <fieldset>
        <legend>Limits</legend>
        <div className="form-row">
          <Field
            label="Budget (USD)"
            name="limit_usd"
            type="number"
            min="0"
            step="any"
            value={limit}
            onChange={(e) => setLimit(e.target.value)}
            hint="Needs a reset interval"
          />
          <SelectField
            label="Budget resets"
            name="reset_interval"
            value={reset}
            onChange={setReset}
            options={RESETS}
          />
          <CheckField label="BYOK spend counts against the budget" checked={byok} onChange={setByok} />
          <Field
            label="Requests per minute"
            name="rpm_limit"
            {...whole}
            value={rpm}
            onChange={(e) => setRpm(e.target.value)}
          />
          <Field
            label="Tokens per minute"
            name="tpm_limit"
            {...whole}
            value={tpm}
            onChange={(e) => setTpm(e.target.value)}
          />
          <Field
            label="Calls at once"
            name="concurrency_limit"
            {...whole}
            value={concurrency}
            onChange={(e) => setConcurrency(e.target.value)}
          />
        </div>
        <p className="hint">Rate limits count every key the guardrail covers, together.</p>
      </fieldset>
      <fieldset>
        <legend>Built-in content filters</legend>
        <div className="filter-grid">
          {BUILTINS.map(({ slug, label }) => {
            const b = builtins[slug] ?? { action: '' as const, apply_to: 'request' as const };
            return (
              <div className="form-row" key={slug}>
                <SelectField
                  label={`${label}: action`}
                  value={b.action}
                  onChange={(v) => setBuiltins({ ...builtins, [slug]: { ...b, action: v as Action | '' } })}
                  options={[{ value: '', label: 'Off' }, ...ACTIONS]}
                />
                <SelectField
                  label={`${label}: applies to`}
                  value={b.apply_to}
                  onChange={(v) => setBuiltins({ ...builtins, [slug]: { ...b, apply_to: v as ApplyTo } })}
                  options={APPLY_TO}
                />
              </div>
            );
          })}
        </div>
      </fieldset>
      <fieldset>
        <legend>Custom content filters</legend>
        <p className="hint">Regular expressions (RE2: no backreferences or lookaround).</p>
        {custom.map((f, i) => {
          const set = (patch: Partial<Custom>) =>
            setCustom(custom.map((c, j) => (j === i ? { ...c, ...patch } : c)));
          const n = i + 1;
          return (
            // biome-ignore lint/suspicious/noArrayIndexKey: rows have no identity but their position
            <div className="form-row" key={i}>
              <Field
                label={`Filter ${n}: pattern`}
                value={f.pattern}
                onChange={(e) => set({ pattern: e.target.value })}
                required
              />
              <Field
                label={`Filter ${n}: label`}
                value={f.label ?? ''}
                onChange={(e) => set({ label: e.target.value || null })}
              />
              <SelectField
                label={`Filter ${n}: action`}
                value={f.action}
                onChange={(v) => set({ action: v as Action })}
                options={ACTIONS}
              />
              <SelectField
                label={`Filter ${n}: applies to`}
                value={f.apply_to ?? 'request'}
                onChange={(v) => set({ apply_to: v as ApplyTo })}
                options={APPLY_TO}
              />
              <button
                type="button"
                className="danger"
                onClick={() => setCustom(custom.filter((_, j) => j !== i))}
              >
                Remove filter {n}
              </button>
            </div>
          );
        })}
        <button
          type="button"
          onClick={() =>
            setCustom([...custom, { pattern: '', action: 'redact', label: null, apply_to: 'request' }])
          }
        >
          Add a custom filter
        </button>
      </fieldset>
      <span className="actions">
        <button type="submit" disabled={props.pending}>
          {props.pending ? 'Saving…' : props.submitLabel}
        </button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </span>
    </form>
  );
}
