import { useQuery } from '@tanstack/react-query';
import { useDeferredValue, useMemo, useState } from 'react';
import { api, call } from '../api/client';
import { ErrorBanner } from '../components/error-banner';
import { Field } from '../components/field';
import { Page } from '../components/page';
import { Table } from '../components/table';

const fetchModels = () => call(api.GET('/models', { params: { query: { limit: 1000 } } }));
type Model = Awaited<ReturnType<typeof fetchModels>>['data'][number];

/** A per-token price string (USD) as dollars per million tokens. */
export function perMillion(price: string | undefined): string {
  const n = Number(price);
  if (!price || !Number.isFinite(n)) return '—';
  if (n === 0) return 'free';
  return `$${(n * 1_000_000).toFixed(n * 1_000_000 < 1 ? 3 : 2)}`;
}

function matches(m: Model, words: string[]): boolean {
  const text = [m.id, m.name, ...m.providers.map((p) => p.slug)].join(' ').toLowerCase();
  return words.every((w) => text.includes(w));
}

/** The model catalog (GET /models) with prices, providers and context lengths, searchable. */
export function ModelsPage() {
  const [search, setSearch] = useState('');
  const deferred = useDeferredValue(search);
  const models = useQuery({
    queryKey: ['models'],
    queryFn: fetchModels,
  });
  const shown = useMemo(() => {
    const words = deferred.toLowerCase().split(/\s+/).filter(Boolean);
    return (models.data?.data ?? []).filter((m) => matches(m, words));
  }, [models.data, deferred]);

  return (
    <Page title="Models">
      <ErrorBanner error={models.error} />
      <div className="toolbar">
        <Field
          label="Search models"
          type="search"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
          placeholder="id, name or provider"
          hint={models.data ? `${shown.length} of ${models.data.data.length} models` : undefined}
        />
      </div>
      {models.isPending ? (
        <p>Loading…</p>
      ) : (
        <Table
          caption="Model catalog (prices per million tokens)"
          rows={shown}
          rowKey={(m) => m.id}
          empty="No model matches the search."
          columns={[
            {
              header: 'Model',
              cell: (m) => (
                <>
                  <code>{m.id}</code>
                  <div className="hint">{m.name}</div>
                </>
              ),
            },
            { header: 'Providers', cell: (m) => m.providers.map((p) => p.slug).join(', ') || '—' },
            {
              header: 'Context',
              numeric: true,
              cell: (m) => (m.context_length === null ? '—' : m.context_length.toLocaleString()),
            },
            {
              header: 'Input',
              numeric: true,
              cell: (m) => (m.pricing_known ? perMillion(m.pricing.prompt) : 'unknown'),
            },
            {
              header: 'Output',
              numeric: true,
              cell: (m) => (m.pricing_known ? perMillion(m.pricing.completion) : 'unknown'),
            },
          ]}
        />
      )}
    </Page>
  );
}
