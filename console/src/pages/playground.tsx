import { useQuery } from '@tanstack/react-query';
import { type FormEvent, type KeyboardEvent, useEffect, useId, useRef, useState } from 'react';
import { call, dataApi } from '../api/client';
import { ApiKeyGate } from '../components/api-key-gate';
import { ErrorBanner } from '../components/error-banner';
import { Field, SelectField } from '../components/field';
import { Page } from '../components/page';
import { type AnswerMeta, type ChatMessage, type ChatRequest, streamChat } from './playground/stream';

interface Turn extends ChatMessage {
  meta?: AnswerMeta;
}

/** The sorts the gateway takes (`provider.sort`). */
type Sort = Extract<NonNullable<NonNullable<ChatRequest['provider']>['sort']>, string>;

const SORTS = [
  { value: '', label: 'Default (the catalog order)' },
  { value: 'price', label: 'Cheapest first' },
  { value: 'throughput', label: 'Fastest output first' },
  { value: 'latency', label: 'Lowest latency first' },
];

/** "a, b ,c" → ['a','b','c']; empty → undefined (the preference is not sent). */
function list(text: string): string[] | undefined {
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : undefined;
}

/** Chat with any model the session's API key may use, streamed, with the gateway's view of each answer. */
export function PlaygroundPage() {
  return (
    <Page title="Playground">
      <ApiKeyGate>
        <Playground />
      </ApiKeyGate>
    </Page>
  );
}

function Playground() {
  const models = useQuery({
    queryKey: ['data', 'models'],
    queryFn: () => call(dataApi.GET('/models', { params: { query: { limit: 1000 } } })),
  });
  const [model, setModel] = useState('');
  const [system, setSystem] = useState('');
  const [temperature, setTemperature] = useState('');
  const [maxTokens, setMaxTokens] = useState('');
  const [order, setOrder] = useState('');
  const [only, setOnly] = useState('');
  const [ignore, setIgnore] = useState('');
  const [sort, setSort] = useState<Sort | ''>('');
  const [allowFallbacks, setAllowFallbacks] = useState(true);
  const [turns, setTurns] = useState<Turn[]>([]);
  const [input, setInput] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [streaming, setStreaming] = useState<AbortController | null>(null);
  const stopRef = useRef<HTMLButtonElement>(null);
  const inputRef = useRef<HTMLTextAreaElement>(null);

  const chatModels = (models.data?.data ?? []).filter(
    (m) => !(m as { kind?: string }).kind || (m as { kind?: string }).kind === 'chat',
  );
  useEffect(() => {
    if (!model && chatModels[0]) setModel(chatModels[0].id);
  }, [model, chatModels]);
  useEffect(() => () => streaming?.abort(), [streaming]);

  const send = async (e?: FormEvent) => {
    e?.preventDefault();
    const text = input.trim();
    if (!text || !model || streaming) return;
    const history: Turn[] = [...turns, { role: 'user', content: text }];
    const messages: ChatMessage[] = [
      ...(system.trim() ? [{ role: 'system' as const, content: system.trim() }] : []),
      ...history.map(({ role, content }) => ({ role, content })),
    ];
    const provider = {
      ...(list(order) ? { order: list(order) } : {}),
      ...(list(only) ? { only: list(only) } : {}),
      ...(list(ignore) ? { ignore: list(ignore) } : {}),
      ...(sort ? { sort } : {}),
      ...(allowFallbacks ? {} : { allow_fallbacks: false }),
    };
    const body: ChatRequest = {
      model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      ...(temperature.trim() ? { temperature: Number(temperature) } : {}),
      ...(maxTokens.trim() ? { max_tokens: Number(maxTokens) } : {}),
      ...(Object.keys(provider).length ? { provider } : {}),
    };
    const controller = new AbortController();
    setStreaming(controller);
    setError(null);
    setInput('');
    setTurns([...history, { role: 'assistant', content: '' }]);
    // The answer being written is always the last turn.
    const update = (change: (t: Turn) => Turn) =>
      setTurns((all) => [...all.slice(0, -1), change(all[all.length - 1] as Turn)]);
    try {
      await streamChat(
        body,
        controller.signal,
        (piece) => update((t) => ({ ...t, content: t.content + piece })),
        (meta) => update((t) => ({ ...t, meta })),
      );
    } catch (err) {
      setError(err);
      // A refused question is not part of the conversation: it goes back into the box.
      setTurns((all) => {
        const last = all[all.length - 1];
        if (last?.role === 'assistant' && last.content === '') {
          setInput(text);
          return all.slice(0, -2);
        }
        return all;
      });
    } finally {
      setStreaming(null);
      inputRef.current?.focus();
    }
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    // Enter sends, Shift+Enter is a new line (as in most chat boxes).
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      void send();
    }
  };

  return (
    <>
      <ErrorBanner error={models.error} />
      <section aria-labelledby="settings" className="playground-settings">
        <h2 id="settings">Settings</h2>
        <div className="form-row">
          <SelectField
            label="Model"
            name="model"
            value={model}
            onChange={setModel}
            options={chatModels.map((m) => ({ value: m.id, label: m.id }))}
          />
          <Field
            label="Temperature"
            name="temperature"
            type="number"
            min="0"
            max="2"
            step="0.1"
            value={temperature}
            onChange={(e) => setTemperature(e.target.value)}
            hint="Empty: the model's default"
          />
          <Field
            label="Max tokens"
            name="max_tokens"
            type="number"
            min="1"
            step="1"
            value={maxTokens}
            onChange={(e) => setMaxTokens(e.target.value)}
            hint="Empty: no limit"
          />
        </div>
        <TextArea label="System prompt" name="system" value={system} onChange={setSystem} rows={2} />
        <fieldset className="form-row">
          <legend>Provider preferences</legend>
          <Field
            label="Order"
            name="order"
            value={order}
            onChange={(e) => setOrder(e.target.value)}
            hint="Provider slugs to try first, comma-separated"
          />
          <Field
            label="Only"
            name="only"
            value={only}
            onChange={(e) => setOnly(e.target.value)}
            hint="Use only these providers"
          />
          <Field
            label="Ignore"
            name="ignore"
            value={ignore}
            onChange={(e) => setIgnore(e.target.value)}
            hint="Never use these providers"
          />
          <SelectField
            label="Sort"
            name="sort"
            value={sort}
            onChange={(v) => setSort(v as Sort | '')}
            options={SORTS}
          />
          <div className="field checkbox">
            <label>
              <input
                type="checkbox"
                name="allow_fallbacks"
                checked={allowFallbacks}
                onChange={(e) => setAllowFallbacks(e.target.checked)}
              />{' '}
              Allow fallbacks to other providers
            </label>
          </div>
        </fieldset>
      </section>

      <section aria-labelledby="conversation">
        <div className="page-head">
          <h2 id="conversation">Conversation</h2>
          <button type="button" onClick={() => setTurns([])} disabled={!!streaming || turns.length === 0}>
            New conversation
          </button>
        </div>
        <ol className="chat" aria-live="polite">
          {turns.length === 0 && <li className="hint">No messages yet: ask something below.</li>}
          {turns.map((t, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: turns are only appended or cleared
            <li key={i} className={`turn turn-${t.role}`}>
              <strong>{t.role === 'user' ? 'You' : 'Model'}</strong>
              <div className="turn-text">{t.content || (streaming && i === turns.length - 1 ? '…' : '')}</div>
              {t.meta && <Meta meta={t.meta} />}
            </li>
          ))}
        </ol>
        <ErrorBanner error={error} onDismiss={() => setError(null)} />
        <form onSubmit={send} className="chat-input">
          <TextArea
            label="Message"
            name="message"
            value={input}
            onChange={setInput}
            onKeyDown={onKey}
            rows={3}
            textareaRef={inputRef}
            hint="Enter sends, Shift+Enter starts a new line"
          />
          <span className="actions">
            <button type="submit" disabled={!!streaming || !model || input.trim() === ''}>
              Send
            </button>
            <button
              type="button"
              ref={stopRef}
              className="danger"
              disabled={!streaming}
              onClick={() => streaming?.abort()}
            >
              Stop
            </button>
          </span>
        </form>
      </section>
    </>
  );
}

const usd = (n: number) => `$${n.toFixed(n !== 0 && n < 0.01 ? 6 : 4)}`;

/** The gateway's facts about one answer. */
function Meta({ meta }: { meta: AnswerMeta }) {
  const parts: [string, string][] = [
    ['Provider', meta.provider ?? '—'],
    ['Generation', meta.generationId ?? '—'],
    ['First token', meta.ttfbMs === null ? '—' : `${meta.ttfbMs} ms`],
    ['Total', meta.totalMs === null ? '…' : `${meta.totalMs} ms`],
    [
      'Tokens',
      meta.promptTokens === null ? '—' : `${meta.promptTokens} in, ${meta.completionTokens ?? 0} out`,
    ],
    ['Cost', meta.cost === null ? '—' : usd(meta.cost)],
  ];
  if (meta.finishReason === 'stopped') parts.push(['Status', 'stopped']);
  return (
    <dl className="answer-meta">
      {parts.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd data-meta={k.toLowerCase().replace(' ', '-')}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

function TextArea(props: {
  label: string;
  name: string;
  value: string;
  onChange: (v: string) => void;
  onKeyDown?: (e: KeyboardEvent<HTMLTextAreaElement>) => void;
  rows: number;
  hint?: string;
  textareaRef?: React.Ref<HTMLTextAreaElement>;
}) {
  const id = useId();
  return (
    <div className="field field-wide">
      <label htmlFor={id}>{props.label}</label>
      <textarea
        id={id}
        ref={props.textareaRef}
        name={props.name}
        rows={props.rows}
        value={props.value}
        onChange={(e) => props.onChange(e.target.value)}
        onKeyDown={props.onKeyDown}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
      />
      {props.hint && (
        <small id={`${id}-hint`} className="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}
